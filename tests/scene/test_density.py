"""The zoomed-out view's density, matrix and folding against brute-force oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.density import (
    ACTIVITIES,
    BLOCKED,
    COLLECTIVE,
    OTHER,
    RECEIVING,
    SENDING,
    activity_density,
    density_rgba,
    fold_matrix,
    fold_ranks,
    message_matrix,
)
from mpvis.scene.layout import Layout
from mpvis.sim.synthetic import generate_records


def _layout(n: int, nprocs: int, seed: int) -> tuple[Layout, list[dict]]:
    recs = list(generate_records(n, nprocs, seed=seed))
    m = ModelManager(make_header(nprocs))
    m.add_batch([dict(r) for r in recs])
    m.finish()
    lay = Layout(m)
    lay.update()
    return lay, recs


def _oracle(lay: Layout, recs: list[dict], logical: bool, x0: float, x1: float, *, width: int,
            rows: list[int], nrows: int) -> tuple[np.ndarray, np.ndarray]:
    m = lay.model
    xs = lay.x(logical)
    x_of = {(r["rank"], r["seq"]): float(xs[m.gidx(r["rank"], r["seq"])]) for r in recs}
    scale = width / (x1 - x0)
    shares = np.zeros((nrows, width, len(ACTIVITIES)))
    events = np.zeros((nrows, width), dtype=np.int64)
    by_key = {(r["rank"], r["seq"]): r for r in recs}
    last_coll: dict[int, int] = {}

    def cover(row: int, act: int, a: float, b: float) -> None:
        a, b = min(max(a, 0.0), width), min(max(b, 0.0), width)
        for c in range(width):
            ov = min(b, c + 1) - max(a, c)
            if ov > 0:
                shares[row, c, act] += ov

    for r in sorted(recs, key=lambda r: (r["rank"], r["seq"])):
        row = rows[r["rank"]]
        if row < 0:
            continue
        px = (x_of[(r["rank"], r["seq"])] - x0) * scale
        if not math.isnan(px) and 0 <= px < width:
            c = int(px)
            events[row, c] += 1
            if r["kind"] == "send":
                shares[row, c, SENDING] += 1
            elif r["kind"] in ("recv", "consume"):
                shares[row, c, RECEIVING] += 0.5
            else:
                shares[row, c, OTHER] += 1
        if r["kind"] == "coll":
            last_coll[r["rank"]] = r["seq"]
        elif r["kind"] == "coll_exit" and r["rank"] in last_coll:
            a = (x_of[(r["rank"], last_coll[r["rank"]])] - x0) * scale
            cover(row, COLLECTIVE, a, px)
        elif r["kind"] == "consume":
            recv = by_key[(r["rank"], r["recv"])]
            if recv["blocking"]:
                cover(row, BLOCKED, (x_of[(r["rank"], r["recv"])] - x0) * scale, px)
    per_row = np.bincount([x for x in rows if x >= 0], minlength=nrows)
    shares[..., COLLECTIVE:] /= np.maximum(per_row, 1)[:, None, None]
    return shares, events


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 1000), nprocs=st.integers(2, 6), width=st.integers(1, 40),
       logical=st.booleans(), lo=st.floats(-0.2, 0.6), span=st.floats(0.05, 1.5),
       fold=st.booleans())
def test_density_matches_the_oracle(*, seed: int, nprocs: int, width: int, logical: bool,
                                    lo: float, span: float, fold: bool) -> None:
    lay, recs = _layout(300, nprocs, seed)
    xs = lay.x(logical)
    x_lo, x_hi = float(np.nanmin(xs)), float(np.nanmax(xs))
    x0 = x_lo + lo * (x_hi - x_lo)
    x1 = x0 + span * (x_hi - x_lo) + 1e-9
    rows = [r // 2 for r in range(nprocs)] if fold else list(range(nprocs))
    if nprocs > 2:
        rows[-1] = -1  # a hidden rank
    nrows = max(rows) + 1
    grid = activity_density(lay, logical, x0, x1, width,
                            row_of_rank=np.asarray(rows), nrows=nrows)
    shares, events = _oracle(lay, recs, logical, x0, x1, width=width, rows=rows, nrows=nrows)
    assert np.array_equal(grid.events, events)
    assert np.allclose(grid.shares, shares, atol=1e-4)
    # the same from only the events near the range (what the diagram passes)
    near = np.flatnonzero((xs >= x0 - 1e-9) & (xs <= x1))
    sub = activity_density(lay, logical, x0, x1, width, row_of_rank=np.asarray(rows),
                           nrows=nrows, ids=near)
    assert np.array_equal(sub.events, grid.events) and np.array_equal(sub.shares, grid.shares)


def test_dominant_and_colours() -> None:
    lay, _ = _layout(2000, 4, 3)
    x = lay.x(False)
    grid = activity_density(lay, False, float(np.nanmin(x)), float(np.nanmax(x)) + 1e-9, 50)
    dom = grid.dominant()
    assert dom.shape == (4, 50)
    w = grid.weights()
    busy = grid.events > 0
    assert (dom[busy] >= 0).all()
    # the dominant activity has the largest weight of its cell
    rows, cols = np.nonzero(dom >= 0)
    assert (w[rows, cols, dom[rows, cols]] >= w[rows, cols].max(axis=-1) - 1e-6).all()
    img = density_rgba(grid)
    assert img.shape == (4, 50, 4) and img.dtype == np.uint8
    assert (img[..., 3][dom < 0] == 0).all() and (img[..., 3][dom >= 0] == 255).all()


@pytest.mark.parametrize("logical", [False, True])
def test_message_matrix_counts_every_message(logical: bool) -> None:
    lay, recs = _layout(1500, 5, 7)
    mat = message_matrix(lay, logical)
    expected = np.zeros((5, 5), dtype=np.int64)
    for r in recs:
        if r["kind"] == "consume":
            expected[r["send"][0], r["rank"]] += 1
    assert np.array_equal(mat, expected)
    xs = lay.x(logical)
    mid = float(np.nanmedian(xs))
    first = message_matrix(lay, logical, -np.inf, mid)
    later = message_matrix(lay, logical, np.nextafter(mid, np.inf), np.inf)
    assert np.array_equal(first + later, mat)
    groups = np.array([0, 0, 1, 1, -1])
    folded = fold_matrix(mat, groups, 2)
    assert folded[0, 1] == mat[:2, 2:4].sum() and folded.sum() == mat[:4, :4].sum()


def test_fold_ranks_partitions_and_groups_alike() -> None:
    lay, _ = _layout(6000, 64, 1)
    groups = fold_ranks(lay, False, max_groups=12)
    assert 1 <= len(groups) <= 12
    assert sorted(r for g in groups for r in g) == list(range(64))
    assert [g[0] for g in groups] == sorted(g[0] for g in groups)
    assert fold_ranks(lay, False, max_groups=12) == groups  # deterministic
    assert fold_ranks(lay, False, max_groups=64) == [[r] for r in range(64)]


def test_empty_view() -> None:
    m = ModelManager(make_header(3))
    lay = Layout(m)
    lay.update()
    grid = activity_density(lay, False, 0.0, 1.0, 10)
    assert grid.events.sum() == 0 and (grid.dominant() == -1).all()
    assert message_matrix(lay, False).sum() == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(1, 40), st.booleans())
def test_dominant_and_weights_are_numpys_reductions_over_the_activities(
        seed: int, nrows: int, width: int, ties: bool) -> None:
    """:meth:`DensityGrid.dominant` and :meth:`DensityGrid.weights` reduce over the
    activities a column at a time: the same arrays as ``argmax``/``max``/``sum``
    over the last axis (the oracle), ties and empty cells included."""
    from mpvis.scene.density import DensityGrid

    rng = np.random.default_rng(seed)
    shares = rng.random((nrows, width, 5)).astype(np.float32)
    shares[..., :3] *= rng.integers(0, 50, (nrows, width, 3))  # counts
    if ties:  # equal activities, and cells where nothing happens
        shares[..., 1] = shares[..., 0]
        shares[rng.random((nrows, width)) < 0.3] = 0.0
    grid = DensityGrid(0.0, 1.0, shares, rng.integers(0, 9, (nrows, width)))
    s = shares
    waiting = np.clip(s[..., 3] + s[..., 4], 0.0, 1.0)
    total = s[..., :3].sum(axis=-1)
    free = np.where(total > 0, (1.0 - waiting) / np.maximum(total, 1e-30), 0.0)
    want = s.copy()
    want[..., :3] *= free[..., None]
    want[..., :3] += s[..., :3] * 1e-6
    w = grid.weights()
    assert w.dtype == want.dtype and np.array_equal(w, want)
    dom = np.argmax(w, axis=-1).astype(np.int8)
    dom[w.max(axis=-1) <= 0] = -1
    assert np.array_equal(grid.dominant(), dom)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                          st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0])),
                max_size=40))
def test_finite_span_is_the_min_and_max_of_the_finite_values(values: list[float]) -> None:
    from mpvis.scene.density import finite_span

    xs = np.array(values, dtype=np.float64)
    finite = xs[np.isfinite(xs)]
    want = (float(finite.min()), float(finite.max())) if len(finite) else None
    got = finite_span(xs)
    assert got == want
