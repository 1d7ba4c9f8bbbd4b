"""The incremental density index against the pass over every event it replaces
(:func:`mpvis.scene.density.activity_density`, itself checked against a
brute-force oracle in ``test_density.py``)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene import _cdensity
from mpvis.scene.density import activity_density
from mpvis.scene.density_index import DensityIndex, _Sorted, column_edges
from mpvis.scene.layout import Layout
from mpvis.sim.synthetic import generate_records
from tests.scene.growing import grow


@settings(max_examples=30, deadline=None)
@given(
    st.tuples(st.integers(1, 6), st.integers(0, 10_000)),
    st.lists(st.integers(1, 900), min_size=1, max_size=6),
    st.booleans(),
    st.lists(st.tuples(st.floats(-0.1, 1.0), st.floats(0.001, 1.2), st.integers(1, 300)),
             min_size=1, max_size=4),
    st.booleans(),
)
def test_grids_from_the_index_are_activity_density_at_every_step_of_a_growing_model(
        trace: tuple[int, int], cuts: list[int], logical: bool,
        views: list[tuple[float, float, int]], folded: bool) -> None:
    ranks, seed = trace  # a synthetic trace of that many ranks, from that seed
    recs = list(generate_records(1_500, ranks, seed=seed))
    m = ModelManager(make_header(ranks, program="synthetic.py"))
    lay = Layout(m)
    index = DensityIndex(lay, logical)
    rows = (np.arange(ranks, dtype=np.int64) // 2) if folded else None
    for _ in grow(m, lay, recs, cuts):
        index.update()
        lo, hi = lay.bounds(logical)
        for start, share, width in views:
            x0 = lo + start * (hi - lo)
            x1 = x0 + share * (hi - lo)
            want = activity_density(lay, logical, x0, x1, width, row_of_rank=rows)
            got = index.grid(x0, x1, width, rows)
            assert np.array_equal(got.events, want.events)
            assert np.allclose(got.shares, want.shares, atol=1e-5)
        x, ranks = np.array(lay.x(logical)), np.array(lay.ranks)  # copies: the model grows
        edges = np.linspace(lo, hi, 37)
        counts = index.counts(edges)
        for r in range(ranks.max(initial=-1) + 1):
            assert np.array_equal(counts[r], np.histogram(x[ranks == r], edges)[0])


@given(st.floats(-1e6, 1e6).filter(lambda v: abs(v) > 1e-100), st.floats(1e-3, 1e9),
       st.integers(1, 2_000))
def test_column_edges_split_floats_as_the_binning_does(x0: float, scale: float,
                                                        width: int) -> None:
    # (near x0 = 0, x - x0 underflows to zero below the smallest normal float:
    # the edge of column 0 is then some subnormal below zero, events never are)
    edges = column_edges(x0, scale, width)
    c = np.arange(width + 1, dtype=np.float64)
    assert np.all((edges - x0) * scale >= c)
    assert np.all((np.nextafter(edges, -np.inf) - x0) * scale < c)


def test_ranks_fold_alike_from_the_index_and_from_a_pass_over_the_events() -> None:
    from mpvis.scene.density import fold_ranks

    m = ModelManager(make_header(64, program="synthetic.py"))
    m.add_batch(list(generate_records(20_000, 64, seed=5)))
    m.finish()
    lay = Layout(m)
    lay.update()
    index = DensityIndex(lay, False)
    index.update()
    want = fold_ranks(lay, False, max_groups=12)
    assert len(want) > 1
    assert fold_ranks(lay, False, max_groups=12, grid_of=index.grid) == want


def test_the_columns_are_trimmed_once_the_input_ended_and_give_the_same_grids() -> None:
    """While the model grows the columns keep room to grow (by a quarter); once
    its input ended and every event is in, none is kept, and the grids are those
    of the columns with room."""
    recs = list(generate_records(3_000, 4, seed=2))
    m = ModelManager(make_header(4, program="synthetic.py"))
    lay = Layout(m)
    index = DensityIndex(lay, False)
    def cols() -> list[Any]:
        return [c for r in (*index.points, *index.begins, *index.ends) for c in r]

    for _ in grow(m, lay, recs, [700, 900]):
        index.update()
        if not m.input_ended:
            assert any(len(c.values) > c.n for c in cols())  # room to grow
    assert m.input_ended and all(len(c.values) == c.n for c in cols())
    assert all(c.sums is None or len(c.sums) == c.n + 1 for c in cols())
    lo, hi = lay.bounds(False)
    want = activity_density(lay, False, lo, hi, 97)
    got = index.grid(lo, hi, 97)
    assert np.array_equal(got.events, want.events)
    assert np.allclose(got.shares, want.shares, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6), max_size=40), min_size=1, max_size=8),
       st.booleans(), st.booleans())
def test_a_trimmed_column_keeps_its_values_and_sums_in_place_or_by_a_copy(
        adds: list[list[float]], sums: bool, held: bool) -> None:
    """``_Sorted.trim`` shrinks the column's arrays in place (no other holder) or
    copies them (a view of them held elsewhere, which stays as it was)."""
    col = _Sorted(sums)
    for new in adds:
        col.add(np.array(new, dtype=np.float64))
    want = np.sort(np.concatenate([np.array(a, dtype=np.float64) for a in adds]))
    view = col.values[:] if held else None
    before = None if view is None else view.copy()
    col.trim()
    assert len(col.values) == col.n == len(want)
    assert np.array_equal(col.values, want)
    if sums:
        assert col.sums is not None and len(col.sums) == col.n + 1
        assert np.allclose(col.sums, np.concatenate([[0.0], np.cumsum(want)]))
    if view is not None:
        assert np.array_equal(view, before)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(-50, 50), max_size=40), min_size=1, max_size=4),
    st.lists(st.integers(-60, 60), min_size=1, max_size=30),
    st.floats(0.1, 10.0),
)
def test_the_c_fill_counts_and_covers_as_numpy_searches_do(
        columns: list[list[int]], cuts: list[int], scale: float) -> None:
    """``_cdensity.fill``'s gallop along the edges against ``np.searchsorted``:
    repeated values and edges, values on an edge, edges outside the values."""
    edges = np.sort(np.array(cuts, dtype=np.float64) / 4)
    width = len(edges) - 1
    if width < 1:
        return
    nrows = len(columns)
    events = np.zeros((nrows, width), dtype=np.int64)
    shares = np.zeros((nrows, width, 5), dtype=np.float64)
    want_e, want_s = events.copy(), shares.copy()
    sorted_cols = [np.sort(np.array(c, dtype=np.float64) / 4) for c in columns]
    points: list[tuple[int, int, object]] = [(row, row % 3, v)
                                             for row, v in enumerate(sorted_cols)]
    spans: list[tuple[int, int, Any, Any, Any, Any]] = []
    for row, v in enumerate(sorted_cols):
        b, e = v, v + 0.5  # intervals of half a unit from each value
        spans.append((row, 3, b, np.concatenate([[0.0], np.cumsum(b)]),
                      e, np.concatenate([[0.0], np.cumsum(e)])))
        c = np.diff(np.searchsorted(v, edges))
        want_e[row] += c
        want_s[row, :, row % 3] += c
        ca, cb = np.searchsorted(b, edges), np.searchsorted(e, edges)
        f = (ca * edges - spans[-1][3][ca]) - (cb * edges - spans[-1][5][cb])
        cover = np.diff(f) * scale
        cover[cover < 1e-6] = 0.0
        want_s[row, :, 3] += cover
    _cdensity.fill(points, spans, edges, scale, 1e-6, events, shares)
    assert np.array_equal(events, want_e)
    assert shares.tobytes() == want_s.tobytes()


def test_the_c_fill_refuses_what_it_cannot_read_and_writes_nothing_past_the_grid() -> None:
    edges = np.linspace(0.0, 1.0, 5)
    v, s = np.array([0.5]), np.array([0.0, 0.5])
    events, shares = np.zeros((2, 4), dtype=np.int64), np.zeros((2, 4, 5))
    bad: list[tuple[list[Any], list[Any], Any, Any, Any, type[Exception], str]] = [
        ([(2, 0, v)], [], edges, events, shares, ValueError, "out of range"),
        ([(0, 5, v)], [], edges, events, shares, ValueError, "out of range"),
        ([(-1, 0, v)], [], edges, events, shares, ValueError, "out of range"),
        ([(0, 0, v.astype(np.float32))], [], edges, events, shares, TypeError, "format"),
        ([(0, 0)], [], edges, events, shares, TypeError, "(row, activity, values)"),
        ([], [(0, 3, v, v, v, s)], edges, events, shares, ValueError, "one entry more"),
        ([], [(0, 3, v, s)], edges, events, shares, TypeError, "begin_sums"),
        ([], [], edges[:3], events, shares, ValueError, "width + 1 edges"),
        ([], [], edges, events.astype(np.int32), shares, TypeError, "format"),
        ([], [], edges, events, shares[:1], ValueError, "(nrows, width, activities)"),
        ([], [], edges, events[:, ::2], shares, ValueError, "contiguous"),
        ([], [], edges, events, np.zeros((2, 4, 5))[..., ::1].T, ValueError, ""),
    ]
    for points, spans, e, ev, sh, error, text in bad:
        with pytest.raises(error, match=re.escape(text) if text else None):
            _cdensity.fill(points, spans, e, 1.0, 1e-6, ev, sh)
    with pytest.raises(TypeError):
        _cdensity.fill((), [], edges, 1.0, 1e-6, events, shares)  # type: ignore[arg-type]
    assert not events.any() and not shares.any()
