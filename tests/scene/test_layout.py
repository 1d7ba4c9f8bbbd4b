"""Layouts: the logical layout respects happened-before whatever the arrival order."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol import records as rk
from mpvis.scene.layout import Layout
from mpvis.sim.api import scenario_names, simulate


def _shuffled_arrival(recs: list[dict], seed: int) -> list[dict]:
    """Interleave ranks randomly, keeping each rank's seq order (a legal arrival order)."""
    by_rank: dict[int, list[dict]] = {}
    for r in recs:
        by_rank.setdefault(r["rank"], []).append(r)
    rng = random.Random(seed)
    queues = {k: list(v) for k, v in by_rank.items()}
    out = []
    while queues:
        k = rng.choice(sorted(queues))
        out.append(queues[k].pop(0))
        if not queues[k]:
            del queues[k]
    return out


def _build(name: str, seed: int, order_seed: int, chunks: int) -> tuple[ModelManager, Layout]:
    header, recs = simulate(name, seed)
    recs = _shuffled_arrival(recs, order_seed)
    m = ModelManager(header)
    lay = Layout(m)
    step = max(1, len(recs) // chunks)
    for i in range(0, len(recs), step):
        m.add_batch(recs[i : i + step])
        lay.update()
    m.finish()
    lay.update()
    return m, lay


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(scenario_names()), order=st.integers(0, 1000), chunks=st.integers(1, 7))
def test_logical_layout_respects_happened_before(name: str, order: int, chunks: int) -> None:
    m, lay = _build(name, 0, order, chunks)
    x = lay.x_logical
    assert not np.isnan(x).any()
    # oracle: brute force over sampled pairs with the model's vector clocks
    rng = random.Random(order)
    n = m.event_count
    ranks, seqs = m.c_rank.view(), m.c_seq.view()
    for _ in range(300):
        a, b = rng.randrange(n), rng.randrange(n)
        ka, kb = (int(ranks[a]), int(seqs[a])), (int(ranks[b]), int(seqs[b]))
        if m.happened_before(ka, kb):
            assert x[a] < x[b], (ka, kb)
    kind, partner = m.c_kind.view(), m.c_partner.view()
    sends = np.flatnonzero((kind == rk.KIND_CODE[rk.SEND]) & (partner >= 0))
    assert (x[partner[sends]] > x[sends]).all()  # every message line goes forward


def test_real_layout_is_monotone_per_rank_and_rows_hide() -> None:
    m, lay = _build("showcase", 1, 3, 4)
    assert lay.has_time
    for r in range(m.nprocs):
        xs = lay.x_real[lay.rank_events(r)]
        assert (np.diff(xs) >= 0).all()
    lay.set_rows([3, 2, 1, 0], hidden={1})
    assert lay.rows[3] == 0 and lay.rows[2] == 1 and lay.rows[1] == -1 and lay.rows[0] == 2
    assert lay.rows[4] == -1  # not listed: hidden
    assert (lay.y[lay.rank_events(1)] == -1).all()
    assert lay.visible_rows == 3


def test_events_without_time_take_previous_x() -> None:
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 1}
    m = ModelManager(header)
    m.add_batch(
        [
            {"rank": 0, "seq": 0, "kind": "state", "vars": {}, "t": 10.0},
            {"rank": 0, "seq": 1, "kind": "state", "vars": {}},
            {"rank": 0, "seq": 2, "kind": "final", "t": 12.5},
        ]
    )
    lay = Layout(m)
    lay.update()
    assert list(lay.x_real) == [0.0, 0.0, 2.5]
    assert list(lay.x_logical) == [0.0, 1.0, 2.0]


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(scenario_names()), order=st.integers(0, 1000),
       chunks=st.integers(2, 7), first_use=st.integers(0, 7))
def test_logical_x_asked_for_late_are_those_kept_from_the_start(
        name: str, order: int, chunks: int, first_use: int) -> None:
    """A layout whose logical x are first asked for after ``first_use`` steps (none
    kept before: a trace looked at in real time) has, at every step from then
    on, the logical x of a layout that kept them from the start."""
    header, recs = simulate(name, 0)
    recs = _shuffled_arrival(recs, order)
    m = ModelManager(header)
    late, early = Layout(m), Layout(m)
    step = max(1, len(recs) // chunks)
    for k, i in enumerate(range(0, len(recs), step)):
        m.add_batch(recs[i : i + step])
        late.update()
        early.update()
        if k >= first_use:
            np.testing.assert_array_equal(late.x_logical, early.x_logical)
        elif k == 0:
            assert len(early.x_logical) == early.count  # kept from here on (no view held)
    m.finish()
    late.update()
    early.update()
    np.testing.assert_array_equal(late.x_logical, early.x_logical)
    assert late.bounds(True) == early.bounds(True)


def test_an_empty_layout_asked_for_its_logical_x_does_not_keep_them() -> None:
    """A window shows a trace before its first events (no wall clock seen yet: the
    logical axis is the one asked for): the logical x are kept only when asked
    for with events laid out, so a trace looked at in real time never holds them."""
    header, recs = simulate("wildcard_race", 0)
    m = ModelManager(header)
    lay, kept = Layout(m), Layout(m)
    assert len(lay.x(True)) == 0 and not lay.keeps_logical  # empty: nothing kept
    m.add_batch(recs)
    m.finish()
    for layout in (lay, kept):
        layout.update()
    assert lay.has_time and not lay.keeps_logical
    assert len(lay.x(False)) == lay.count and not lay.keeps_logical  # real time only
    np.testing.assert_array_equal(kept.x_logical, lay.x_logical)  # asked now: computed
    assert lay.keeps_logical


def test_rows_and_classes_grow_with_a_quarter_of_slack() -> None:
    """The rows' ``y`` and the classes grow by a quarter (never given back: a
    doubling left up to half of them unused), with the values of a layout built
    in one step."""
    header, recs = simulate("ring", 0)
    m = ModelManager(header)
    steps, whole = Layout(m), None
    for i in range(0, len(recs), 3):
        m.add_batch(recs[i: i + 3])
        steps.update()
        assert len(steps.y) == steps.count
    m.finish()
    steps.update()
    whole = Layout(m)
    whole.update()
    np.testing.assert_array_equal(steps.y, whole.y)
    np.testing.assert_array_equal(steps.cls, whole.cls)
    assert steps._y_cache is not None and len(steps._y_cache) <= 1.25 * steps.count + 1
