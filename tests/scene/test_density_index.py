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
from mpvis.scene.density_index import DensityIndex, column_edges
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

    def held() -> tuple[int, int]:
        """Bytes the columns hold, and bytes their values (and sums) need."""
        need = 0
        for cols, per in ((index.points, 8), (index.begins, 16), (index.ends, 16)):
            need += per * sum(cols.size(i) for i in range(4 * (3 if per == 8 else 2)))
        return index.points.nbytes() + index.begins.nbytes() + index.ends.nbytes(), need

    for _ in grow(m, lay, recs, [700, 900]):
        index.update()
        if not m.input_ended:
            got, need = held()
            assert got > need  # room to grow
    got, need = held()
    assert m.input_ended and got == need
    lo, hi = lay.bounds(False)
    want = activity_density(lay, False, lo, hi, 97)
    grid = index.grid(lo, hi, 97)
    assert np.array_equal(grid.events, want.events)
    assert np.allclose(grid.shares, want.shares, atol=1e-5)


def _column(cols: _cdensity.Columns, i: int) -> tuple[Any, Any]:
    values, sums = cols.column(i)
    return (np.frombuffer(values, dtype=np.float64),
            None if sums is None else np.frombuffer(sums, dtype=np.float64))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.floats(-1e6, 1e6)), max_size=30),
                min_size=1, max_size=8),
       st.booleans())
def test_columns_take_values_in_order_or_re_sort_and_keep_their_sums(
        adds: list[list[tuple[int, float]]], sums: bool) -> None:
    """``Columns.add`` against lists kept with NumPy: each column's new values
    sorted and appended, the column re-sorted when they start below its last
    value, the prefix sums from the first changed value on its sum there plus a
    running sum (the same floats); ``trim`` keeps every value."""
    cols = _cdensity.Columns(4, sums)
    want: list[Any] = [np.zeros(0) for _ in range(4)]
    want_sums: list[Any] = [np.zeros(1) for _ in range(4)]
    for batch in adds:
        keys = np.array([k for k, _ in batch], dtype=np.int64)
        values = np.array([v for _, v in batch], dtype=np.float64)
        cols.add(keys, values)
        for c in range(4):
            new = np.sort(values[keys == c])
            if not len(new):
                continue
            old = want[c]
            first = len(old)
            col = np.concatenate([old, new])
            if len(old) and new[0] < old[-1]:
                col.sort()
                first = 0
            want[c] = col
            want_sums[c] = np.concatenate(
                [want_sums[c][: first + 1], want_sums[c][first] + np.cumsum(col[first:])])
    for trimmed in (False, True):
        if trimmed:
            cols.trim()
        for c in range(4):
            values, got_sums = _column(cols, c)
            assert cols.size(c) == len(values)
            assert values.tobytes() == want[c].tobytes()
            if sums:
                assert got_sums is not None and got_sums.tobytes() == want_sums[c].tobytes()
            else:
                assert got_sums is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(-50, 50), max_size=40), min_size=1, max_size=4),
    st.lists(st.integers(-60, 60), min_size=1, max_size=30),
    st.floats(0.1, 10.0),
    st.booleans(),
)
def test_the_c_fill_counts_and_covers_as_numpy_searches_do(
        columns: list[list[int]], cuts: list[int], scale: float, folded: bool) -> None:
    """``_cdensity.fill``'s gallop along the edges against ``np.searchsorted``:
    repeated values and edges, values on an edge, edges outside the values,
    ranks sharing a row."""
    edges = np.sort(np.array(cuts, dtype=np.float64) / 4)
    width = len(edges) - 1
    if width < 1:
        return
    nranks = len(columns)
    rows = np.arange(nranks, dtype=np.int64) // (2 if folded else 1)
    nrows = int(rows.max()) + 1
    events = np.zeros((nrows, width), dtype=np.int64)
    shares = np.zeros((nrows, width, 5), dtype=np.float64)
    want_e, want_s = events.copy(), shares.copy()
    points = _cdensity.Columns(nranks * 3, False)
    begins, ends = _cdensity.Columns(nranks * 2, True), _cdensity.Columns(nranks * 2, True)
    for r, col in enumerate(columns):
        v = np.array(col, dtype=np.float64) / 4
        a = r % 3  # the rank's events of one point activity, its intervals blocked
        points.add(np.full(len(v), r * 3 + a, dtype=np.int64), v)
        begins.add(np.full(len(v), r * 2 + 1, dtype=np.int64), v)
        ends.add(np.full(len(v), r * 2 + 1, dtype=np.int64), v + 0.5)
        v = np.sort(v)
        row = rows[r]
        c = np.diff(np.searchsorted(v, edges))
        want_e[row] += c
        want_s[row, :, a] += c
        b, e = v, v + 0.5
        sb, se = _column(begins, r * 2 + 1)[1], _column(ends, r * 2 + 1)[1]
        ca, cb = np.searchsorted(b, edges), np.searchsorted(e, edges)
        f = (ca * edges - sb[ca]) - (cb * edges - se[cb])
        cover = np.diff(f) * scale
        cover[cover < 1e-6] = 0.0
        want_s[row, :, 4] += cover
    _cdensity.fill(points, begins, ends, rows, np.array([0, 1, 2]), np.array([3, 4]), edges,
                   scale, 1e-6, events, shares)
    assert np.array_equal(events, want_e)
    assert shares.tobytes() == want_s.tobytes()


