"""Arrowheads on wait-for edges (issue 14, item 9)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mpvis.scene.overlay import arrowheads

coord = st.floats(-1e3, 1e3, allow_nan=False)


@given(st.lists(st.tuples(coord, coord, coord, coord), min_size=1, max_size=8),
       st.floats(0.01, 100), st.floats(0.01, 100))
def test_heads_end_at_the_segment_end_and_point_backwards(
    segs: list[tuple[float, float, float, float]], px: float, py: float
) -> None:
    seg = np.array(segs)
    heads = arrowheads(seg, px, py, size=10.0)
    moving = np.hypot((seg[:, 2] - seg[:, 0]) * px, (seg[:, 3] - seg[:, 1]) * py) > 0
    live = seg[moving]
    assert heads.shape == (2 * len(live), 4)
    for half in (heads[: len(live)], heads[len(live):]):
        assert np.allclose(half[:, :2], live[:, 2:])  # from the arrow's tip
        # each stroke is 10 px long and goes back along the segment (within the spread)
        bx, by = (half[:, 2] - half[:, 0]) * px, (half[:, 3] - half[:, 1]) * py
        assert np.allclose(np.hypot(bx, by), 10.0)
        dx, dy = (live[:, 2] - live[:, 0]) * px, (live[:, 3] - live[:, 1]) * py
        cos = -(bx * dx + by * dy) / (10.0 * np.hypot(dx, dy))
        assert np.allclose(cos, np.cos(0.45))

