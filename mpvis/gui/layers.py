"""Two graphics items that draw a whole layer of the diagram in one call each.

pyqtgraph's pattern, kept minimal: a :class:`SymbolLayer` draws every event
symbol of the visible (already decimated) set with one
``drawPixmapFragments`` per symbol class from pre-rendered pixmaps; a
:class:`LineLayer` draws any number of segments with one ``drawLines``.  Both
map data to device pixels with numpy and never create a Python object per
event, so a frame costs a few milliseconds per 10,000 items.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt import internals
from PySide6 import QtCore, QtGui

from mpvis.gui.symbol_art import FADED_OPACITY, draw_symbol
from mpvis.scene.symbols import SymbolSpec

_EMPTY2 = np.zeros((0, 2))
#: Up to this many segments a layer is antialiased; denser sets are not (it costs twice).
SMOOTH_LINES = 400


def _device_xy(painter: QtGui.QPainter, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    tr = painter.transform()
    dx = tr.m11() * x + tr.m21() * y + tr.dx()
    dy = tr.m12() * x + tr.m22() * y + tr.dy()
    return dx, dy


class SymbolLayer(pg.GraphicsObject):  # type: ignore[misc]  # pyqtgraph has no type hints
    """Symbols at data points: ``cls[i]`` picks the pixmap of point ``i``.

    ``faded[i]`` (optional) draws point ``i`` with the faded pixmap of its class.
    """

    def __init__(
        self,
        pixmaps: list[QtGui.QPixmap],
        faded: list[QtGui.QPixmap] | None = None,
        specs: list[SymbolSpec] | None = None,
    ):
        super().__init__()
        self._specs = specs
        self._pixmaps = pixmaps
        self._faded = faded or pixmaps
        self._xy = _EMPTY2
        self._cls = np.zeros(0, dtype=np.int8)
        self._dim = np.zeros(0, dtype=bool)
        self._bounds = QtCore.QRectF(0, 0, 1, 1)
        self._frags = internals.PrimitiveArray(QtGui.QPainter.PixmapFragment, 10)

    def set_points(
        self,
        xy: np.ndarray,
        cls: np.ndarray,
        faded: np.ndarray | None = None,
        bounds: QtCore.QRectF | None = None,
    ) -> None:
        """Show these points; ``bounds`` (data rect holding them) saves computing it."""
        self.prepareGeometryChange()
        self._xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        self._cls = np.asarray(cls)
        self._dim = np.zeros(len(self._cls), bool) if faded is None else np.asarray(faded)
        self._bounds = bounds if bounds is not None else _bounds(self._xy)
        self.update()

    def point_count(self) -> int:
        return len(self._xy)

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if not len(self._xy):
            return
        dx, dy = _device_xy(painter, self._xy[:, 0], self._xy[:, 1])
        painter.save()
        painter.resetTransform()
        engine = painter.paintEngine()
        if (
            self._specs is not None
            and engine is not None
            and (engine.type() == QtGui.QPaintEngine.Type.SVG)
        ):  # an SVG export: symbols as vector paths, not embedded images
            for i in np.argsort(self._cls, kind="stable"):
                spec = self._specs[int(self._cls[i])]
                opacity = FADED_OPACITY if self._dim[i] else 1.0
                draw_symbol(painter, spec, QtCore.QPointF(dx[i], dy[i]), opacity)
            painter.restore()
            return
        any_dim = bool(self._dim.any())
        for faded in (True, False):
            if faded and not any_dim:
                continue
            sel_dim = self._dim if faded else ~self._dim
            if faded is False and any_dim and not sel_dim.any():
                continue
            pixmaps = self._faded if faded else self._pixmaps
            for c in np.unique(self._cls[sel_dim]):
                sel = sel_dim & (self._cls == c)
                pm = pixmaps[int(c)]
                n = int(sel.sum())
                self._frags.resize(n)
                f = self._frags.ndarray()
                f[:, 0] = dx[sel]
                f[:, 1] = dy[sel]
                f[:, 2:6] = (0, 0, pm.width(), pm.height())
                f[:, 6:10] = (1.0, 1.0, 0.0, 1.0)
                # under PySide6, drawargs() is (pointer to the fragment array, count)
                frags, count = self._frags.drawargs()
                painter.drawPixmapFragments(frags, count, pm)
        painter.restore()


class LineLayer(pg.GraphicsObject):  # type: ignore[misc]  # pyqtgraph has no type hints
    """Segments ``x0, y0, x1, y1`` (data coordinates) drawn with one pen.

    ``split`` (optional, boolean per segment) draws the flagged segments with
    ``alt_pen`` instead (used for faded lines).
    """

    def __init__(self, pen: QtGui.QPen, alt_pen: QtGui.QPen | None = None):
        super().__init__()
        self._pen = pen
        self._alt = alt_pen or pen
        self._seg = np.zeros((0, 4))
        self._split = np.zeros(0, dtype=bool)
        self._bounds = QtCore.QRectF(0, 0, 1, 1)
        self._lines = internals.PrimitiveArray(QtCore.QLineF, 4)

    def set_pen(self, pen: QtGui.QPen) -> None:
        self._pen = pen
        self.update()

    def set_segments(
        self, seg: np.ndarray, split: np.ndarray | None = None, bounds: QtCore.QRectF | None = None
    ) -> None:
        """Show these segments; ``bounds`` (data rect holding them) saves computing it."""
        self.prepareGeometryChange()
        self._seg = np.asarray(seg, dtype=np.float64).reshape(-1, 4)
        self._split = np.zeros(len(self._seg), bool) if split is None else np.asarray(split)
        self._bounds = (
            bounds
            if bounds is not None
            else _bounds(np.concatenate([self._seg[:, :2], self._seg[:, 2:]]))
        )
        self.update()

    def segment_count(self) -> int:
        return len(self._seg)

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if not len(self._seg):
            return
        s = self._seg
        x0, y0 = _device_xy(painter, s[:, 0], s[:, 1])
        x1, y1 = _device_xy(painter, s[:, 2], s[:, 3])
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, len(s) <= SMOOTH_LINES)
        any_alt = bool(self._split.any())
        for alt in (True, False):
            if alt and not any_alt:
                continue
            sel = self._split if alt else ~self._split
            n = int(sel.sum())
            if not n:
                continue
            painter.setPen(self._alt if alt else self._pen)
            self._lines.resize(n)
            f = self._lines.ndarray()
            f[:, 0], f[:, 1], f[:, 2], f[:, 3] = x0[sel], y0[sel], x1[sel], y1[sel]
            painter.drawLines(*self._lines.drawargs())
        painter.restore()


def _bounds(xy: np.ndarray) -> QtCore.QRectF:
    ok = xy[~np.isnan(xy).any(axis=1)] if len(xy) else xy
    if not len(ok):
        return QtCore.QRectF(0, 0, 0, 0)
    lo, hi = ok.min(axis=0), ok.max(axis=0)
    return QtCore.QRectF(lo[0], lo[1], max(hi[0] - lo[0], 1e-9), max(hi[1] - lo[1], 1e-9))
