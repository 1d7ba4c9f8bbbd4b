"""The overview (minimap): event density of the whole run, with the visible range.

A small image, one row per shown rank and a few hundred columns, counted from
the diagram's density index (binary searches per rank and column, not a pass
over the events: :mod:`mpvis.scene.density_index`) at each data update;
dragging the highlighted region scrolls the diagram.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from mpvis.gui.diagram import DiagramView

BINS = 400


class Overview(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph has no type hints
    """Density of events over time per rank, and the diagram's visible x range."""

    def __init__(self, diagram: DiagramView) -> None:
        super().__init__(background="w")
        self.diagram = diagram
        self.setFixedHeight(70)
        pi = self.getPlotItem()
        pi.hideAxis("left")
        pi.hideAxis("bottom")
        pi.setMenuEnabled(False)
        pi.hideButtons()
        pi.invertY(True)
        self.vb = pi.getViewBox()
        self.vb.setMouseEnabled(x=False, y=False)
        self.image = pg.ImageItem()
        self.image.setLookupTable(_lut())
        pi.addItem(self.image)
        self.region = pg.LinearRegionItem(
            brush=pg.mkBrush(30, 136, 229, 22), pen=pg.mkPen("#1565c0", width=2)
        )
        pi.addItem(self.region)
        self.region.sigRegionChanged.connect(self._region_moved)
        diagram.view_changed.connect(self.sync_region)
        self._syncing = False
        self._extent = (0.0, 1.0)

    def refresh(self) -> None:
        """Recompute the density image from the diagram's layout."""
        lay = self.diagram.layout_
        if lay is None or not lay.count:
            self.image.clear()
            return
        lo, hi = lay.bounds(self.diagram.logical)
        rows = max(lay.visible_rows, 1)
        index = self.diagram.density_index()  # per rank, events sorted by x
        if index is not None and hi > lo:
            per_rank = index.counts(np.linspace(lo, hi, BINS + 1))
            h = np.zeros((BINS, rows))
            for r, row in enumerate(lay.rows.astype(np.int64)):
                if 0 <= row < rows:
                    h[:, row] += per_rank[r]
        else:
            x = lay.x(self.diagram.logical)[: lay.count]
            y = lay.y
            ok = ~np.isnan(x) & (y >= 0)
            h = _histogram(x[ok], y[ok], lo, hi, rows)
        dens = np.log1p(h)
        self.image.setImage(dens, levels=(0.0, max(float(dens.max()), 1e-9)))
        self.image.setRect(QtCore.QRectF(lo, -0.5, hi - lo, rows))
        self._extent = (lo, hi)
        self.vb.setRange(xRange=(lo, hi), yRange=(-0.5, rows - 0.5), padding=0)
        self.sync_region()

    def sync_region(self) -> None:
        (x0, x1), _ = self.diagram.vb.viewRange()
        self._syncing = True
        try:
            self.region.setRegion((x0, x1))
        finally:
            self._syncing = False

    def _region_moved(self) -> None:
        if self._syncing:
            return
        x0, x1 = self.region.getRegion()
        self.diagram.follow = False
        self.diagram.zoom_x(x0, x1)


def _histogram(x: np.ndarray, y: np.ndarray, lo: float, hi: float, rows: int) -> np.ndarray:
    """Events per (``x`` bin of :data:`BINS` over ``[lo, hi]``, row), by one
    ``bincount`` (``histogram2d`` searched the bin edges: a second of the GUI
    thread per refresh of a 1M-event load)."""
    scale = BINS / (hi - lo) if hi > lo else 0.0  # one instant: its events in the first bin
    xb = np.clip(((x - lo) * scale).astype(np.int64), 0, BINS - 1)
    edges = np.linspace(lo, hi, BINS + 1)  # rounding: the bin is the one whose edges hold x
    xb -= x < edges[xb]
    xb += (x >= edges[xb + 1]) & (xb < BINS - 1)
    yb = np.floor(y + 0.5).astype(np.int64)
    keep = (x >= lo) & (x <= hi) & (yb >= 0) & (yb < rows)
    flat = np.bincount(xb[keep] * rows + yb[keep], minlength=BINS * rows)
    return flat.reshape(BINS, rows).astype(np.float64)


def _lut() -> np.ndarray:
    t = np.linspace(0, 1, 256)[:, None]
    white, blue = np.array([255, 255, 255]), np.array([21, 101, 192])
    lut = (white * (1 - t) + blue * t).astype(np.uint8)
    lut[0] = (255, 255, 255)  # no event: the widget's own white, not a grey box
    return lut