def test_bad_arguments_are_refused_and_nothing_is_written() -> None:
    edges = np.linspace(0.0, 1.0, 5)
    points = _cdensity.Columns(3, False)
    begins, ends = _cdensity.Columns(2, True), _cdensity.Columns(2, True)
    points.add(np.array([0, 2]), np.array([0.5, 0.25]))
    begins.add(np.array([1]), np.array([0.1]))
    ends.add(np.array([1]), np.array([0.6]))
    events, shares = np.zeros((2, 4), dtype=np.int64), np.zeros((2, 4, 5))
    ok = [points, begins, ends, np.array([0]), np.array([0, 1, 2]), np.array([3, 4]), edges,
          1.0, 1e-6, events, shares]
    bad: list[tuple[int, Any, type[Exception], str]] = [
        (0, begins, ValueError, "fewer columns"),  # 2 point columns, 3 needed
        (1, points, ValueError, "without sums"),
        (3, np.array([0, 0]), ValueError, "fewer columns"),
        (3, np.array([0.0]), TypeError, "format"),
        (4, np.array([0, 1, 5]), ValueError, "activity 5 out of range"),
        (5, np.array([-1, 4]), ValueError, "activity -1 out of range"),
        (6, edges[:3], ValueError, "width + 1 edges"),
        (6, edges.astype(np.float32), TypeError, "format"),
        (9, events.astype(np.int32), TypeError, "format"),
        (9, events[:, ::2], ValueError, "contiguous"),
        (10, shares[:1], ValueError, "(nrows, width, activities)"),
        (10, np.zeros((2, 4)), ValueError, "expected 3 dimensions"),
        (0, "points", TypeError, "Columns"),
    ]
    for at, value, error, text in bad:
        args = list(ok)
        args[at] = value
        with pytest.raises(error, match=re.escape(text)):
            _cdensity.fill(*args)
    assert not events.any() and not shares.any()
    _cdensity.fill(*ok)  # rows past the grid's are not drawn; the rest is
    assert events.sum() == 2 and shares[..., 4].sum() > 0
    for keys, values, error, text in [
        (np.array([3]), np.array([1.0]), ValueError, "key 3 out of range"),
        (np.array([-1]), np.array([1.0]), ValueError, "key -1 out of range"),
        (np.array([0]), np.array([np.nan]), ValueError, "NaN"),
        (np.array([0, 1]), np.array([1.0]), ValueError, "differ in length"),
        (np.array([0.0]), np.array([1.0]), TypeError, "format"),
    ]:
        with pytest.raises(error, match=re.escape(text)):
            points.add(keys, values)
    assert [points.size(i) for i in range(3)] == [1, 0, 1]
    with pytest.raises(IndexError):
        points.size(3)
    with pytest.raises(ValueError):
        points.counts(edges, 3, np.zeros((1, 3), dtype=np.int64))
