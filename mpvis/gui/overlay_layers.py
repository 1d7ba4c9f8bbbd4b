"""The diagram's overlays: cones, ghost lines, wait-for cycles, race marks.

An :class:`~mpvis.scene.overlay.Overlay` (Qt-free: events, segments, a colour)
is drawn by a pair of graphics items, a :class:`~mpvis.gui.layers.LineLayer`
for its lines and a :class:`~mpvis.gui.layers.SymbolLayer` for the rings
around its highlighted events, stacked by the overlay's ``z``.
:class:`OverlayLayers` keeps them by name for
:meth:`~mpvis.gui.diagram.DiagramView.set_overlay` and
:meth:`~mpvis.gui.diagram.DiagramView.clear_overlay`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from mpvis.gui.layers import LineLayer, SymbolLayer
from mpvis.gui.symbol_art import ring_pixmap
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport
from mpvis.scene.overlay import Overlay, arrowheads, dim_mask, overlay_geometry


def pen(color: str, width: float, dashed: bool = False, alpha: int = 255) -> QtGui.QPen:
    """A cosmetic pen (its width in screen pixels at every zoom)."""
    c = QtGui.QColor(color)
    c.setAlpha(alpha)
    p = QtGui.QPen(c)
    p.setWidthF(width)
    p.setCosmetic(True)
    if dashed:
        p.setStyle(QtCore.Qt.PenStyle.DashLine)
    return p


class OverlayItems:
    """The graphics items of one overlay: its lines and its rings."""

    def __init__(self, ov: Overlay, plot: pg.PlotItem) -> None:
        self.lines = LineLayer(pen(ov.color, ov.width, ov.dashed))
        self.marks = SymbolLayer([ring_pixmap(ov.color, 22)])
        layers: list[pg.GraphicsObject] = [self.lines, self.marks]
        for i, item in enumerate(layers):
            item.setZValue(20 + ov.z * 2 + i)
            plot.addItem(item, ignoreBounds=True)

    def remove(self, plot: pg.PlotItem) -> None:
        plot.removeItem(self.lines)
        plot.removeItem(self.marks)


class OverlayLayers:
    """The overlays of one plot by name, and their graphics items."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self._plot = plot
        self.overlays: dict[str, Overlay] = {}
        #: the graphics items of each overlay (tests count their segments)
        self.items: dict[str, OverlayItems] = {}

    def set(self, name: str, overlay: Overlay) -> None:
        """Show ``overlay`` under ``name``, replacing any of that name (its items are
        kept when only the pen changes)."""
        old = self.overlays.get(name)
        if name in self.items and old is not None and old.color == overlay.color \
                and old.z == overlay.z:
            self.items[name].lines.set_pen(pen(overlay.color, overlay.width, overlay.dashed))
        else:
            if name in self.items:
                self.items.pop(name).remove(self._plot)
            self.items[name] = OverlayItems(overlay, self._plot)
        self.overlays[name] = overlay

    def clear(self, name: str) -> None:
        """Remove the overlay ``name`` (nothing if there is none)."""
        self.overlays.pop(name, None)
        items = self.items.pop(name, None)
        if items is not None:
            items.remove(self._plot)

    def legend(self) -> list[tuple[str, str, bool]]:
        """``(label, color, dashed)`` of the labelled overlays, by ``z``."""
        shown = sorted(self.overlays.values(), key=lambda o: o.z)
        return [(o.label, o.color, o.dashed) for o in shown if o.label]

    def faded(self, count: int) -> npt.NDArray[np.bool_] | None:
        """Events faded by any overlay (:func:`~mpvis.scene.overlay.dim_mask`)."""
        if not self.overlays:
            return None
        return dim_mask(sorted(self.overlays.values(), key=lambda o: o.z), count)

    def draw(self, lay: Layout, logical: bool, view: Viewport) -> None:
        """Update every overlay's items for ``view`` (arrowheads are sized in pixels)."""
        for name, ov in self.overlays.items():
            geo = overlay_geometry(ov, lay, logical)
            items = self.items[name]
            poly = geo.polyline_xy
            poly_seg = np.column_stack([poly[:-1], poly[1:]]) if len(poly) > 1 else np.zeros((0, 4))
            heads = np.zeros((0, 4))
            if ov.arrows and len(geo.segments_xy):
                heads = arrowheads(geo.segments_xy, view.px_per_x, view.px_per_y)
            items.lines.set_segments(np.concatenate([geo.segments_xy, poly_seg, heads]))
            items.marks.set_points(geo.highlight_xy, np.zeros(len(geo.highlight_xy), np.int8))
