"""What the diagram keeps as a model grows (rows, bounds, logical x, rank
extents, the message index) against the same computed from scratch on the
whole model: the oracle is a fresh layout and passes over every event."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.layout import Layout
from mpvis.scene.messages import message_index, rank_extents
from mpvis.sim.synthetic import generate_records
from tests.scene.growing import grow


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


@settings(max_examples=25, deadline=None)
@given(st.tuples(st.integers(1, 6), st.integers(0, 10_000)),
       st.lists(st.integers(1, 700), min_size=1, max_size=6), st.booleans())
def test_what_grows_with_the_model_is_what_a_fresh_pass_computes(
        trace: tuple[int, int], cuts: list[int], drop_times: bool) -> None:
    ranks, seed = trace
    recs = list(generate_records(1_200, ranks, seed=seed))
    if drop_times:  # some events without a time: they take their rank's previous x
        # (not a rank's first event: it would be put at the layout's origin, which
        # differs between a growing and a fresh layout)
        recs = [{k: v for k, v in r.items() if k != "t"} if i % 7 == 3 and r["seq"] > 0
                else r for i, r in enumerate(recs)]
    m = ModelManager(make_header(ranks, program="synthetic.py"))
    lay = Layout(m)
    msgs = None
    for _ in grow(m, lay, recs, cuts):
        _ = lay.y  # cached, then extended
        msgs = message_index(lay, msgs)
        fresh = Layout(m)
        fresh.update()
        assert _same(lay.y, fresh.y)
        for logical in (False, True):
            # real time counts from the first time seen: the fresh layout's origin
            # may be earlier (a constant shift, to rounding)
            shift = 0.0 if logical or not lay.has_time else lay.x(False)[0] - fresh.x(False)[0]
            assert np.allclose(lay.x(logical) - shift, fresh.x(logical), equal_nan=True)
            assert np.allclose(np.subtract(lay.bounds(logical), shift), fresh.bounds(logical))
            assert np.allclose(rank_extents(lay, logical) - shift,
                               _extents_by_scan(fresh, logical), equal_nan=True)
        want = message_index(fresh)
        assert msgs.send.tolist() == want.send.tolist()
        assert msgs.consume.tolist() == want.consume.tolist()
        assert msgs.unconsumed.tolist() == want.unconsumed.tolist()


def _extents_by_scan(lay: Layout, logical: bool) -> np.ndarray:
    """First and last non-NaN ``x`` of each rank's events in seq order."""
    x = lay.x(logical)
    out = np.full((lay.nprocs, 2), np.nan)
    for r in range(lay.nprocs):
        xs = [x[g] for g in lay.model.by_rank[r] if g < lay.count and not np.isnan(x[g])]
        if xs:
            out[r] = xs[0], xs[-1]
    return out
