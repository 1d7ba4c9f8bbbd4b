"""Level of detail against a brute-force oracle: nothing visible is lost to the eye."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.scene.lod import Viewport, visible_events, visible_segments


def _data(seed: int, n: int, rows: int, classes: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.random(n) * 100
    y = rng.integers(-1, rows, n).astype(float)  # -1: hidden row
    cls = rng.integers(0, classes, n).astype(np.int8)
    x[rng.random(n) < 0.05] = np.nan
    return x, y, cls


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(0, 3000),
    budget=st.integers(0, 500),
    x0=st.floats(-10, 90),
    w=st.floats(0.5, 120),
    width=st.integers(50, 2000),
)
def test_visible_events_oracle(
    *, seed: int, n: int, budget: int, x0: float, w: float, width: int
) -> None:
    rows, classes = 6, 5
    x, y, cls = _data(seed, n, rows, classes)
    view = Viewport(x0, x0 + w, -0.5, rows - 0.5, width, 400)
    got = visible_events(
        x, y, cls, view, n_classes=classes, budget=budget, bucket_px=3, margin_px=0
    )
    inside = (x >= view.x0) & (x <= view.x1) & (y >= 0)
    expected = np.flatnonzero(inside)
    assert set(got.tolist()) <= set(expected.tolist())
    if len(expected) <= budget:
        assert got.tolist() == expected.tolist()
    else:
        # every (row, class, 3-pixel bucket) that holds a visible event keeps one
        nb = int(width / 3) + 1

        def keys(idx: np.ndarray) -> set[tuple[int, int, int]]:
            px = np.clip(((x[idx] - view.x0) * (nb / w)).astype(int), 0, nb - 1)
            return set(
                zip(y[idx].astype(int).tolist(), cls[idx].tolist(), px.tolist(), strict=True)
            )

        assert keys(got) == keys(expected)
        assert len(got) == len(keys(expected))  # one each: bounded by the viewport


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 2000), budget=st.integers(0, 300))
def test_visible_segments_oracle(seed: int, n: int, budget: int) -> None:
    rng = np.random.default_rng(seed)
    x0, x1 = rng.random(n) * 100, rng.random(n) * 100
    y0, y1 = rng.integers(-1, 5, n).astype(float), rng.integers(-1, 5, n).astype(float)
    view = Viewport(20, 60, -0.5, 4.5, 800, 300)
    got = visible_segments(x0, y0, x1, y1, view, budget=budget)
    meets = (np.fmax(x0, x1) >= 20) & (np.fmin(x0, x1) <= 60) & (y0 >= 0) & (y1 >= 0)
    expected = np.flatnonzero(meets)
    assert set(got.tolist()) <= set(expected.tolist())
    if len(expected) <= budget:
        assert got.tolist() == expected.tolist()
    else:
        assert 0 < len(got) <= len(expected)
        pairs = set(zip(y0[expected].tolist(), y1[expected].tolist(), strict=True))
        assert set(zip(y0[got].tolist(), y1[got].tolist(), strict=True)) == pairs


def test_decimation_is_bounded_by_the_viewport_not_the_data() -> None:
    x, y, cls = _data(1, 1_000_000, 64, 16)
    view = Viewport(0, 100, -0.5, 63.5, 1600, 900)
    got = visible_events(x, y, cls, view, n_classes=16, budget=20_000)
    assert len(got) <= 64 * 16 * (1600 // 3 + 2)
    assert len(got) < 1_000_000 / 2
