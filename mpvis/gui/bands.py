"""Shaded bands over stretches of ranks' rows: the geometry the causality cones
(:mod:`mpvis.gui.cones_overlay`) and the POEG subgroups
(:mod:`mpvis.gui.orderings_view`) share.

A band ``i`` covers rank ``rank[i]``'s row from event ``first[i]`` to event
``last[i]`` (global indices; -1: no band).  The geometry comes from the
diagram's layout at paint time, so a band follows the physical/logical switch
and a model that grows.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from mpvis.gui.diagram import DiagramView

#: half the height of a band, in rows
BAND_HALF = 0.28
#: horizontal margin of a band around its end events, in pixels
BAND_PAD = 7.0


class RankBands(pg.GraphicsObject):  # type: ignore[misc]  # pyqtgraph has no type hints
    """Bands over ``first[i] .. last[i]`` on ``rank[i]``'s row (subclasses paint)."""

    def __init__(self, diagram: DiagramView) -> None:
        super().__init__()
        self.diagram = diagram
        self.rank = np.zeros(0, dtype=np.int64)
        self.first = np.zeros(0, dtype=np.int64)
        self.last = np.zeros(0, dtype=np.int64)

    def set_bands(self, rank: object, first: object, last: object) -> None:
        """Replace the bands (three sequences of the same length)."""
        self.prepareGeometryChange()
        self.rank = np.asarray(rank, dtype=np.int64)
        self.first = np.asarray(first, dtype=np.int64)
        self.last = np.asarray(last, dtype=np.int64)
        self.update()

    def layout_changed(self) -> None:
        self.prepareGeometryChange()
        self.update()

    def bands(self) -> tuple[np.ndarray, np.ndarray]:
        """The drawable bands as ``(k, 4)`` rows ``x0, y0, x1, y1`` in data
        coordinates, and the index ``i`` of the band each row draws (bands whose
        events are not laid out, or whose rank has no row, are left out)."""
        lay = self.diagram.layout_
        if lay is None or not len(self.rank):
            return np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
        x = lay.x(self.diagram.logical)
        n = min(lay.count, len(x))
        f, la = self.first, self.last
        idx = np.flatnonzero((f >= 0) & (la >= 0) & (f < n) & (la < n))
        rows = lay.rows[self.rank[idx]]
        x0, x1 = x[f[idx]], x[la[idx]]
        keep = (rows >= 0) & ~np.isnan(x0) & ~np.isnan(x1)
        idx, rows, x0, x1 = idx[keep], rows[keep], x0[keep], x1[keep]
        return np.column_stack([x0, rows - BAND_HALF, x1, rows + BAND_HALF]), idx

    @staticmethod
    def on_screen(painter: QtGui.QPainter, r: np.ndarray) -> list[QtCore.QRectF]:
        """``r``'s rows mapped by the painter's (data) transform to pixel
        rectangles, padded by :data:`BAND_PAD`; the caller then resets the
        transform and draws them."""
        tr = painter.transform()
        out = []
        for x0, y0, x1, y1 in r:
            a, b = tr.map(QtCore.QPointF(x0, y0)), tr.map(QtCore.QPointF(x1, y1))
            out.append(QtCore.QRectF(a, b).normalized().adjusted(-BAND_PAD, 0, BAND_PAD, 0))
        return out

    def boundingRect(self) -> QtCore.QRectF:
        lay = self.diagram.layout_
        if lay is None or not lay.count:
            return QtCore.QRectF()
        x0, x1 = lay.bounds(self.diagram.logical)
        return QtCore.QRectF(x0 - 1, -1, max(x1 - x0, 1e-9) + 2, lay.nprocs + 2)
