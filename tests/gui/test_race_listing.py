"""The window's race listing (:mod:`mpvis.gui.race_listing`) on real windows and
models: what it lists and counts, and how it rations the lists of a trace loading."""

from __future__ import annotations

import numpy as np

from mpvis.gui import turns
from mpvis.model.manager import ModelManager
from tests.fixtures import simulated_model
from tests.gui.windows import shown_window, window_growing


def _potential_by_views(m: ModelManager) -> int:
    """Oracle: the potential races counted race object by race object."""
    table = m.races.races
    return sum(1 for r in table.views(np.arange(len(table), dtype=np.int64)) if r.potential)


def test_the_listing_counts_and_lists_the_potential_races_of_a_growing_run(qtbot) -> None:  # type: ignore[no-untyped-def]
    win, m, recs = window_growing(qtbot, nprocs=6, events=3000, seed=7, first=500)
    for start in range(500, len(recs), 500):
        m.add_batch(recs[start:start + 500])
        win.drain()
        qtbot.waitUntil(lambda: turns.pending() == 0, timeout=10_000)
    expected = _potential_by_views(m)
    assert expected > 0
    assert win.listing.flagged == expected
    assert f"{expected} receive pairs flagged" in win.status_label.text()
    listed = [(r.rank, r.recvs) for r in win.races.all_races()]  # before the filters
    assert sorted(listed) == sorted((r.rank, r.recvs) for r in m.potential_races())


def test_a_loading_trace_has_one_listing_pending_at_a_time(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
    m = simulated_model("wildcard_race")
    win.set_model(m)
    listing = win.listing
    ids = list(range(len(m.races.races)))
    assert ids
    assert listing.added_while_loading(ids)  # the first is due at once
    assert not listing.added_while_loading(ids)  # one pending: the next waits for it
    listing.list_while_loading()
    assert listing.flagged == _potential_by_views(m)


def test_a_new_model_starts_with_nothing_listed(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
    win.set_model(simulated_model("wildcard_race"))
    assert win.listing.flagged > 0
    assert win.listing.added_while_loading([0])  # stays pending until listed
    win.set_model(ModelManager(simulated_model("wildcard_race").header))
    assert win.listing.flagged == 0  # the empty model was listed anew
    assert win.listing.added_while_loading([])  # the pending listing went with the old model
