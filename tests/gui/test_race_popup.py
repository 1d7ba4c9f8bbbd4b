"""The race notifier's waiting races as row ids (issue 16): offered in arrays,
picked and filtered from the model's race columns, against a plain list."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.pipeline import Analyses
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records

_RANK = {"legitimate": 2, "unverified": 1}


def _analyses(seed: int) -> Analyses:
    a = Analyses.for_header(make_header(5, program="synthetic.py"))
    a.model.add_batch(list(generate_records(4_000, 5, seed=seed)))
    a.model.finish()
    return a


def _notifier(qapp: Any) -> Any:
    from PySide6 import QtWidgets

    from mpvis.gui.race_popup import RaceNotifier
    from mpvis.gui.race_settings import RaceSettings

    parent = QtWidgets.QWidget()
    n = RaceNotifier(parent, docked=True)
    n.reset(RaceSettings())
    return n, parent


@settings(max_examples=25, deadline=None)
@given(seed=st.sampled_from([3, 11]), picks=st.lists(st.integers(0, 10**6), max_size=60),
       cuts=st.lists(st.integers(1, 20), max_size=6),
       muted=st.one_of(st.none(), st.integers(0, 4)))
def test_rows_offered_in_arrays_are_shown_in_the_order_of_a_list_of_the_races(
        qapp: Any, *, seed: int, picks: list[int], cuts: list[int], muted: int | None) -> None:
    """Rows offered in chunks (repeats among them) are queued in their first
    offer's order, none the settings silence; whenever none is shown the most
    relevant waiting one is: legitimate before unverified, the newest first."""
    a = _analyses(seed)
    table = a.model.races.races
    pot = a.model.races.potential_rows()
    rows = np.array([pot[p % len(pot)] for p in picks] or pot[:5], dtype=np.int64)
    n, parent = _notifier(qapp)
    if muted is not None:
        n.settings.muted_ranks.add(muted)

    def worth(r: int) -> bool:
        race = table[r]
        return race.verdict in _RANK and race.rank != muted

    def best(queue: list[int]) -> int:
        return max(range(len(queue)), key=lambda i: (_RANK[table[queue[i]].verdict], i))

    queue: list[int] = []  # the oracle: a plain list of rows
    current: int | None = None
    at = 0
    for cut in [*cuts, len(rows)]:
        chunk = rows[at: at + cut]
        at += cut
        n.offer_rows(table, chunk)
        for r in chunk.tolist():
            if worth(r) and r not in queue and r != current:
                queue.append(r)
        if current is None and queue:
            current = queue.pop(best(queue))
        assert (n.current.row if n.current is not None else None) == current
        assert [r.row for r in n.pending] == queue and n.waiting == len(queue)
        if at >= len(rows):
            break
    while current is not None:
        n.next()
        current = queue.pop(best(queue)) if queue else None
        assert (n.current.row if n.current is not None else None) == current
        assert n.waiting == len(queue)
    parent.deleteLater()


def test_waiting_races_make_no_view_and_a_mute_filters_them(qapp: Any) -> None:
    """Every potential race offered: no ``Race`` view is made but the shown
    one's (the model keeps a view once made); muting a rank drops its waiting
    races, asked race by race (views made for the question only)."""
    a = _analyses(5)
    table = a.model.races.races
    pot = a.model.races.potential_rows()
    n, parent = _notifier(qapp)
    assert n.offer_rows(table, pot) > 0
    assert len(table._views) == 1  # the race shown
    notify = [r for r in pot.tolist() if table[r].verdict in _RANK]  # (views: the oracle's)
    assert n.waiting == len(notify) - 1
    rank = n.current.rank
    n.settings.muted_ranks.add(rank)
    views = len(table._views)
    n.next()
    assert len(table._views) <= views + 1  # the next race shown
    assert n.current is None or n.current.rank != rank
    assert n.waiting + (n.current is not None) == sum(1 for r in notify if table[r].rank != rank)
    assert all(r.rank != rank for r in n.pending)
    parent.deleteLater()
