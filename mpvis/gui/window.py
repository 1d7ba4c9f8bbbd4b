"""The main window: a menu bar and the drawing area (MPVisualizer, section 2),
plus the details panel, the race list, the race notifier, the overview and
any panel registered with :mod:`mpvis.gui.panels`.  What the race list and
the notifier are given, and when, is kept by a
:class:`~mpvis.gui.race_listing.RaceListing` (``window.listing``).

The window observes the model: an observer appends each
:class:`~mpvis.model.observer.ModelChange` to a queue, and a timer on the GUI
thread (every :data:`DRAIN_MS`) feeds queued live records to the model,
drains the changes and repaints once (:mod:`mpvis.gui.live` for why).
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.analysis.exact_events import ExactRace
from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.race_groups import program_dir, relative_site, tolerant
from mpvis.collector.feed import FeedMessage, RunEnded, RunStarted, StreamFailed
from mpvis.collector.live_run import LiveRun, RankDied
from mpvis.gui import (
    actions,
    cones_overlay,
    flip_action,
    message_matrix_panel,  # noqa: F401  (registers its panel on import)
    orderings_view,
    predicate_panel,  # noqa: F401  (registers its panel on import)
    receive_actions,
    turns,
)
from mpvis.gui.deadlock_panel import DeadlockPanel
from mpvis.gui.details import DetailsPanel
from mpvis.gui.diagram import DiagramView
from mpvis.gui.keep_run import confirm_close
from mpvis.gui.legend import LegendStrip
from mpvis.gui.loader import TraceLoader
from mpvis.gui.overview import Overview
from mpvis.gui.panels import DOCK_AREAS, Area, registered_panels
from mpvis.gui.race_listing import RaceListing
from mpvis.gui.race_panel import RacePanel
from mpvis.gui.race_popup import RaceNotifier
from mpvis.gui.race_settings import RaceSettings
from mpvis.gui.rank_folding import FOLD_MIN_RANKS, RankFolder
from mpvis.gui.window_api import WindowApi
from mpvis.model.heap import trim_freed_memory
from mpvis.model.manager import ModelManager
from mpvis.model.observer import ModelChange
from mpvis.model.races import Race
from mpvis.protocol import records as rec_kinds
from mpvis.scene.describe import summary
from mpvis.scene.frame import FrameIndex
from mpvis.scene.layout import Layout
from mpvis.scene.race_marks import (
    confirmed_overlay,
    exact_race_overlay,
    race_overlay,
    races_overlay,
)
from mpvis.scene.vocabulary import call

if TYPE_CHECKING:
    from mpvis.gui.live import LiveSession

DRAIN_MS = 80
#: A live run with no record for this long is checked for deadlocks (ms).
IDLE_MS = 3000
#: Overview refreshes at most this often while a run streams in.
OVERVIEW_MS = 1000
#: A trace shown while it loads is laid out and redrawn at most this often, and
#: the redraws take at most :data:`mpvis.gui.turns.LOADING_SHARE` of the time.
LOADING_REDRAW_S = 1.0


def release_load_garbage(replaced: bool) -> None:
    """A trace's load is done: give the heap's free space back to the system
    before the last frame index is built (:func:`~mpvis.model.heap.trim_freed_memory`:
    the load's freed temporaries stayed resident, 40-90 MB at 1M events).  The
    reference cycles made while it loaded, such as copies of the layout made
    for the frame index builds (33 MB on a 1M-event trace), were collected by
    the loader as it ended (:meth:`TraceLoader._done`, its young generations);
    ``replaced``: a model shown before was dropped since the load began, whose
    cycles may have been let go after :meth:`MainWindow.set_model`'s collection
    (parts queued for it, a frame index build) and frozen with the load's
    objects: only then a full collection (31 ms at 1M events, 56 at 10M, where
    it found nothing more after the loader's).  A few ms of the GUI thread else."""
    if replaced:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
    trim_freed_memory()


class _Observer:
    def __init__(self, queue: deque[ModelChange]) -> None:
        self.queue = queue

    def model_changed(self, change: ModelChange) -> None:
        self.queue.append(change)


class MainWindow(WindowApi):
    """The mpvis window; see the module docstring.

    Its parts (menus, exports, Go to box, run keeping, deadlock panel) see it as
    a :class:`~mpvis.gui.window_api.WindowApi`, which also defines the signals
    ``model_replaced`` (ModelManager or None) and ``deadlocks_changed``.
    """

    model_updated = QtCore.Signal(object)  # ModelChange
    event_selected = QtCore.Signal(int)

    def __init__(self, settings_dir: Path | None = None) -> None:
        super().__init__()
        self.resize(1500, 950)
        self.setAcceptDrops(True)
        self.model: ModelManager | None = None
        self.analyses: Analyses | None = None
        self._idle = QtCore.QElapsedTimer()
        self._idle.start()
        self._idle_checked = False
        self._deadlocks_seen = 0
        self.source = ""
        self.settings_dir = settings_dir
        #: the live feed's messages, in order (:meth:`feed_message`), drained by the timer
        self.inbox: deque[FeedMessage] = deque()
        #: the live run shown (its model and bad records), None for a trace file
        self.live_run: LiveRun | None = None
        self.changes: deque[ModelChange] = deque()
        self.loader: TraceLoader | None = None
        self._load_drawn = 0.0  # when a trace shown while it loads is redrawn next
        self._replaced = False  # a model was dropped since the last load's end
        self._draw_cpu = 0.0  # GUI-thread CPU of the loading redraw under way (its parts')
        self.progress: QtWidgets.QProgressDialog | None = None
        self._last_overview = QtCore.QElapsedTimer()
        self._last_overview.start()
        self._build()
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(DRAIN_MS)
        self._timer.timeout.connect(self.drain)
        self._timer.start()
        self.set_model(None)

    # ------------------------------------------------------------ building
    def _build(self) -> None:
        self.diagram = DiagramView()
        self.folder = RankFolder(self.diagram)  # 256+ ranks: groups that expand on click
        self.legend = LegendStrip()
        self.overview = Overview(self.diagram)
        center = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(center)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        # the race notification is docked above the diagram: it never covers the data
        self.notifier = RaceNotifier(center, docked=True)
        lay.addWidget(self.overview)
        lay.addWidget(self.notifier)
        lay.addWidget(self.diagram, 1)
        lay.addWidget(self.legend)
        self.setCentralWidget(center)
        self.notifier.call_of = self._call_of
        self._phase = ""
        self._focusing = False
        self.details = DetailsPanel()
        self.races = RacePanel()
        #: the race list's and the notifier's state (what is listed, what to offer)
        self.listing = RaceListing(self, self.notifier, self._update_title)
        self.notifier.tags_for = self.listing.race_tags
        self.docks: dict[str, QtWidgets.QDockWidget] = {}
        self.panels_menu: QtWidgets.QMenu | None = None
        self.act_fit: QtGui.QAction | None = None
        self.act_logical: QtGui.QAction | None = None
        self.act_follow: QtGui.QAction | None = None
        self.goto: QtWidgets.QLineEdit | None = None  # the toolbar's Go to box
        self.glossary: QtWidgets.QDialog | None = None  # Help > Glossary, once opened
        #: the live run's journal (None for an opened trace) and the events saved of it
        self.journal: Path | None = None
        self.saved_events = 0
        self.close_confirmed = False  # the user chose to close despite an unsaved run
        #: the window's own central process, when it runs one (mpvis.gui.app)
        self.live: LiveSession | None = None
        self.add_panel("details", "Event details", self.details, "right")
        self.add_panel("races", "Races", self.races, "bottom")
        self.deadlock_panel = DeadlockPanel(self)
        self.add_panel("deadlocks", "Deadlocks", self.deadlock_panel, "bottom")
        self.tabifyDockWidget(self.docks["races"], self.docks["deadlocks"])
        self.docks["races"].raise_()
        self.status_label = QtWidgets.QLabel()
        self.hover_label = QtWidgets.QLabel()
        self.statusBar().addWidget(self.hover_label, 1)
        self.statusBar().addPermanentWidget(self.status_label)
        actions.build_menus(self)
        for spec in registered_panels():
            self.add_panel(spec.name, spec.title, spec.factory(self), spec.area, spec.visible)
        self.diagram.event_selected.connect(self._selected)
        self.diagram.frames.ready.connect(self._index_installed)
        self.diagram.lod_changed.connect(self.legend.set_note)
        self.diagram.overlays_changed.connect(self.legend.set_overlays)
        self.diagram.notice.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.diagram.event_hovered.connect(self._hovered)
        self.details.jump_requested.connect(lambda g: self.diagram.select_event(g, center=True))
        self.races.race_selected.connect(self.show_race)
        self.races.receive_clicked.connect(self._race_row_clicked)
        self.notifier.show_requested.connect(self._notified_show)
        self.notifier.settings_changed.connect(self._settings_changed)
        d = self.diagram
        d.add_event_action("Show details", lambda g: self.docks["details"].raise_())
        d.add_event_action("Jump to message partner", self._jump_partner, lambda g: (
            self.model is not None and self.model.event_at(g).partner is not None))
        receive_actions.install(self)
        cones_overlay.install(self)
        flip_action.install(self)
        orderings_view.install(self)

    def add_panel(self, name: str, title: str, widget: QtWidgets.QWidget,
                  area: Area = "right", visible: bool = True) -> QtWidgets.QDockWidget:
        """Dock ``widget`` (see :mod:`mpvis.gui.panels`); it gets a toggle in View > Panels."""
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(f"panel-{name}")
        dock.setWidget(widget)
        self.addDockWidget(DOCK_AREAS[area], dock)
        dock.setVisible(visible)
        self.docks[name] = dock
        if self.panels_menu is not None:
            self.panels_menu.addAction(dock.toggleViewAction())
        return dock

    # ------------------------------------------------------------ models
    def set_model(self, model: ModelManager | None, source: str = "",
                  layout: Layout | None = None, *, analyses: Analyses | None = None,
                  index: FrameIndex | None = None) -> None:
        """Show ``model`` (built elsewhere or empty, to be fed live).

        ``analyses``: the :class:`Analyses` that built ``model`` (exact races,
        deadlocks); an empty model without one gets them attached here.
        """
        if analyses is None and model is not None and model.event_count == 0:
            analyses = Analyses(model)
        self.analyses = analyses if analyses is not None and analyses.model is model else None
        self._idle.restart()
        self._idle_checked = False
        self._deadlocks_seen = 0
        self.statusBar().clearMessage()
        if self.model is not None:
            self.model.observers[:] = [
                o for o in self.model.observers if not isinstance(o, _Observer)
            ]
        old, self.model, self.source = self.model, model, source
        self.journal = None  # a live run's "start" sets it right after
        self.live_run = None  # a trace opened meanwhile: the run's leftovers are not for it
        self.races.site_of = tolerant(model.site_of) if model is not None else None
        self.races.model.base = program_dir(model.header) if model is not None else None
        self.changes.clear()
        self.races.clear()
        self.listing.reset()
        header = model.header if model is not None else {}
        self.notifier.reset(RaceSettings.load(header, self.settings_dir))
        self.diagram.set_model(model, layout, index)
        self.details.show_event(model, -1)
        if model is not None:
            model.observers.append(_Observer(self.changes))
            self.listing.changed(list(range(len(model.races.races))))
        self.overview.refresh()
        self.model_replaced.emit(model)
        self._update_title()
        if old is not None and old is not model:
            del old
            # the model shown before is dropped: a loaded one was frozen out of the
            # collector's passes (the loader's gc.freeze), so its cycles are
            # collected now (each trace opened stayed in memory)
            gc.unfreeze()
            gc.collect()
            self._replaced = True  # what it left, collected at the load's end

    def open_trace(self, path: str | Path) -> None:
        """Load a trace in the background (progress dialog with Cancel)."""
        if self.loader is not None:
            self.loader.cancel.set()
        self.loader = loader = TraceLoader(path, self)
        self.progress = dlg = QtWidgets.QProgressDialog(f"Loading {Path(path).name}…", "Cancel",
                                                        0, 100, self)
        dlg.setWindowModality(QtCore.Qt.WindowModality.NonModal)
        dlg.setMinimumDuration(400)
        dlg.canceled.connect(loader.cancel.set)
        loader.progressed.connect(lambda done, total: self._load_progress(loader, done, total))
        loader.phase.connect(lambda name: self._load_phase(loader, name))
        self.deadlock_panel.reset()
        self.status_label.setText(f"loading {Path(path).name}…")
        loader.started.connect(lambda a: self._started(loader, a))
        loader.loaded.connect(lambda a, lay, ix: self._loaded(loader, a, lay, ix, None))
        loader.failed.connect(lambda msg, a, lay, ix: self._loaded(loader, a, lay, ix, msg))
        loader.logical_ready.connect(lambda: self._logical_ready(loader))
        loader.exact_ready.connect(lambda: self._exact_ready(loader))
        loader.grew.connect(self.diagram.keep_up)  # lays out as it grows, in the turn
        # gone once its thread is done (a child of the window kept each loaded
        # trace's model alive: every trace opened stayed in memory)
        loader.finished.connect(loader.deleteLater)
        loader.start()

    def _load_phase(self, loader: TraceLoader, name: str) -> None:
        """A new loading phase: in the progress dialog while the trace is not
        shown yet, then in the status bar (the diagram is usable meanwhile)."""
        self._phase = name
        if loader is not self.loader and self.model is None:
            return
        if self.progress is not None and loader is self.loader:
            self.progress.setLabelText(f"{loader.path.name}: {name}…")
        else:
            self.statusBar().showMessage(f"{loader.path.name}: {name}…")

    def _load_progress(self, loader: TraceLoader, done: int, total: int) -> None:
        dlg = self.progress if loader is self.loader else None
        if dlg is not None:
            dlg.setMaximum(100 if total else 0)  # 0: busy, the phase cannot tell
            dlg.setValue(int(100 * done / max(total, 1)) if total else 0)
        elif total and self.model is not None:
            self.statusBar().showMessage(
                f"{loader.path.name}: {self._phase}… {100 * done // total}%")

    def _started(self, loader: TraceLoader, analyses: Analyses) -> None:
        """The trace's model exists, empty: show it now, it grows as it loads."""
        if loader is not self.loader:
            return
        if self.progress is not None:
            self.progress.reset()
            self.progress = None
        self.set_model(analyses.model, str(loader.path), analyses=analyses)
        self._load_drawn = 0.0  # the first events are drawn as soon as they are in

    def _loaded(self, loader: TraceLoader, analyses: Analyses | None, layout: Layout | None,
                index: FrameIndex | None, error: str | None) -> None:
        if self.progress is not None:
            self.progress.reset()
            self.progress = None
        if loader is not self.loader:
            return
        self.loader = None
        replaced, self._replaced = self._replaced, False
        # a turn of its own, before the last index build
        turns.later(lambda: release_load_garbage(replaced))
        if analyses is not None:
            shown = analyses.model is self.model  # shown since ``started``
            if shown:
                self.listing.take_exact_list(loader)
            if not shown:
                self.set_model(analyses.model, str(loader.path), layout, analyses=analyses,
                               index=index)
            else:  # lay out its last events now, list the races on a turn of their own
                self.drain(list_later=True)
            if analyses.model.nprocs >= FOLD_MIN_RANKS:  # rows of similar ranks, click expands
                self._part(shown, self.folder.fold_similar)  # after the last redraw
            if not shown or error is not None:  # else drained with the model's end
                self._note_deadlocks()
        if error is not None:
            self.show_message(error if analyses is None else
                              f"{error}\nThe events before the error are shown.", error=True)

    def _index_installed(self) -> None:
        """A frame index built off the GUI thread replaced the diagram's: the heap's
        free space, the old index and the build's temporaries, goes back to the
        system (about 40 MB on a 1M-event trace once it is in; while it loads too:
        the holes a build leaves stayed resident until the store's next trim and
        made the load's peak, for 1-5 ms of CPU a build at 1M events)."""
        trim_freed_memory()

    def _exact_ready(self, loader: TraceLoader) -> None:
        """The exact races of the opened trace are in: list them, mark confirmations."""
        if self.model is not None and loader.path == Path(self.source):
            self.listing.take_exact_list(loader)
            self._note_deadlocks()  # the deadlock monitor ran in the same pass
            self.statusBar().showMessage("exact races (Cypher and Leu) computed", 5000)

    def _logical_ready(self, loader: TraceLoader) -> None:
        lay = self.diagram.layout_
        if lay is not None and loader.path == Path(self.source):
            self.diagram.logical_layout_ready()
            if lay.has_time:
                self.statusBar().showMessage("logical layout ready (L)", 4000)

    def show_message(self, text: str, error: bool = False) -> None:
        """A non-blocking message box (and the status bar)."""
        self.statusBar().showMessage(text.splitlines()[0], 15000)
        icon = QtWidgets.QMessageBox.Icon
        box = QtWidgets.QMessageBox(icon.Warning if error else icon.Information, "mpvis", text,
                                    parent=self)
        box.setModal(False)
        box.show()

    # ------------------------------------------------------------ live
    @QtCore.Slot(object)
    def feed_message(self, msg: FeedMessage) -> None:
        """A live feed's message (:mod:`mpvis.gui.live`): queued for :meth:`drain`."""
        self.inbox.append(msg)

    def drain(self, list_later: bool = False) -> None:
        """Hand queued feed messages to the live run, handle model changes, repaint once;
        ``list_later``: the race list refreshed on a turn of its own (the end of a
        load: its last lay-out and the list of every race made one wait)."""
        fed = False
        while self.inbox:
            msg = self.inbox.popleft()
            fed = True
            if isinstance(msg, RunStarted):
                started = LiveRun()
                started.take(msg)
                assert started.analyses is not None
                self.set_model(started.analyses.model, f"live run (journal {msg.journal})",
                               analyses=started.analyses)
                self.live_run, self.journal, self.saved_events = started, Path(msg.journal), 0
                continue
            run = self.live_run
            if run is not None:
                notices = run.take(msg)
            else:  # a trace was opened meanwhile: the run's leftovers are not for it
                notices = [msg] if isinstance(msg, StreamFailed) else []
            for notice in notices:
                self.statusBar().showMessage(
                    str(notice), 30000 if isinstance(notice, RankDied) else 15000)
            if isinstance(msg, RunEnded) and run is not None:
                incomplete = run.incomplete()
                if incomplete:
                    self.statusBar().showMessage(incomplete, 30000)
        if fed:
            self._idle.restart()
            self._idle_checked = False
        self.listing.offer_waiting()
        if not self.changes and not fed:
            self._check_idle()
            return
        loading = self.loader is not None and self.model is not None  # shown while it loads
        if loading:
            if time.monotonic() < self._load_drawn:
                return  # its changes wait for the next redraw
            began, began_cpu = time.monotonic(), time.thread_time()
        added: list[int] = []
        finished = False
        while self.changes:
            change = self.changes.popleft()
            added.extend(change.races_added)
            added.extend(change.races_changed)
            finished |= change.finished
            self.model_updated.emit(change)
        if finished or (
            self.analyses is not None
            and self.analyses.deadlock is not None
            and len(self.analyses.deadlock.deadlocks) != self._deadlocks_seen
        ):
            self._note_deadlocks(races=not added)  # else the race list is refreshed below
        if self.model is not None:
            self.diagram.data_changed()
            if added and loading:  # offered at once, listed in a turn of its own now and then
                if self.listing.added_while_loading(added):
                    self._part(True, self.listing.list_while_loading)
            elif added:
                self._part(list_later, lambda: self.listing.changed(added))
            if self._last_overview.elapsed() > OVERVIEW_MS or self.model.input_ended:
                self._part(True, self.overview.refresh)  # a turn of its own
                self._last_overview.restart()
        self._update_title()
        if loading:  # the next redraw: in a second, or later if this one is long
            self._load_drawn = began + LOADING_REDRAW_S
            self._draw_cpu = time.thread_time() - began_cpu
            # after the diagram's redraw and the parts above, queued the same way before
            turns.later(lambda: self._loading_redrawn(began), self)

    def _part(self, later: bool, part: Callable[[], object]) -> None:
        """Run ``part`` of a drain now, or ``later``: on a turn of the event loop of
        its own (after the diagram's redraw: :func:`mpvis.gui.turns.later`), unless
        the model shown changed meanwhile."""
        model = self.model
        if not later:
            part()
        else:
            turns.later(lambda: self._timed(part) if self.model is model else None, self)

    def _timed(self, part: Callable[[], object]) -> None:
        """Run ``part``, its GUI-thread CPU counted in the loading redraw's."""
        began = time.thread_time()
        part()
        self._draw_cpu += time.thread_time() - began

    def _loading_redrawn(self, began: float) -> None:
        """A trace shown while it loads was laid out and redrawn since ``began``:
        the next redraw waits so that redraws take at most their share of the time.
        Their cost is the GUI thread's CPU in the drain, its parts and the
        diagram's redraw, not the time since ``began`` (the loader's feeding
        turns between them made the redraws of a 10M-event load 1.5-2 s apart
        instead of 1 s)."""
        cost = self._draw_cpu + self.diagram.redraw_cpu
        self._load_drawn = began + max(LOADING_REDRAW_S, cost / turns.LOADING_SHARE)

    def _check_idle(self) -> None:
        """A live run idle for :data:`IDLE_MS`: ask the deadlock monitor once (``final=False``)."""
        a, m = self.analyses, self.model
        if a is None or a.deadlock is None or m is None or m.input_ended or self._idle_checked \
                or self.live_run is None or self._idle.elapsed() < IDLE_MS:
            return
        self._idle_checked = True
        a.deadlock.check(final=False)
        self._note_deadlocks()

    def _note_deadlocks(self, races: bool = True) -> None:
        """Show the deadlocks found so far; ``races``: refresh the race list too (the
        exact detector runs beside the deadlock monitor)."""
        a = self.analyses
        n = len(a.deadlock.deadlocks) if a is not None and a.deadlock is not None else 0
        self._deadlocks_seen = n
        self.deadlocks_changed.emit()
        self.diagram.set_stuck_ranks(self.deadlocked_ranks())
        if self.analyses is not None and races:
            self.listing.changed([])

    def deadlocked_ranks(self) -> dict[int, int]:
        """Ranks blocked in a deadlock found so far, with their blocking seq (drawn distinctly)."""
        a = self.analyses
        if a is None or a.deadlock is None:
            return {}
        return {r: s for d in a.deadlock.deadlocks for r, s in d.events}

    # ------------------------------------------------------------ races
    def show_race(self, race: Race | ExactRace | None) -> None:
        """Highlight a race (receives, messages; an exact race: its ghost send); center it."""
        d = self.diagram
        d.clear_overlay("race-confirmed")
        if race is None or self.model is None:
            d.clear_overlay("race")
            return
        m = self.model
        if isinstance(race, ExactRace):
            ov = exact_race_overlay(m, race)
            d.set_overlay("race", ov)
            d.fit_events(ov.highlight)
            self._select_quietly(m.gidx(race.rank, race.recv))
            return
        together = [r for r in self.races.selected_races() if isinstance(r, Race)]
        if len(together) > 1 and race in together:
            focus = self.races.focus
            what = f"recv {focus[0]}:{focus[1]}" if focus else "the selection"
            ov = races_overlay(m, together, f"{len(together)} races of {what}")
        else:
            ov = race_overlay(m, race)
        d.set_overlay("race", ov)
        if self.races.is_confirmed(race):
            d.set_overlay("race-confirmed", confirmed_overlay(m, race))
        d.fit_events(ov.highlight)  # both receives and both sends in view
        self._select_quietly(m.gidx(race.rank, race.recvs[0]))

    def _notified_show(self, race: Race) -> None:
        self.docks["races"].show()
        self.docks["races"].raise_()
        if not self.races.select_race(race):
            self.show_race(race)

    def _settings_changed(self) -> None:
        self.statusBar().showMessage(self.notifier.settings.summary(), 10000)

    # ------------------------------------------------------------ selection
    def _selected(self, g: int) -> None:
        self.details.show_event(self.model, g)
        if g >= 0:
            self.docks["details"].show()
            if receive_actions.is_any_recv(self, g) and not self._focusing:
                receive_actions.show_nonadjacent(self, g)
                self._focus_receive(g)
        self.event_selected.emit(g)

    def _select_quietly(self, g: int) -> None:
        """Select event ``g`` (details shown) without narrowing the race list to it."""
        was, self._focusing = self._focusing, True
        try:
            self.diagram.select_event(g)
        finally:
            self._focusing = was

    def _race_row_clicked(self, rank: int, seq: int) -> None:
        """A race row clicked: like a click on its ``recv(-1,-1)`` (a race of
        another receive: the row's race alone is shown, as selected)."""
        m = self.model
        if m is None or seq >= m.count(rank):
            return
        g = m.gidx(rank, seq)
        if receive_actions.is_any_recv(self, g):
            self._focus_receive(g)

    def _focus_receive(self, g: int) -> None:
        """One click on a ``recv(-1,-1)``: its races listed and selected, drawn
        together, and fitted in view."""
        m = self.model
        if m is None or self._focusing:
            return
        self._focusing = True
        try:
            if self.races.focus_receive(*m.event_at(g).key):
                self.docks["races"].show()
                self.docks["races"].raise_()
            self.diagram.select_event(g)  # the receive clicked stays the one selected
        finally:
            self._focusing = False

    def _call_of(self, rank: int, seq: int) -> str:
        """Receive ``rank:seq`` spelled out: ``recv(ANY_SOURCE, ANY_TAG) at f.py:3``."""
        m = self.model
        if m is None or seq >= m.count(rank):
            return "recv(?)"
        rec = m.record(rank, seq)
        site = relative_site(rec.get("site"), self.races.model.base)
        src, tag = (rec["src"], rec["tag"]) if rec["kind"] == rec_kinds.RECV else (-1, -1)
        return call(src, tag, None if site == "?" else site)

    def _hovered(self, g: int) -> None:
        m = self.model
        self.hover_label.setText(summary(m, m.event_at(g)) if g >= 0 and m else "")

    def _jump_partner(self, g: int) -> None:
        partner = None if self.model is None else self.model.event_at(g).partner
        if partner is not None:
            self.diagram.select_event(partner.index, center=True)

    def closeEvent(self, ev: QtGui.QCloseEvent) -> None:
        """Ask before a live run that was not saved goes away with the window."""
        if confirm_close(self):
            ev.accept()
        else:
            ev.ignore()

    def _update_title(self) -> None:
        m = self.model
        if m is None:
            self.setWindowTitle("mpvis")
            self.status_label.setText(
                f"loading {self.loader.path.name}: {self._phase or 'starting'}…"
                if self.loader is not None
                else "no trace: File > Open, drop a file, or 'mpvis run'")
            return
        prog = m.header.get("program") or m.header.get("demo") or "run"
        state = "ended" if m.input_ended else "live"
        stuck = [r for r in range(m.nprocs) if m.status(r) in ("suspended", "dead")]
        self.setWindowTitle(f"mpvis: {prog} ({state})")
        self.status_label.setText(
            f"{m.nprocs} ranks, {m.event_count:,} events, {self.listing.flagged} receive "
            f"pairs flagged, {len(stuck)} ranks stopped"
            + (" | following" if (self.diagram.follow and not m.input_ended) else "")
        )

    # ------------------------------------------------------------ drag & drop
    def dragEnterEvent(self, ev: QtGui.QDragEnterEvent) -> None:
        if ev.mimeData().hasUrls():
            ev.acceptProposedAction()

    def dropEvent(self, ev: QtGui.QDropEvent) -> None:
        for url in ev.mimeData().urls():
            if url.isLocalFile():
                self.open_trace(url.toLocalFile())
                break

    def resizeEvent(self, ev: QtGui.QResizeEvent) -> None:
        super().resizeEvent(ev)
        if self.notifier.isVisible():
            self.notifier.place()
