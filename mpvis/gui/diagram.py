"""The space-time diagram widget (MPVisualizer's drawing area, paper section 2).

One :class:`~mpvis.gui.layers.SymbolLayer` for every event symbol, one
:class:`~mpvis.gui.layers.LineLayer` each for process lines, messages and
unconsumed messages, and a pair per overlay: never one graphics item per
event.  At every view change the scene's level of detail
(:mod:`mpvis.scene.lod`) picks what the viewport can show.

Extension points (documented in ``docs/gui.md``; keep them stable):

* :meth:`DiagramView.set_overlay` / :meth:`DiagramView.clear_overlay`: draw an
  :class:`~mpvis.scene.overlay.Overlay` (cones, ghost lines, wait-for cycles);
* :meth:`DiagramView.add_event_action`: an entry in the right-click menu of an
  event, called with the event's global index;
* signals :attr:`DiagramView.event_selected` and :attr:`DiagramView.event_hovered`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.gui import turns
from mpvis.gui.density_item import DensityItem
from mpvis.gui.frame_keeper import FrameKeeper
from mpvis.gui.layers import LineLayer, SymbolLayer
from mpvis.gui.message_keeper import MessageKeeper
from mpvis.gui.mouse_modes import install_mouse_modes
from mpvis.gui.overlay_layers import OverlayLayers
from mpvis.gui.overlay_layers import pen as _pen
from mpvis.gui.symbol_art import FADED_OPACITY, ring_pixmap, symbol_pixmap
from mpvis.model.manager import ModelManager
from mpvis.scene import describe, frame, hittest, lod, messages
from mpvis.scene import symbols as sym
from mpvis.scene.density import is_dense
from mpvis.scene.density_index import DensityIndex
from mpvis.scene.layout import Layout
from mpvis.scene.overlay import Overlay
from mpvis.scene.stop_marks import STOP_SPECS, stop_marks

BUCKET_PX = frame.BUCKET_PX
MAX_SYMBOLS = frame.MAX_SYMBOLS
GRID_COLOR = "#eceff1"
#: :meth:`DiagramView.keep_up` lays out new events once at least this many came
#: (a step of the density index has a fixed cost, about 20 ms of its per-rank
#: columns at 256 ranks, besides 0.2 µs an event: taken every 16k events, it
#: took three times the CPU of once a second over a 10M-event load).
KEEP_UP_EVENTS = 65_536

@dataclass
class EventAction:
    """An entry of the event context menu (see :meth:`DiagramView.add_event_action`)."""

    label: str
    callback: Callable[[int], object]
    enabled: Callable[[int], bool] | None = None


def label_step(rows: float, pixels: float, min_px: float = 16.0) -> int:
    """Show every ``step``-th rank label so that labels are ``min_px`` apart:
    the smallest power of two with ``step * pixels / rows >= min_px``."""
    per_row = pixels / max(rows, 1e-9)
    step = 1
    while step * per_row < min_px and step < 1 << 20:
        step *= 2
    return step


class DiagramView(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph has no type hints
    """Space-time diagram of one model; grows as the model does."""

    #: global index of the selected event, -1 when the selection is cleared
    event_selected = QtCore.Signal(int)
    #: global index of the event under the pointer, -1 when none
    event_hovered = QtCore.Signal(int)
    #: the visible range changed (for the overview)
    view_changed = QtCore.Signal()
    #: what the level of detail leaves out now ("" when everything is drawn)
    lod_changed = QtCore.Signal(str)
    #: a short message for the status bar
    notice = QtCore.Signal(str)
    #: the overlays shown changed: ``[(label, color, dashed), ...]`` for the legend
    overlays_changed = QtCore.Signal(object)
    #: a left click on no event, or anywhere in the density view: the row clicked
    #: (folded rank groups expand on it)
    row_clicked = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent, background="w")
        self.model: ModelManager | None = None
        self.layout_: Layout | None = None
        self.logical = False
        self.follow = True
        self.selected = -1
        self.pending_logical = False  # asked for while the loader still computes it
        #: the message index, extended off the GUI thread for large layouts
        self.msg_keeper = MessageKeeper(self)
        self.msg_keeper.ready.connect(self._messages_merged)
        #: the frame index, rebuilt off the GUI thread for large layouts
        self.frames = FrameKeeper(self)
        self.frames.ready.connect(self._index_ready)
        self._lost_segments = np.zeros((0, 4))
        self.lod_note = ""
        self._extents = np.zeros((0, 2))
        self._xbounds = (0.0, 1.0)
        self._actions: list[EventAction] = []
        self._redraw_pending = False
        self.redraw_cpu = 0.0  # GUI-thread CPU of the last redraw (s)
        self._setting_range = False
        self._zoomed = False  # the user chose a zoom: following keeps its width
        self._label_step = 1
        pi = self.getPlotItem()
        pi.setMenuEnabled(False)
        pi.hideButtons()
        #: the overlays by name and their graphics items (mpvis.gui.overlay_layers)
        self.overlay_layers = OverlayLayers(pi)
        # pyqtgraph's grid is a translucent line across the plot replayed with the
        # axis at every repaint (about half a frame in software); this one is opaque.
        self._grid = LineLayer(_pen(GRID_COLOR, 1.0))
        self._grid.setZValue(-1)
        pi.addItem(self._grid, ignoreBounds=True)
        pi.invertY(True)
        pi.getAxis("bottom").setLabel("time", units="s")
        pi.getAxis("left").setStyle(tickTextWidth=76, autoExpandTextSpace=False)
        self.vb = pi.getViewBox()
        self.vb.disableAutoRange()
        self.vb.setMouseEnabled(x=True, y=True)
        install_mouse_modes(self.vb, self._user_moved)
        self.vb.sigResized.connect(lambda *_: self._update_axis())
        self._proc = LineLayer(_pen(sym.PROCESS_LINE_COLOR, 2.0))
        self._msg = LineLayer(_pen(sym.MESSAGE_COLOR, 1.0), _pen(sym.MESSAGE_COLOR, 1.0, alpha=40))
        self._lost = LineLayer(_pen(sym.UNCONSUMED_COLOR, 1.6, dashed=True))
        self._syms = SymbolLayer(
            [symbol_pixmap(s) for s in sym.SYMBOLS],
            [symbol_pixmap(s, FADED_OPACITY) for s in sym.SYMBOLS],
            list(sym.SYMBOLS),
        )
        self._stops = SymbolLayer([symbol_pixmap(s) for s in STOP_SPECS], None, STOP_SPECS)
        self.stuck_events: dict[int, int] = {}  # deadlocked rank -> its blocking seq
        self._select = SymbolLayer([ring_pixmap("#ff1744", 26, 3.0)])
        layers: list[pg.GraphicsObject] = [
            self._proc,
            self._msg,
            self._lost,
            self._syms,
            self._stops,
        ]
        for z, item in enumerate(layers):
            item.setZValue(z)
            pi.addItem(item, ignoreBounds=True)
        self._select.setZValue(50)
        pi.addItem(self._select, ignoreBounds=True)
        #: zoomed out, activity density replaces symbols and lines (mpvis.gui.density_item)
        self.density_enabled = True
        self.density_shown = False
        #: rank -> row of its density (folded groups: mpvis.gui.rank_folding); None: rows
        self.density_rows: np.ndarray | None = None
        #: labels replacing "rank N" (a folded group's first rank: "ranks 3-17 (15)")
        self.row_labels: dict[int, str] = {}
        self._density = DensityItem()
        self._density_indexes: dict[bool, DensityIndex] = {}  # by time axis (logical?)
        self._density.setZValue(0.5)  # above the grid, below lost messages and stops
        pi.addItem(self._density, ignoreBounds=True)
        self.vb.sigRangeChanged.connect(self._range_changed)
        self.vb.sigRangeChangedManually.connect(self._user_moved)
        self.scene().sigMouseMoved.connect(self._mouse_moved)
        self.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)


    # ------------------------------------------------------------ model
    def set_model(
        self,
        model: ModelManager | None,
        layout: Layout | None = None,
        index: frame.FrameIndex | None = None,
    ) -> None:
        """Show ``model`` (None: empty diagram); clears selection and overlays.

        ``layout`` / ``index``: the model's :class:`Layout` and frame index if
        already built (off the GUI thread).
        """
        self.model = model
        if model is not None and (layout is None or layout.model is not model):
            layout = Layout(model)
        self.layout_ = layout
        self.frames.reset(index if index is not None and index.layout is layout else None)
        self.msg_keeper.reset(layout)
        self.pending_logical = False
        if layout is not None and layout.has_time and self.logical and not layout.logical_ready:
            self.logical, self.pending_logical = False, True
        self._axis_label()
        self.selected = -1
        self.stuck_events = {}
        self.density_rows, self.row_labels = None, {}  # folding is per model
        self._density_indexes = {}
        for name in list(self.overlay_layers.overlays):
            self.clear_overlay(name)
        self.follow = True
        self._update_axis()
        self.data_changed()
        self.fit_all()

    def data_changed(self) -> None:
        """The model grew or changed: lay out what is new and redraw once (a large
        layout's message index follows on a turn of its own and a worker thread:
        :class:`~mpvis.gui.message_keeper.MessageKeeper`)."""
        lay = self.layout_
        if lay is not None:
            lay.update()
            self.density_index()  # the new events only
            self._axis_label()
            self.msg_keeper.extend(self.frames.index)
            self._geometry_changed()
            if self.follow:
                self._follow_newest()
        self.schedule_redraw()

    def keep_up(self) -> None:
        """Lay out the model's new events without drawing them, once at least
        :data:`KEEP_UP_EVENTS` are new: the layout and the density index take
        them in now, so that the next :meth:`data_changed` has only what came
        since (a trace loading calls this at its turns of feeding,
        :attr:`~mpvis.gui.loader.TraceLoader.grew`: the work of a second of
        loading is then spread over that second's turns instead of one wait).
        The message index waits for :meth:`data_changed` (its merge copies every
        message: once a redraw, not once a step)."""
        lay = self.layout_
        if lay is not None and lay.model is self.model and self.model is not None \
                and self.model.event_count - lay.count >= KEEP_UP_EVENTS:
            lay.update()
            self.density_index()  # the new events only

    def density_index(self) -> DensityIndex | None:
        """The layout's :class:`~mpvis.scene.density_index.DensityIndex` on the time
        axis shown, up to date (kept as the model grows: each update takes the new
        events only; the first on an axis takes every event)."""
        lay = self.layout_
        if lay is None:
            return None
        axis = self.logical or not lay.has_time  # an empty live model has no times yet
        di = self._density_indexes.get(axis)
        if di is None or di.layout is not lay:
            di = self._density_indexes[axis] = DensityIndex(lay, axis)
        di.update()
        return di

    # ------------------------------------------------------------ views
    def set_logical(self, logical: bool) -> None:
        """Switch between real time and the logical (happened-before) layout."""
        if self.layout_ is not None and not self.layout_.has_time:
            logical = True
        if logical and self.layout_ is not None and not self.layout_.logical_ready:
            self.pending_logical = True
            self.notice.emit("computing the logical layout: it is shown when ready")
            return
        self.pending_logical = False
        if logical == self.logical:
            return
        self.notice.emit("")  # a message about the other view is stale now
        self.logical = logical
        self._axis_label()
        if self.layout_ is not None:
            self._geometry_changed()
        self.fit_all()

    def _axis_label(self) -> None:
        """Real time in seconds with an SI prefix (ms, µs: the ticks are scaled, never
        "(x0.001)"); logical time as plain Lamport clock values.  An empty live
        model has no times yet: it keeps the real-time label until it shows some."""
        lay = self.layout_
        logical = self.logical or (lay is not None and lay.count > 0 and not lay.has_time)
        axis = self.getPlotItem().getAxis("bottom")
        if logical:
            axis.enableAutoSIPrefix(False)
            axis.setLabel("logical time (Lamport clock)", units=None)
        else:
            axis.enableAutoSIPrefix(True)
            axis.setLabel("time", units="s")

    def logical_layout_ready(self) -> None:
        """The loader finished the logical clocks: switch to them if the user asked."""
        if self.pending_logical:
            self.set_logical(True)

    def fit_all(self) -> None:
        """Show the whole run."""
        self._zoomed = False
        lay = self.layout_
        x0, x1 = lay.bounds(self.logical) if lay is not None else (0.0, 1.0)
        pad = (x1 - x0) * 0.03
        rows = max(lay.visible_rows if lay is not None else 1, 1)
        self._set_range(x0 - pad, x1 + pad, -0.7, rows - 0.3)

    def fit_events(self, events: Sequence[int] | np.ndarray, margin: float = 0.25) -> None:
        """Show every event of ``events`` (global indices), with ``margin`` of the
        span around them (at least a small width around a single event)."""
        lay = self.layout_
        gs = np.asarray(events, dtype=np.int64)
        if lay is None or gs.size == 0:
            return
        gs = gs[(gs >= 0) & (gs < lay.count)]
        xs = np.asarray(lay.x(self.logical))[gs]
        ys = np.asarray(lay.y)[gs]
        keep = ~np.isnan(xs) & (ys >= 0)
        if not keep.any():
            return
        xs, ys = xs[keep], ys[keep]
        x0, x1 = float(xs.min()), float(xs.max())
        lo, hi = lay.bounds(self.logical)
        span = max(x1 - x0, (hi - lo) * 0.002, 1e-9)
        self.follow = False
        self._zoomed = True
        self._set_range(x0 - span * margin, x1 + span * margin,
                        float(ys.min()) - 0.8, float(ys.max()) + 0.8)
        self.schedule_redraw()

    def zoom_to_ranks(self, first_row: int, last_row: int) -> None:
        """Show rows ``first_row..last_row`` (inclusive), keeping the time range."""
        (x0, x1), _ = self.vb.viewRange()
        self._set_range(x0, x1, first_row - 0.6, last_row + 0.6)

    def zoom_x(self, x0: float, x1: float) -> None:
        """Show times ``x0..x1`` of the current layout."""
        _, (y0, y1) = self.vb.viewRange()
        self._set_range(x0, x1, y0, y1)

    def set_rank_order(self, order: list[int], hidden: set[int] | None = None) -> None:
        """Reorder (top to bottom) or hide ranks."""
        if self.layout_ is None:
            return
        self.layout_.set_rows(order, hidden)
        self._geometry_changed()
        self._update_axis()
        self.fit_all()

    def _geometry_changed(self) -> None:
        """Per-layout geometry that does not depend on the viewport (the frame index aside)."""
        lay, msgs = self.layout_, self.msg_keeper.index
        assert lay is not None and msgs is not None
        self._extents = messages.rank_extents(lay, self.logical)
        self._xbounds = lay.bounds(self.logical)
        self._lost_segments = np.concatenate([
            messages.unconsumed_segments(lay, msgs, self.logical),
            messages.lost_send_segments(lay, self.logical)])

    def _index_ready(self) -> None:
        """A frame index built off the GUI thread was installed: draw with it."""
        fi, lay = self.frames.index, self.layout_
        if fi is not None and lay is not None and fi.layout is lay and fi.count == lay.count:
            self.msg_keeper.adopt(fi.msgs)
        self.schedule_redraw()

    def _messages_merged(self) -> None:
        """The message index merged off the GUI thread is in: draw with it."""
        if self.layout_ is not None:
            self._geometry_changed()
        self.schedule_redraw()

    def _selected_message(self, msgs: messages.MessageIndex) -> np.ndarray | None:
        """Row of the selected event's message in ``msgs`` (always drawn), if any."""
        m, g = self.model, self.selected
        if m is None or g < 0 or g >= m.event_count:
            return None
        message = m.event_at(g).message
        send = -1 if message is None else message.index
        i = int(np.searchsorted(msgs.send, send))
        if send < 0 or i >= len(msgs.send) or msgs.send[i] != send:
            return None
        return np.array([i], dtype=np.int64)

    def _set_lod_note(self, fr: frame.Frame, drawn_lines: int) -> None:
        parts = []
        if fr.messages_decimated:
            parts.append(f"{drawn_lines:,} of ~{fr.messages_in_view:,} messages in view drawn")
        if fr.events_decimated:
            parts.append(f"one symbol per rank and {BUCKET_PX:g} pixels, the one drawn on top")
        note = ("zoomed out: " + ", ".join(parts) + " (zoom in for all)") if parts else ""
        if note != self.lod_note:
            self.lod_note = note
            self.lod_changed.emit(note)

    def data_viewport(self) -> lod.Viewport:
        (x0, x1), (y0, y1) = self.vb.viewRange()
        r = self.vb.sceneBoundingRect()
        return lod.Viewport(x0, x1, y0, y1, max(int(r.width()), 1), max(int(r.height()), 1))

    def _set_range(self, x0: float, x1: float, y0: float, y1: float) -> None:
        self._setting_range = True
        try:
            self.vb.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0)
        finally:
            self._setting_range = False

    def _follow_newest(self) -> None:
        lay = self.layout_
        if lay is None or not lay.count:
            return
        lo, hi = lay.bounds(self.logical)
        (x0, x1), (y0, y1) = self.vb.viewRange()
        width = x1 - x0
        if not self._zoomed or hi - lo <= width * 0.95 or x1 < lo:
            self.fit_all()
        else:
            self._set_range(hi + width * 0.05 - width, hi + width * 0.05, y0, y1)

    def _user_moved(self, *args: object) -> None:
        if self.layout_ is None:
            return
        lo, hi = self.layout_.bounds(self.logical)
        x0, x1 = self.vb.viewRange()[0]
        self._zoomed = x1 - x0 < (hi - lo) * 0.9
        self.follow = x1 >= hi  # scrolled back to the newest events: follow again

    def _update_axis(self) -> None:
        """Rank labels on the left axis, thinned out (every ``step``-th row, deadlocked
        ranks always) so that labels never overlap however many ranks there are."""
        lay = self.layout_
        ticks = []
        _, (y0, y1) = self.vb.viewRange()
        px = max(self.vb.sceneBoundingRect().height(), 1.0)
        step = label_step(y1 - y0, px)
        self._label_step = step
        if lay is not None:
            for r in range(lay.nprocs):
                row = int(lay.rows[r])
                if row >= 0 and (row % step == 0 or r in self.stuck_events):
                    mark = " (DL)" if r in self.stuck_events else ""
                    ticks.append((float(row), self.row_labels.get(r, f"rank {r}") + mark))
        self.getPlotItem().getAxis("left").setTicks([ticks, []])

    # ------------------------------------------------------------ drawing
    def schedule_redraw(self) -> None:
        """Redraw once, on a turn of the event loop of its own (many calls, one frame;
        not in the same wait as the slot that asked: :func:`mpvis.gui.turns.later`)."""
        if not self._redraw_pending:
            self._redraw_pending = True
            turns.later(self._scheduled_redraw, self)

    def _scheduled_redraw(self) -> None:
        if self._redraw_pending:  # else redrawn meanwhile
            self.redraw()

    def _range_changed(self, *args: object) -> None:
        _, (y0, y1) = self.vb.viewRange()
        if label_step(y1 - y0, max(self.vb.sceneBoundingRect().height(), 1.0)) != (
            self._label_step
        ):
            self._update_axis()
        self.schedule_redraw()
        self.view_changed.emit()

    def redraw(self) -> None:
        """Recompute the level of detail for the current viewport and update every
        layer (:attr:`redraw_cpu`: the GUI thread's CPU it took)."""
        began = time.thread_time()
        try:
            self._redraw()
        finally:
            self.redraw_cpu = time.thread_time() - began

    def _redraw(self) -> None:
        self._redraw_pending = False
        lay, msgs = self.layout_, self.msg_keeper.index
        if lay is None or msgs is None:
            for item in (self._proc, self._msg, self._lost):
                item.set_segments(np.zeros((0, 4)))
            self._syms.set_points(np.zeros((0, 2)), np.zeros(0, np.int8))
            self._stops.set_points(np.zeros((0, 2)), np.zeros(0, np.int8))
            return
        view = self.data_viewport()
        x = lay.x(self.logical)  # (not every event's row, ``lay.y``: zoomed out no
        lo, hi = self._xbounds  # symbol needs it, and a new rank order recomputes it)
        rect = QtCore.QRectF(lo, -1.0, max(hi - lo, 1e-9), lay.visible_rows + 1.0)
        faded = self.overlay_layers.faded(lay.count)
        dense = self._density_if_dense(view)  # else symbols and lines would pile up
        # (zoomed out the frame draws nothing from the index: it may be dropped
        # while the next one is built, FrameKeeper.current)
        fi = self.frames.current(lay, msgs, self.logical,
                                 self.model is not None and self.model.input_ended,
                                 needed=not dense)
        if not dense:
            self._draw_detail(view, fi, faded, rect)
            self._proc.set_segments(messages.process_lines(lay, self._extents), None, rect)
        self._lost.set_segments(self._lost_segments)
        self._draw_stops()
        self._draw_grid(view)
        self.overlay_layers.draw(lay, self.logical, view)
        if 0 <= self.selected < lay.count and not np.isnan(x[self.selected]):
            g = self.selected
            y_g = float(lay.rows[int(lay.ranks[g])])  # what ``lay.y[g]`` holds
            self._select.set_points(np.array([[x[g], y_g]]), np.zeros(1, np.int8))
        else:
            self._select.set_points(np.zeros((0, 2)), np.zeros(0, np.int8))

    def _draw_detail(self, view: lod.Viewport, fi: frame.FrameIndex,
                     faded: np.ndarray | None, rect: QtCore.QRectF) -> None:
        """Symbols and message lines of ``view``: the frame index's, and a plain pass
        over the events and messages newer than it."""
        lay, msgs = self.layout_, self.msg_keeper.index
        assert lay is not None and msgs is not None
        x, y = lay.x(self.logical), lay.y
        fr = fi.frame(view, self._selected_message(fi.msgs))
        idx = fr.events
        if lay.count > fi.count:  # events newer than the index: a plain pass over them
            tail = np.arange(fi.count, lay.count)
            sel = lod.visible_events(x[tail], y[tail].astype(np.float64), lay.cls[tail], view,
                                     n_classes=sym.N_SYMBOLS, bucket_px=BUCKET_PX,
                                     max_items=MAX_SYMBOLS)
            idx = np.concatenate([idx, tail[sel]])
        self._syms.set_points(np.column_stack([x[idx], y[idx]]), lay.cls[idx],
                              None if faded is None else faded[idx], rect)
        rows = lay.rows
        sends, consumes = fi.msgs.send[fr.messages], fi.msgs.consume[fr.messages]
        seg = np.column_stack([fi.msg_x[fr.messages, 0], rows[fi.msg_src[fr.messages]],
                               fi.msg_x[fr.messages, 1], rows[fi.msg_dst[fr.messages]]])
        new = (np.flatnonzero(np.maximum(msgs.send, msgs.consume) >= fi.count)
               if msgs is not fi.msgs else np.zeros(0, dtype=np.int64))
        if len(new):  # messages completed since the index was built
            ns, nc = msgs.send[new], msgs.consume[new]
            tseg = np.column_stack([x[ns], y[ns], x[nc], y[nc]])
            keep = lod.visible_segments(tseg[:, 0], tseg[:, 1], tseg[:, 2], tseg[:, 3], view,
                                        budget=frame.MAX_LINES, bucket_px=BUCKET_PX,
                                        max_items=frame.MAX_LINES)
            seg = np.concatenate([seg, tseg[keep]])
            sends = np.concatenate([sends, ns[keep]])
            consumes = np.concatenate([consumes, nc[keep]])
        split = None if faded is None else (faded[sends] | faded[consumes])
        self._msg.set_segments(seg, split, rect)
        self._set_lod_note(fr, len(seg))

    def _density_if_dense(self, view: lod.Viewport) -> bool:
        """Zoomed out past one event per two pixels per row: the density view (and
        ``True``), else ``False`` (no density image)."""
        lay = self.layout_
        assert lay is not None
        lo, hi = self._xbounds
        share = max(0.0, min(view.x1, hi) - max(view.x0, lo)) / max(hi - lo, 1e-300)
        dense = self.density_enabled and is_dense(min(share, 1.0) * lay.count, view.width_px,
                                                  lay.visible_rows)
        self.density_shown = dense
        if not dense:
            self._density.clear()
            return False
        di = self.density_index()
        assert di is not None
        self._density.update_view(lay, di.logical, view, self.density_rows, di)
        for item in (self._proc, self._msg):
            item.set_segments(np.zeros((0, 4)))
        self._syms.set_points(np.zeros((0, 2)), np.zeros(0, np.int8))
        note = ("zoomed out: activity per pixel (blue sending, green receiving, grey other, "
                "orange in collectives, red blocked; zoom in for events)")
        if note != self.lod_note:
            self.lod_note = note
            self.lod_changed.emit(note)
        return True

    def _draw_grid(self, view: lod.Viewport) -> None:
        levels = self.getPlotItem().getAxis("bottom").tickValues(view.x0, view.x1, view.width_px)
        xs = np.asarray(levels[0][1] if levels else [], dtype=np.float64)
        y0, y1 = view.y0, view.y1
        self._grid.set_segments(
            np.column_stack([xs, np.full(len(xs), y0), xs, np.full(len(xs), y1)]),
            None,
            QtCore.QRectF(view.x0, y0, max(view.x1 - view.x0, 1e-9), y1 - y0),
        )

    def set_stuck_ranks(self, events: dict[int, int]) -> None:
        """Mark deadlocked ranks: ``{rank: seq of the blocking event}`` (a red octagon there)."""
        if events != self.stuck_events:
            self.stuck_events = dict(events)
            self._update_axis()
            self.schedule_redraw()

    def _draw_stops(self) -> None:
        lay, m = self.layout_, self.model
        assert lay is not None and m is not None
        self._stops.set_points(*stop_marks(m, lay, self.logical, self.stuck_events))

    # ------------------------------------------------------------ overlays
    def set_overlay(self, name: str, overlay: Overlay) -> None:
        """Draw ``overlay`` under ``name``, replacing any overlay of that name."""
        self.overlay_layers.set(name, overlay)
        self.overlays_changed.emit(self.overlay_layers.legend())
        self.schedule_redraw()

    def clear_overlay(self, name: str) -> None:
        """Remove the overlay called ``name`` (no error if there is none)."""
        self.overlay_layers.clear(name)
        self.overlays_changed.emit(self.overlay_layers.legend())
        self.schedule_redraw()

    def overlays(self) -> dict[str, Overlay]:
        """The overlays shown now, by name."""
        return dict(self.overlay_layers.overlays)

    # ------------------------------------------------------------ interaction
    def add_event_action(
        self,
        label: str,
        callback: Callable[[int], object],
        enabled: Callable[[int], bool] | None = None,
    ) -> None:
        """Add ``label`` to the right-click menu of events; ``callback(g)`` runs when chosen."""
        self._actions.append(EventAction(label, callback, enabled))

    def event_actions(self) -> list[EventAction]:
        return list(self._actions)

    def event_at_scene(self, pos: QtCore.QPointF) -> int | None:
        if self.layout_ is None or not self.vb.sceneBoundingRect().contains(pos):
            return None
        p = self.vb.mapSceneToView(pos)
        return hittest.event_at(self.layout_, self.logical, p.x(), p.y(), self.data_viewport())

    def select_event(self, g: int, center: bool = False) -> None:
        """Select event ``g`` (-1: none); with ``center`` scroll it into the middle."""
        self.selected = g
        if center and self.layout_ is not None and 0 <= g < self.layout_.count:
            x = float(self.layout_.x(self.logical)[g])
            y = float(self.layout_.y[g])
            (x0, x1), (y0, y1) = self.vb.viewRange()
            if not np.isnan(x):
                self.follow = False
                hw, hh = (x1 - x0) / 2, (y1 - y0) / 2
                if y >= 0 and not (y0 <= y <= y1):
                    y0, y1 = y - hh, y + hh
                self._set_range(x - hw, x + hw, y0, y1)
        self.schedule_redraw()
        self.event_selected.emit(g)

    def _mouse_moved(self, pos: QtCore.QPointF) -> None:
        g = self.event_at_scene(pos)
        self.event_hovered.emit(-1 if g is None else g)
        if g is not None and self.model is not None:
            text = describe.summary(self.model, self.model.event_at(g))
            QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), text, self)

    def _mouse_clicked(self, ev: Any) -> None:
        """``ev``: pyqtgraph's MouseClickEvent (untyped)."""
        pos = ev.scenePos()
        g = self.event_at_scene(pos)
        button = ev.button()
        if button == QtCore.Qt.MouseButton.LeftButton:
            self.select_event(-1 if g is None else g)
            if g is None or self.density_shown:  # zoomed out, a click means its row
                self.row_clicked.emit(round(self.vb.mapSceneToView(pos).y()))
        elif button == QtCore.Qt.MouseButton.RightButton and g is not None:
            self.select_event(g)
            self.context_menu(g).popup(QtGui.QCursor.pos())

    def context_menu(self, g: int) -> QtWidgets.QMenu:
        """The right-click menu of event ``g``: every registered action."""
        menu = QtWidgets.QMenu(self)
        for act in self._actions:
            a = menu.addAction(act.label)
            a.setEnabled(act.enabled is None or bool(act.enabled(g)))
            a.triggered.connect(lambda _=False, cb=act.callback: cb(g))
        return menu

    def keyPressEvent(self, ev: QtGui.QKeyEvent) -> None:
        key = ev.key()
        (x0, x1), (y0, y1) = self.vb.viewRange()
        w, h = x1 - x0, y1 - y0
        keys = QtCore.Qt.Key
        if key in (keys.Key_Plus, keys.Key_Equal):
            self._set_range(x0 + w / 4, x1 - w / 4, y0, y1)
        elif key == keys.Key_Minus:
            self._set_range(x0 - w / 2, x1 + w / 2, y0, y1)
        elif key == keys.Key_Left:
            self._set_range(x0 - w / 5, x1 - w / 5, y0, y1)
        elif key == keys.Key_Right:
            self._set_range(x0 + w / 5, x1 + w / 5, y0, y1)
        elif key == keys.Key_Up:
            self._set_range(x0, x1, y0 - h / 5, y1 - h / 5)
        elif key == keys.Key_Down:
            self._set_range(x0, x1, y0 + h / 5, y1 + h / 5)
        elif key in (keys.Key_Home, keys.Key_F):
            self.fit_all()
        elif key == keys.Key_End:
            self.follow = True
            self._follow_newest()
        elif key == keys.Key_L:
            self.set_logical(not self.logical)
        else:
            super().keyPressEvent(ev)
            return
        if key not in (keys.Key_End, keys.Key_Home, keys.Key_F, keys.Key_L):
            self._user_moved()
