"""The race list's rows as arrays (mpvis.gui.race_rows) against the objects they stand for."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.pipeline import Analyses
from mpvis.gui.race_rows import ExactRows, RaceRows, ShownRows
from mpvis.model.classifier import VERDICTS
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records


@cache
def _analyses(seed: int) -> Analyses:
    a = Analyses.for_header(make_header(5, program="synthetic.py"))
    a.model.add_batch(list(generate_records(4_000, 5, seed=seed)))
    a.model.finish()
    return a


@settings(max_examples=60, deadline=None)
@given(seed=st.sampled_from([3, 11]),
       verdicts=st.sets(st.sampled_from(VERDICTS)),
       rank=st.one_of(st.none(), st.integers(0, 5)),
       situation=st.one_of(st.none(), st.sampled_from([3, 4, 7, 8, 11, 12, 15, 16])),
       scope=st.sampled_from([None, "adjacent", "nonadjacent"]),
       pick=st.integers(0, 10**6))
def test_filtered_rows_are_the_races_a_pass_over_the_objects_lets_through(
        *, seed: int, verdicts: set[str], rank: int | None, situation: int | None,
        scope: str | None, pick: int) -> None:
    m = _analyses(seed).model
    races = m.potential_races()
    assert races
    receive = None
    if pick % 3:  # the receives of a race, or of none
        r = races[pick % len(races)]
        receive = (r.rank, r.recvs[pick % 2]) if pick % 3 == 1 else (r.rank, 10**9)
    got = RaceRows(m.races.races, m.races.potential_rows()).where(
        verdicts, rank, situation, scope, receive)
    oracle = [r for r in races if r.verdict in verdicts
              and (rank is None or r.rank == rank)
              and (situation is None or r.situation == situation)
              and (scope is None or r.scope == scope)
              and (receive is None or (r.rank == receive[0] and receive[1] in r.recvs))]
    assert got.views() == oracle
    assert all(a is b for a, b in zip(got.views(), oracle, strict=True))  # the model's views


def test_exact_rows_are_the_detectors_races_made_when_asked_for() -> None:
    a = _analyses(11)
    assert a.exact is not None
    races = a.exact.races
    rows = ExactRows(a.exact.conflict_array())
    assert races and list(rows) == races and len(rows) == len(races)
    assert [rows[i] for i in range(len(rows))] == races and rows[-1] == races[-1]
    assert list(rows[2:5]) == races[2:5]
    r = races[len(races) // 2]
    assert list(rows.where(r.rank, None)) == [e for e in races if e.rank == r.rank]
    assert list(rows.where(None, (r.rank, r.recv))) == [
        e for e in races if (e.rank, e.recv) == (r.rank, r.recv)]
    assert rows.position(r) == races.index(r)
    assert rows.where(r.rank + 1000, None).position(r) == -1
    assert rows.conflicts.dtype == np.int32  # held narrow: the values fit
    wide = a.exact.conflict_array().copy()
    wide[0, 3] = 2**40  # a value that does not fit: kept int64, unchanged
    kept = ExactRows(wide)
    assert kept.conflicts.dtype == np.int64 and kept[0].s1[1] == 2**40


def test_shown_rows_list_the_three_parts_in_order_and_find_each_row() -> None:
    a = _analyses(3)
    m = a.model
    assert a.exact is not None
    races = m.potential_races()
    exact = a.exact.races
    extra = m.nonadjacent_races(races[0].rank, races[0].recvs[0]) or races[:1]
    part = RaceRows.of(races[::2])
    shown = ShownRows(part, extra, ExactRows(a.exact.conflict_array()))
    whole: list[Any] = [*races[::2], *extra, *exact]
    assert list(shown) == whole and len(shown) == len(whole)
    assert [shown[i] for i in range(len(shown))] == whole and shown[-1] == whole[-1]
    for i in (0, len(races[::2]) - 1, len(races[::2]), len(whole) - 1):
        assert shown.position(whole[i]) == i
    assert shown.position(races[1]) == -1 or races[1] in extra  # a row the part left out
    with pytest.raises(IndexError):
        shown[len(whole)]


def test_rows_of_races_of_several_tables_are_refused() -> None:
    m = _analyses(3).model
    races = m.potential_races()
    other = _analyses(11).model.potential_races()
    with pytest.raises(ValueError, match="several tables"):
        RaceRows.of([races[0], other[0]])
    assert len(RaceRows.of([])) == 0


@settings(max_examples=25, deadline=None)
@given(seed=st.sampled_from([3, 11]), picks=st.lists(st.integers(0, 10**6), max_size=40),
       muted=st.one_of(st.none(), st.integers(0, 4)), mute_at=st.integers(0, 30))
def test_the_notifier_shows_races_in_the_order_of_a_full_pass_over_the_waiting_ones(
        qapp: Any, *, seed: int, picks: list[int], muted: int | None, mute_at: int) -> None:
    """``next()`` no longer filters and searches every waiting race each time; it
    shows them in the order the full pass did: legitimate before unverified,
    the newest first, none the settings silence (a rank muted on the way)."""
    from PySide6 import QtWidgets

    from mpvis.gui.race_popup import RaceNotifier
    from mpvis.gui.race_settings import RaceSettings

    races = _analyses(seed).model.potential_races()
    offered = [races[p % len(races)] for p in picks] or races[:5]
    parent = QtWidgets.QWidget()  # (qapp: session-scoped, unlike qtbot)
    n = RaceNotifier(parent, docked=True)
    n.reset(RaceSettings())
    rank = {"legitimate": 2, "unverified": 1}
    oracle: list[Any] = []  # the first race worth notifying is shown at once
    first = next((r for r in offered if r.verdict in rank), None)
    for r in offered:
        n.offer(r, set())
        if r is not first and all(r is not o for o in oracle) and r.verdict in rank:
            oracle.append(r)
    shown, expected = [n.current], [first]
    for k in range(len(offered) + 1):
        if k == mute_at and muted is not None:
            n.settings.muted_ranks.add(muted)
        n.next()
        oracle = [r for r in oracle if r.verdict in rank and r.rank not in n.settings.muted_ranks]
        if not oracle:
            assert n.current is None and not n.pending
            break
        best = max(range(len(oracle)), key=lambda i: (rank[oracle[i].verdict], i))
        expected.append(oracle.pop(best))
        shown.append(n.current)
        assert len(n.pending) == len(oracle)
    assert all(a is b for a, b in zip(shown, expected, strict=True))
    parent.deleteLater()
