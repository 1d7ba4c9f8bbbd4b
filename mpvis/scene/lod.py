"""Level of detail: what to draw for one viewport, whatever the trace size.

A frame must cost the same on a trace of a thousand events and of a million.
The viewport is cut into buckets a few pixels wide; when more than
``budget`` items are visible, only one representative per
(row, symbol class, bucket) is kept for events, and one per
(source row, destination row, bucket of the line's midpoint) for messages.
Dropping the others changes nothing a user can see: they would be drawn on
the same pixels.  Every step is a vectorised pass over the arrays (no sort),
so the cost is linear in the number of events with a small constant, and the
number of items handed to the painter is bounded by the viewport's size.
With ``max_items`` the buckets widen (doubling) until at most that many items
are left: painting cost, not only the count of pixels, sets the frame time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Below this many visible items nothing is decimated.
DEFAULT_BUDGET = 20_000
#: Upper bound on the scratch table used to pick one item per bucket.
_MAX_KEYS = 1 << 23
#: With ``max_items``, buckets double in width at most this many times.
_MAX_COARSENING = 8


@dataclass(frozen=True)
class Viewport:
    """The visible data rectangle and its size on screen in pixels."""

    x0: float
    x1: float
    y0: float
    y1: float
    width_px: int
    height_px: int

    @property
    def px_per_x(self) -> float:
        return self.width_px / max(self.x1 - self.x0, 1e-300)

    @property
    def px_per_y(self) -> float:
        return self.height_px / max(self.y1 - self.y0, 1e-300)


def _one_per_key(idx: IntArray, key: IntArray, nkeys: int) -> IntArray:
    """One element of ``idx`` per distinct ``key`` (keys in ``0..nkeys-1``), in index order."""
    table = np.full(nkeys, -1, dtype=np.int64)
    table[key] = idx
    kept = table[table >= 0]
    kept.sort()
    return kept


def _buckets(view: Viewport, bucket_px: float, other_keys: int) -> int:
    nb = max(1, int(view.width_px / bucket_px) + 1)
    return max(1, min(nb, _MAX_KEYS // max(other_keys, 1)))


def visible_events(
    x: FloatArray,
    y: FloatArray,
    cls: npt.NDArray[np.int8],
    view: Viewport,
    *,
    n_classes: int,
    bucket_px: float = 3.0,
    budget: int = DEFAULT_BUDGET,
    margin_px: float = 12.0,
    max_items: int | None = None,
) -> IntArray:
    """Indices of the events to draw: all visible ones, or one per bucket when too many.

    An event is visible when its row is shown (``y >= 0``), its ``x`` is laid out
    (not NaN) and it lies in the viewport widened by ``margin_px``.
    """
    mx = margin_px / view.px_per_x
    my = margin_px / view.px_per_y
    mask = (x >= view.x0 - mx) & (x <= view.x1 + mx) & (y >= 0)
    mask &= (y >= view.y0 - my) & (y <= view.y1 + my)
    idx = np.flatnonzero(mask)
    if len(idx) <= budget:
        return idx
    nrows = int(y[idx].max()) + 1
    base = y[idx].astype(np.int64) * n_classes + cls[idx]
    rel = (x[idx] - (view.x0 - mx)) / (view.x1 - view.x0 + 2 * mx)
    for _ in range(_MAX_COARSENING):
        nb = _buckets(view, bucket_px, nrows * n_classes)
        px = np.clip((rel * nb).astype(np.int64), 0, nb - 1)
        kept = _one_per_key(idx, base * nb + px, nrows * n_classes * nb)
        if max_items is None or len(kept) <= max_items:
            break
        bucket_px *= 2
    return kept


def visible_segments(
    x0: FloatArray,
    y0: FloatArray,
    x1: FloatArray,
    y1: FloatArray,
    view: Viewport,
    *,
    bucket_px: float = 2.0,
    budget: int = DEFAULT_BUDGET,
    max_items: int | None = None,
) -> IntArray:
    """Indices of the line segments ``(x0, y0) - (x1, y1)`` to draw for ``view``.

    A segment is visible when both ends are on shown rows (``y >= 0``), both
    ends are laid out, and its bounding box meets the viewport.  When more
    than ``budget`` are visible, one is kept per (start row, end row, bucket
    of the midpoint's ``x``).
    """
    lo_x, hi_x = np.fmin(x0, x1), np.fmax(x0, x1)
    lo_y, hi_y = np.fmin(y0, y1), np.fmax(y0, y1)
    mask = (hi_x >= view.x0) & (lo_x <= view.x1) & (hi_y >= view.y0) & (lo_y <= view.y1)
    mask &= (y0 >= 0) & (y1 >= 0)
    idx = np.flatnonzero(mask)
    if len(idx) <= budget:
        return idx
    nrows = int(max(y0[idx].max(), y1[idx].max())) + 1
    base = y0[idx].astype(np.int64) * nrows + y1[idx].astype(np.int64)
    rel = ((x0[idx] + x1[idx]) * 0.5 - view.x0) / (view.x1 - view.x0)
    for _ in range(_MAX_COARSENING):
        nb = _buckets(view, bucket_px, nrows * nrows)
        px = np.clip((rel * nb).astype(np.int64), 0, nb - 1)
        kept = _one_per_key(idx, base * nb + px, nrows * nrows * nb)
        if max_items is None or len(kept) <= max_items:
            break
        bucket_px *= 2
    return kept
