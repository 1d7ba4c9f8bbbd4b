"""Overlays: what other modules draw over the space-time diagram (Qt-free).

An :class:`Overlay` names events by their global index in the model, never
by coordinates, so it stays right when the user switches between the
real-time and the logical layout, reorders or hides ranks, or zooms.  The
diagram turns it into geometry at every frame (:func:`overlay_geometry`).

Uses it was designed for (see ``docs/gui.md``):

* a causality cone (MPVisualizer, section 1): ``dim`` = the events outside
  the cone, ``polyline`` = the frontier events top to bottom;
* exact-race ghost lines: ``segments`` = ``[(send, recv), ...]`` drawn dashed;
* a deadlock wait-for cycle: ``segments`` between the events where the blocked
  ranks stopped, ``highlight`` = those events;
* a selected race: ``highlight`` = both receives, ``segments`` = both messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from mpvis.scene.layout import Layout

if TYPE_CHECKING:
    from mpvis.analysis.cones import Cone
    from mpvis.model.manager import ModelManager

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _ints(values: object, shape: tuple[int, ...]) -> IntArray:
    a = np.asarray(values, dtype=np.int64)
    return a.reshape(shape) if a.size == 0 else a


@dataclass(frozen=True)
class Overlay:
    """Events to highlight or dim, and lines between events, in one style.

    * ``highlight``: global event indices drawn with a ring around them;
    * ``dim``: global event indices drawn faded (everything else stays normal);
      with ``dim_others=True`` it is the other way round: these stay normal and
      every other event is faded;
    * ``segments``: ``(k, 2)`` global indices, one line from the first event to
      the second;
    * ``polyline``: global indices joined in the given order (a frontier);
    * ``color`` (``#rrggbb``), ``width`` in pixels, ``dashed``; ``label`` is
      shown in the diagram's legend while the overlay is set;
    * ``z``: overlays are drawn in increasing ``z``;
    * ``arrows``: each segment ends in an arrowhead at its second event (a
      wait-for edge points at the rank waited for), :func:`arrowheads`.
    """

    highlight: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dim: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dim_others: bool = False
    segments: IntArray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    polyline: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    color: str = "#d62728"
    width: float = 2.0
    dashed: bool = False
    label: str = ""
    z: int = 0
    arrows: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "highlight", _ints(self.highlight, (0,)).ravel())
        object.__setattr__(self, "dim", _ints(self.dim, (0,)).ravel())
        object.__setattr__(self, "segments", _ints(self.segments, (0, 2)).reshape(-1, 2))
        object.__setattr__(self, "polyline", _ints(self.polyline, (0,)).ravel())


@dataclass(frozen=True)
class OverlayGeometry:
    """An overlay in data coordinates for one layout (NaN rows dropped)."""

    highlight_xy: FloatArray  # (k, 2)
    segments_xy: FloatArray  # (k, 4): x0, y0, x1, y1
    polyline_xy: FloatArray  # (k, 2)


def arrowheads(
    segments_xy: FloatArray, px_x: float, px_y: float, size: float = 10.0, spread: float = 0.45
) -> FloatArray:
    """Two short strokes at the end of each segment ``(x0, y0, x1, y1)``, as
    ``(2k, 4)`` segments in data coordinates.  ``px_x``/``px_y``: pixels per
    data unit, so the head is ``size`` pixels long whatever the zoom;
    ``spread``: half its opening angle, in radians.  Zero-length segments get
    none."""
    seg = np.asarray(segments_xy, dtype=float).reshape(-1, 4)
    dx = (seg[:, 2] - seg[:, 0]) * px_x
    dy = (seg[:, 3] - seg[:, 1]) * px_y
    length = np.hypot(dx, dy)
    seg, dx, dy, length = seg[length > 0], dx[length > 0], dy[length > 0], length[length > 0]
    ux, uy = dx / length, dy / length  # unit direction, in pixels
    out = []
    for sign in (1.0, -1.0):
        c, s = np.cos(spread), sign * np.sin(spread)
        bx, by = -(ux * c - uy * s) * size, -(ux * s + uy * c) * size  # rotated back
        out.append(np.column_stack([seg[:, 2], seg[:, 3],
                                    seg[:, 2] + bx / px_x, seg[:, 3] + by / px_y]))
    return np.concatenate(out) if out else np.zeros((0, 4))


def dim_mask(overlays: list[Overlay], count: int) -> npt.NDArray[np.bool_] | None:
    """Events faded by any overlay, as a boolean mask over ``count`` events (None: none)."""
    mask: npt.NDArray[np.bool_] | None = None
    for ov in overlays:
        if not len(ov.dim) and not ov.dim_others:
            continue
        d = np.zeros(count, dtype=bool)
        sel = ov.dim[(ov.dim >= 0) & (ov.dim < count)]
        d[sel] = True
        if ov.dim_others:
            d = ~d
        mask = d if mask is None else (mask | d)
    return mask


def cone_mask(m: ModelManager, cone: Cone, origin: int, *, past: bool, future: bool
              ) -> npt.NDArray[np.bool_]:
    """The events inside the shown cones of ``cone`` (its past and/or its
    future), and ``origin`` itself, as a boolean mask by global index: one
    vectorised pass over the model's rank and seq columns, redone as a live run
    grows."""
    ranks, seqs = m.c_rank.view(), m.c_seq.view()
    inside = np.zeros(len(ranks), dtype=bool)
    inside[origin] = True
    if past:
        inside |= cone.past_mask(ranks, seqs)
    if future:
        inside |= cone.future_mask(ranks, seqs)
    return inside


def overlay_geometry(ov: Overlay, layout: Layout, logical: bool) -> OverlayGeometry:
    """Coordinates of an overlay's marks in the current layout and rows."""
    x, y = layout.x(logical), layout.y
    n = layout.count

    def pts(g: IntArray) -> FloatArray:
        g = g[(g >= 0) & (g < n)]
        xy = np.column_stack([x[g], y[g]]).astype(np.float64) if len(g) else np.zeros((0, 2))
        out: FloatArray = xy[~np.isnan(xy[:, 0]) & (xy[:, 1] >= 0)]
        return out

    seg = ov.segments
    seg = seg[((seg >= 0) & (seg < n)).all(axis=1)]
    s_xy = np.column_stack([x[seg[:, 0]], y[seg[:, 0]], x[seg[:, 1]], y[seg[:, 1]]])
    s_xy = s_xy[~np.isnan(s_xy).any(axis=1) & (s_xy[:, 1] >= 0) & (s_xy[:, 3] >= 0)]
    poly = pts(ov.polyline)
    return OverlayGeometry(pts(ov.highlight), s_xy.reshape(-1, 4), poly)
