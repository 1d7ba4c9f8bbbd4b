"""Hit testing: which event is under the pointer (numpy, no Qt).

The pointer's row picks a rank; within a rank ``x`` never decreases (wall
clock ``t`` is monotone within a rank and so is the logical clock), so the
nearest event is found by binary search.  Distances are measured in pixels
so that a click means the same at every zoom level.
"""

from __future__ import annotations

import numpy as np

from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport


def event_at(
    layout: Layout, logical: bool, x: float, y: float, view: Viewport, *, radius_px: float = 8.0
) -> int | None:
    """Global index of the event nearest ``(x, y)`` within ``radius_px``, or None."""
    rows = layout.rows
    row = round(y)
    if abs(y - row) * view.px_per_y > radius_px + view.px_per_y * 0.5:
        return None
    ranks = np.flatnonzero(rows == row)
    if not len(ranks):
        return None
    events = layout.rank_events(int(ranks[0]))
    xs = layout.x(logical)[events]
    ok = ~np.isnan(xs)
    events, xs = events[ok], xs[ok]
    if not len(xs):
        return None
    i = int(np.searchsorted(xs, x))
    best: int | None = None
    best_d = radius_px
    for j in range(max(0, i - 2), min(len(xs), i + 2)):
        d = abs(xs[j] - x) * view.px_per_x
        if d <= best_d:
            best, best_d = int(events[j]), d
    return best


def events_in_box(
    layout: Layout, logical: bool, box: tuple[float, float, float, float]
) -> np.ndarray:
    """Global indices of the laid-out events inside the data rectangle ``(x0, x1, y0, y1)``."""
    x0, x1, y0, y1 = box
    x, y = layout.x(logical)[: layout.count], layout.y
    mask = (x >= min(x0, x1)) & (x <= max(x0, x1)) & (y >= min(y0, y1)) & (y <= max(y0, y1))
    return np.flatnonzero(mask & (y >= 0))
