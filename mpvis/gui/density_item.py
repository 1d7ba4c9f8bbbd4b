"""The zoomed-out diagram: one graphics item drawing the activity density image.

When the viewport holds more events than it has pixels for
(:func:`mpvis.scene.density.is_dense`), the diagram hides symbols, message
lines and process lines and shows this item instead: every row's activity per
pixel column (:func:`mpvis.scene.density.activity_density`), coloured by what
dominates (:data:`mpvis.scene.density.ACTIVITY_COLOURS`), drawn as one
``QImage`` stretched over the visible rows.  Given the diagram's
:class:`~mpvis.scene.density_index.DensityIndex` (kept as the model grows), a
frame costs binary searches per rank and column, not a pass over the events.
Races, deadlocks and stopped ranks keep their own layers, drawn above it.
"""

from __future__ import annotations

import weakref

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from mpvis.scene.density import (
    IntArray,
    activity_density,
    density_rgba,
    event_activities,
    intervals,
)
from mpvis.scene.density_index import DensityIndex
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport

__all__ = ["DensityItem"]

#: Screen pixels per density column (1 is noisy where a column holds a few events).
COLUMN_PX = 2
#: Each row is drawn as a band of the middle 3 of 5 sub-rows: rows stay apart.
_SUBROWS = 5


class DensityItem(pg.GraphicsObject):  # type: ignore[misc]  # pyqtgraph has no type hints
    """The density image of the visible range; empty until :meth:`update_view`."""

    def __init__(self) -> None:
        super().__init__()
        self._image: QtGui.QImage | None = None
        self._rect = QtCore.QRectF(0, 0, 1, 1)
        self._spans: tuple[IntArray, IntArray, IntArray] | None = None
        self._spans_key: tuple[int, int] = (-1, -1)
        self._acts = np.zeros(0, dtype=np.int8)  # event_activities, extended as events come
        self._acts_of: weakref.ref[Layout] | None = None  # the layout they are of
        self._shown: tuple[object, ...] = ()  # what the image shows (update_view's key)

    def clear(self) -> None:
        """Draw nothing (the diagram shows symbols)."""
        if self._image is not None:
            self.prepareGeometryChange()
            self._image = None
            self.update()

    def update_view(self, layout: Layout, logical: bool, view: Viewport,
                    rows: IntArray | None = None, index: DensityIndex | None = None) -> None:
        """Compute the density of ``view``'s ``x`` range, one column per
        :data:`COLUMN_PX` pixels; ``rows[rank]``: the row of each rank's activity
        (folded groups share one), by default the layout's; ``index``: the
        layout's density index on this axis, up to date (without one, a pass over
        the events: :func:`activity_density`)."""
        if index is not None and (index.layout is not layout or index.logical != logical
                                  or index.done != layout.count):
            index = None
        rows = layout.rows.astype(np.int64) if rows is None else rows
        # the same events, axis, range and rows as the image shown: nothing to redo
        # (a redraw for a selection, an overlay or a frame index landing)
        shown = (id(layout), layout.count, logical, layout.logical_ready, view.x0, view.x1,
                 view.width_px, rows.tobytes())
        if self._image is not None and shown == self._shown:
            return
        self._shown = shown
        nrows = int(rows.max()) + 1 if len(rows) and rows.max() >= 0 else 0
        columns = max(view.width_px // COLUMN_PX, 1)
        if index is not None:
            grid = index.grid(view.x0, view.x1, columns, rows, nrows)
        else:
            self._keep_up(layout)
            grid = activity_density(layout, logical, view.x0, view.x1, columns,
                                    row_of_rank=rows, nrows=nrows, spans=self._spans,
                                    acts=self._acts)
        cells = density_rgba(grid)
        if cells.size == 0:
            self.clear()
            return
        banded = np.zeros((cells.shape[0], _SUBROWS, *cells.shape[1:]), dtype=np.uint8)
        banded[:, 1:_SUBROWS - 1] = cells[:, None]
        rgba = np.ascontiguousarray(banded.reshape(-1, *cells.shape[1:]))
        h, w = rgba.shape[:2]
        image = QtGui.QImage(rgba.data, w, h, 4 * w, QtGui.QImage.Format.Format_RGBA8888)
        self.prepareGeometryChange()
        self._image = image.copy()  # own the pixels (rgba is freed with this frame)
        # row r spans [r - 0.5, r + 0.5], its band [r - 0.3, r + 0.3]: where its symbols were
        self._rect = QtCore.QRectF(view.x0, -0.5, view.x1 - view.x0, float(h // _SUBROWS))
        self.update()

    def _keep_up(self, layout: Layout) -> None:
        """The intervals and activities of ``layout``'s events, for a frame without
        a density index (kept between frames while the layout does not grow)."""
        key = (id(layout), layout.count)
        if self._spans is None or self._spans_key != key:  # intervals: once per layout size
            self._spans, self._spans_key = intervals(layout), key
        if self._acts_of is None or self._acts_of() is not layout \
                or len(self._acts) > layout.count:
            self._acts, self._acts_of = np.zeros(0, dtype=np.int8), weakref.ref(layout)
        if len(self._acts) < layout.count:
            self._acts = np.concatenate([self._acts, event_activities(layout, len(self._acts))])

    def boundingRect(self) -> QtCore.QRectF:
        return QtCore.QRectF(self._rect)

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if self._image is None:
            return
        painter.setRenderHint(QtGui.QPainter.RenderHint.SmoothPixmapTransform, False)
        painter.drawImage(self._rect, self._image)
