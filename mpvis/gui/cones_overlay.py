"""Causality cones on the space-time diagram (MPVisualizer, section 1).

Right-click an event and choose *Causality cone*: the cone (every event that
happened before it, :mod:`mpvis.analysis.cones`) is shaded -- a translucent
band along each rank's line from its first event to its frontier event --,
the events outside it are dimmed, and the frontier events are ringed and
joined by the frontier line, top to bottom.  *Future cone* does the same in
another colour for the events it happened before (the line joins the first
event of each rank in the future cone).  Both can be shown at once; *Clear
cones* removes them.

Built on the diagram's extension points (``docs/gui.md``): the rings, lines
and dimming are :class:`~mpvis.scene.overlay.Overlay` objects named
``cone.past``, ``cone.future`` and ``cone.dim``; the bands are one extra
graphics item (:class:`ConeBands`) that reads the diagram's current layout
at paint time, so they follow the real-time/logical switch and reordered or
hidden ranks.  :class:`ConeController` owns the state and tells listeners
(the predicate panel) through :attr:`ConeController.cone_changed`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui

from mpvis.analysis.cones import Cone, ConeIndex
from mpvis.gui.bands import RankBands
from mpvis.gui.diagram import DiagramView
from mpvis.model.manager import ModelManager
from mpvis.scene.overlay import Overlay, cone_mask

PAST_COLOR = "#1565c0"
FUTURE_COLOR = "#ef6c00"
PAST, FUTURE, DIM = "cone.past", "cone.future", "cone.dim"
class ConeBands(RankBands):
    """One band per rank over ``first[r] .. last[r]`` (global indices, -1: none);
    one ``drawRects``."""

    def __init__(self, diagram: DiagramView, color: str) -> None:
        super().__init__(diagram)
        fill = QtGui.QColor(color)
        fill.setAlpha(45)
        self._brush = QtGui.QBrush(fill)

    def set_intervals(self, first: np.ndarray, last: np.ndarray) -> None:
        self.set_bands(np.arange(len(first)), first, last)

    def rects(self) -> np.ndarray:
        """The bands as ``(k, 4)`` rows ``x0, y0, x1, y1`` in data coordinates."""
        return self.bands()[0]

    def paint(self, painter: QtGui.QPainter, *args: Any) -> None:
        r = self.rects()
        if not len(r):
            return
        rects = self.on_screen(painter, r)
        painter.save()
        painter.resetTransform()
        painter.setPen(QtCore.Qt.PenStyle.NoPen)
        painter.setBrush(self._brush)
        painter.drawRects(rects)
        painter.restore()


class ConeController(QtCore.QObject):
    """What cones are shown for which event, and their drawing."""

    #: the cone shown changed: a :class:`~mpvis.analysis.cones.Cone` or None
    cone_changed = QtCore.Signal(object)

    def __init__(self, diagram: DiagramView, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.diagram = diagram
        self.model: ModelManager | None = None
        self.index: ConeIndex | None = None
        self.origin = -1
        self.show_past = False
        self.show_future = False
        self.cone: Cone | None = None
        #: seconds the last :meth:`show` took to compute the cone and its overlays
        self.last_seconds = 0.0
        self.bands = {
            PAST: ConeBands(diagram, PAST_COLOR),
            FUTURE: ConeBands(diagram, FUTURE_COLOR),
        }
        plot = diagram.getPlotItem()
        for z, item in enumerate(self.bands.values()):
            item.setZValue(-2 + z * 0.5)  # under the process lines
            plot.addItem(item, ignoreBounds=True)
        self._rows = np.zeros(0)
        diagram.view_changed.connect(self._view_changed)

    # ------------------------------------------------------------ state
    def set_model(self, model: ModelManager | None) -> None:
        """A new model: forget the cones."""
        self.clear()
        self.model = model
        self.index = None if model is None else ConeIndex(model)

    def can_show(self, g: int) -> bool:
        m = self.model
        if m is None or not 0 <= g < m.event_count:
            return False
        return m.clock_ready(m.event_at(g).key)

    def show(self, g: int, *, past: bool | None = None, future: bool | None = None) -> None:
        """Show the cones of event ``g``; ``None`` keeps that cone's state when
        ``g`` is the event already shown, and hides it otherwise."""
        if not self.can_show(g):
            return
        same = g == self.origin
        self.show_past = bool(past if past is not None else same and self.show_past)
        self.show_future = bool(future if future is not None else same and self.show_future)
        self.origin = g
        self.refresh()
        self.fit()

    def fit(self) -> None:
        """Fit the shown cones in view: the event and the frontiers drawn."""
        m, cone = self.model, self.cone
        if m is None or cone is None or self.origin < 0:
            return
        marks = [self.origin]
        fronts = ((self.show_past, cone.frontier), (self.show_future, cone.future_frontier))
        for shown, front in fronts:
            if shown:
                marks += [m.gidx(r, f) for r, f in enumerate(front)
                          if f is not None and f < m.count(r)]
        self.diagram.fit_events(marks, margin=0.05)

    def clear(self) -> None:
        """Remove every cone mark from the diagram."""
        self.origin, self.show_past, self.show_future, self.cone = -1, False, False, None
        for name in (PAST, FUTURE, DIM):
            self.diagram.clear_overlay(name)
        for bands in self.bands.values():
            bands.set_intervals(np.zeros(0), np.zeros(0))
        self.cone_changed.emit(None)

    def refresh(self, *args: object) -> None:
        """Recompute after the model grew (the future cone may have too)."""
        m, index, g = self.model, self.index, self.origin
        if m is None or index is None or g < 0 or not (self.show_past or self.show_future):
            if self.cone is not None or g >= 0:
                self.clear()
            return
        t0 = time.perf_counter()
        self.cone = index.cone(*m.event_at(g).key)
        self._draw(m, self.cone)
        self.last_seconds = time.perf_counter() - t0
        self.cone_changed.emit(self.cone)

    # ------------------------------------------------------------ drawing
    def _draw(self, m: ModelManager, cone: Cone) -> None:
        d = self.diagram
        inside = cone_mask(m, cone, self.origin, past=self.show_past, future=self.show_future)
        name = f"{cone.event[0]}:{cone.event[1]}"
        if self.show_past:
            front = [(r, f) for r, f in enumerate(cone.frontier) if f is not None]
            d.set_overlay(PAST, self._line(m, front, PAST_COLOR, f"causality cone of {name}"))
            first = [m.gidx(r, 0) if k > 0 else -1 for r, k in enumerate(cone.past)]
            last = [m.gidx(r, k - 1) if k > 0 else -1 for r, k in enumerate(cone.past)]
            self.bands[PAST].set_intervals(np.array(first), np.array(last))
        else:
            d.clear_overlay(PAST)
            self.bands[PAST].set_intervals(np.zeros(0), np.zeros(0))
        if self.show_future:
            front = [(r, f) for r, f in enumerate(cone.future_frontier) if f is not None]
            d.set_overlay(FUTURE, self._line(m, front, FUTURE_COLOR, f"future cone of {name}"))
            first = [
                m.gidx(r, f) if f < n else -1
                for r, (f, n) in enumerate(zip(cone.future, cone.known, strict=True))
            ]
            last = [
                m.gidx(r, n - 1) if f < n else -1
                for r, (f, n) in enumerate(zip(cone.future, cone.known, strict=True))
            ]
            self.bands[FUTURE].set_intervals(np.array(first), np.array(last))
        else:
            d.clear_overlay(FUTURE)
            self.bands[FUTURE].set_intervals(np.zeros(0), np.zeros(0))
        n_in = int(inside.sum())
        if n_in <= len(inside) - n_in:
            d.set_overlay(DIM, Overlay(dim=np.flatnonzero(inside), dim_others=True, z=-1))
        else:
            d.set_overlay(DIM, Overlay(dim=np.flatnonzero(~inside), z=-1))

    def _line(
        self, m: ModelManager, events: list[tuple[int, int]], color: str, label: str
    ) -> Overlay:
        """Ring ``events`` and join them top to bottom in the current row order."""
        lay = self.diagram.layout_
        rows = lay.rows if lay is not None else np.arange(m.nprocs, dtype=float)
        self._rows = np.array(rows, copy=True)
        shown = sorted((rows[r], m.gidx(r, s)) for r, s in events if rows[r] >= 0)
        gs = np.array([g for _, g in shown], dtype=np.int64)
        return Overlay(highlight=gs, polyline=gs, color=color, width=2.0, label=label, z=1)

    def _view_changed(self) -> None:
        for bands in self.bands.values():
            bands.layout_changed()
        lay = self.diagram.layout_
        if lay is not None and self.cone is not None and not np.array_equal(lay.rows, self._rows):
            self.refresh()  # ranks reordered or hidden: redraw the frontier lines


def install(window: Any) -> ConeController:
    """The window's cone controller, created (with its context-menu entries) on
    first call.  ``window`` offers ``diagram``, ``model`` and the signals
    ``model_replaced`` and ``model_updated`` (:mod:`mpvis.gui.panels`)."""
    found = window.findChild(ConeController)
    if isinstance(found, ConeController):
        return found
    ctl = ConeController(window.diagram, window)
    ctl.set_model(window.model)
    window.model_replaced.connect(ctl.set_model)
    window.model_updated.connect(ctl.refresh)
    d = window.diagram
    d.add_event_action("Causality cone", lambda g: ctl.show(g, past=True), ctl.can_show)
    d.add_event_action("Future cone", lambda g: ctl.show(g, future=True), ctl.can_show)
    d.add_event_action("Both cones", lambda g: ctl.show(g, past=True, future=True), ctl.can_show)
    d.add_event_action("Clear cones", lambda g: ctl.clear(), lambda g: ctl.origin >= 0)
    return ctl
