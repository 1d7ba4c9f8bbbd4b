"""Loading a trace file without blocking the window, with progress and cancel.

A JSON Lines trace is **shown while it loads** (issue 16: a first frame within
seconds, whatever the size).  The worker thread reads the header and emits
``started(analyses)``: an :class:`~mpvis.analysis.pipeline.Analyses` whose
model is empty, with the exact race detector (Cypher and Leu) and the deadlock
monitor attached as ``mpvis check`` attaches them, which the window shows at
once.  The worker then only reads: the trace is parsed (in a second process
for large files, :func:`~mpvis.tracefile.reader.parsed_batches`) into batches
of columns and their records, queued.  The GUI thread adds them to the model
a time slice at a time (:data:`FEED_MS`, then it returns to the event loop),
as it does with a live run's records: the model is only ever touched by one
thread while it grows, the analyses get its causally ordered stream as it
grows, and the diagram redraws what is in after each slice.  Once every batch
is in and the model finished, the worker lists the exact races (a quarter of
a million for 1M events: :attr:`TraceLoader.exact_races`, the detector's
conflict array taken off the GUI thread; a row is made when shown) and
emits ``loaded(analyses, None, None)``, ``logical_ready`` (the Lamport
clocks come with the model) and ``exact_ready``: the window then shows
deadlocks and exact races.  (Until issue 16's second round the analyses ran
after the load, over records rebuilt from the model: 10 s more on 1M events.)

An OTF2 archive is loaded whole in the worker thread instead, with its
real-time :class:`~mpvis.scene.layout.Layout` and frame index
(:class:`~mpvis.scene.frame.FrameIndex`): ``loaded`` carries them, and the
worker lays out the logical clocks after it (the layout's ``logical_pending``
keeps the GUI thread away from them meanwhile).

Every phase is announced (``phase(name)``: :data:`PHASES`) and reports its
progress in per mille where it can (``progressed``; ``(0, 0)`` for a phase
that cannot tell), so a long load never looks like an empty window.
"""

from __future__ import annotations

import gc
import queue
import threading
import traceback
from collections import deque
from collections.abc import Container
from pathlib import Path

from PySide6 import QtCore

from mpvis.analysis.pipeline import Analyses
from mpvis.gui import turns
from mpvis.gui.race_panel import DetectorKeys, ExactKey
from mpvis.gui.race_rows import ExactRows
from mpvis.scene.frame import FrameIndex
from mpvis.scene.layout import Layout
from mpvis.scene.messages import message_index
from mpvis.tracefile.otf2_import import is_otf2
from mpvis.tracefile.parse_worker import ParsedBatch
from mpvis.tracefile.reader import (
    LoadCancelled,
    TraceFileError,
    add_parsed,
    finish_model,
    header_size,
    load_trace,
    parsed_batches,
    read_header,
    split_parsed,
    unreadable,
)

#: Milliseconds of model building per turn of the GUI thread while a trace loads ...
FEED_MS = 30
#: ... in steps of at most this many events (a parsed batch is about 16k: a
#: step of that size took 60 ms on the 2-core machine, too long for one frame;
#: a step costs about 2 ms plus 5 µs per event of CPU, so much smaller steps
#: slow the load down); a turn takes no step it would likely end past
#: :data:`FEED_MS` with (from what the last steps took).
FEED_STEP = 2048
#: A turn of feeding is skipped when the GUI thread's other slots took more than
#: this many milliseconds since the last turn (or skip) of feeding (a redraw, the
#: drain, the race list: each on a turn of its own, :mod:`mpvis.gui.turns`):
#: feeding right after them would add to the same wait between two frames ...
OTHERS_MS = 20
#: ... at most this many times in a row (the load goes on however busy the window).
MAX_SKIPS = 4
#: When no parsed batch is waiting, the next turn of feeding looks again after
#: this many milliseconds (a zero-interval timer would spin the GUI thread: it
#: took the GIL from the loader thread and a core from the parser process).
IDLE_MS = 5
#: Parsed batches waiting for the GUI thread at most (each about 16k events).
QUEUED_BATCHES = 4
#: What the worker queues: a parsed batch, the end (``None``), or why reading stopped.
_Item = ParsedBatch | BaseException | None


def lay_out(analyses: Analyses) -> tuple[Layout, FrameIndex]:
    """The real-time layout and frame index of a loaded model (logical clocks pending)."""
    layout = Layout(analyses.model)
    layout.update(logical=False)
    if not layout.has_time:  # no wall clock: the logical axis is the only one
        layout.update_logical()
    else:
        layout.logical_pending = True
    return layout, FrameIndex(layout, message_index(layout), not layout.has_time)


#: The loader's phases, in order, as shown to the user.
PHASES = (
    "reading the trace",
    "laying out the diagram",
    "computing logical clocks",
    "exact race test (Cypher and Leu)",
)


class TraceLoader(QtCore.QThread):
    """Loads ``path``; emits ``progressed(done, total)``, then ``loaded`` or ``failed``.

    ``started(analyses)`` (a JSON Lines trace: its model, empty, growing in the
    GUI thread from then on, see the module docstring);
    ``loaded(analyses, layout, index)`` / ``failed(message, analyses or None,
    layout, index)`` (``layout``/``index`` are ``None`` after ``started``: the
    window lays the model out as it grows); then ``logical_ready()`` once the
    logical clocks are in, and ``exact_ready()`` once the exact races are
    (after ``loaded`` only).
    """

    progressed = QtCore.Signal(int, int)
    loaded = QtCore.Signal(object, object, object)  # Analyses, Layout, FrameIndex
    failed = QtCore.Signal(str, object, object, object)  # message, partial or None, ...
    logical_ready = QtCore.Signal()
    exact_ready = QtCore.Signal()
    phase = QtCore.Signal(str)  # one of PHASES
    started = QtCore.Signal(object)  # Analyses, its model empty: shown while it grows
    #: GUI thread, at the start of a turn of feeding after the model grew: the
    #: window keeps its layout up with the model here (``DiagramView.keep_up``),
    #: in the turn's :data:`FEED_MS`, so that its redraw has little left to lay out
    grew = QtCore.Signal()

    def __init__(self, path: str | Path, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.cancel = threading.Event()
        #: seconds spent in the model (read + analyses) and in the real-time layout
        self.timings: dict[str, float] = {}
        self._queue: queue.Queue[_Item] = queue.Queue(QUEUED_BATCHES)
        self._fed = threading.Event()  # the GUI thread has added every batch (or failed)
        self._error: TraceFileError | None = None
        self._analyses: Analyses | None = None
        #: the exact races, built on this thread once the exact pass is done
        #: (before ``exact_ready``), so that the GUI thread only lists them
        self.exact_races: ExactRows | None = None
        self.exact_keys: Container[ExactKey] | None = None  # their keys (the race panel's ✓)
        self._seen = 0
        self._parts: deque[ParsedBatch] = deque()  # pieces of the batch being added
        self._step_ms = 10.0  # what a step of :meth:`_feed` took lately (a moving average)
        self._since_turn = QtCore.QElapsedTimer()  # since the end of the last turn of feeding
        self._since_turn.start()
        self._skips = 0  # turns skipped in a row (see :data:`OTHERS_MS`)
        self._grown = False  # events were added since ``grew`` was last emitted
        self._gc_was_enabled = True
        #: lives in the GUI thread, like this object; single-shot, started again at the
        #: end of each turn (see :meth:`_feed`)
        self._feeder = QtCore.QTimer(self)
        self._feeder.setSingleShot(True)
        self._feeder.setInterval(0)
        self._feeder.timeout.connect(self._feed)
        self.started.connect(self._start_feeding)
        app = QtCore.QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.stop)
        if parent is not None:  # before the parent deletes this QThread
            parent.destroyed.connect(self.stop)

    def run(self) -> None:
        self.phase.emit(PHASES[0])
        if not is_otf2(self.path):
            self._run_growing()
            return
        clock = QtCore.QElapsedTimer()
        clock.start()
        try:
            # No analyzer attached: the parser ships columns only and the model is
            # built at its own pace; the deadlock monitor and the exact detector
            # run after the trace is shown (Analyses.add_afterwards)
            analyses = Analyses.for_header(read_header(self.path), exact=False, deadlocks=False)
            load_trace(self.path, model=analyses.model, progress=self._progress, cancel=self.cancel)
        except LoadCancelled:
            self.failed.emit("loading cancelled", None, None, None)
            return
        except TraceFileError as exc:
            partial = exc.model if exc.model is not None and exc.model.event_count else None
            if partial is None:
                self.failed.emit(str(exc), None, None, None)
                return
            got = analyses if partial is analyses.model else Analyses(partial)
            if got.deadlock is None:
                got.add_afterwards(exact=False)
            layout, index = lay_out(got)
            self.failed.emit(str(exc), got, layout, index)
            self._logical(layout)
            return
        except (OSError, ValueError) as exc:
            self.failed.emit(f"{self.path}: {exc}", None, None, None)
            return
        self.timings["model"] = clock.restart() / 1e3
        self.phase.emit(PHASES[1])
        self.progressed.emit(0, 0)
        layout, index = lay_out(analyses)
        self.timings["layout"] = clock.restart() / 1e3
        self.loaded.emit(analyses, layout, index)
        self._logical(layout)
        self.timings["logical"] = clock.restart() / 1e3
        if not self.cancel.is_set():
            self.phase.emit(PHASES[3])
            self._afterwards(analyses, clock)

    # -------------------------------------------------- shown while it loads
    def _run_growing(self) -> None:
        """Worker thread: parse and queue the batches, then run the analyses once
        the GUI thread has built the model (see the module docstring)."""
        clock = QtCore.QElapsedTimer()
        clock.start()
        try:
            # the analyses attached as ``mpvis check`` does: fed during the load,
            # not from records rebuilt after it
            analyses = Analyses.for_header(read_header(self.path))
            self._seen = header_size(self.path)
        except TraceFileError as exc:
            self.failed.emit(str(exc), None, None, None)
            return
        except (OSError, ValueError) as exc:
            self.failed.emit(f"{self.path}: {exc}", None, None, None)
            return
        self._analyses = analyses
        self.started.emit(analyses)
        try:
            with parsed_batches(self.path, analyses.model) as batches:
                for pb in batches:
                    if not self._put(pb):
                        break  # cancelled, or the GUI thread stopped at an error
        except (OSError, EOFError) as exc:
            self._put(exc)
        except ValueError as exc:  # from the parser process: its reason, as a load error
            self._put(exc)
        self._put(None)
        while not self._fed.wait(0.05):
            if self.cancel.is_set():
                return
        self.timings["model"] = clock.restart() / 1e3
        if self.cancel.is_set():
            return
        if self._error is not None:
            partial = analyses if analyses.model.event_count else None
            if partial is not None:  # the deadlocks of the events in, no exact races
                partial.exact = None
                partial.add_afterwards(exact=False)
            self.failed.emit(str(self._error), partial, None, None)
            self.logical_ready.emit()
            return
        self._list_exact(analyses)  # before ``loaded``: the window lists them from it
        self.timings["exact"] = clock.restart() / 1e3
        self.phase.emit(PHASES[1])
        self.loaded.emit(analyses, None, None)
        self.phase.emit(PHASES[2])
        self.logical_ready.emit()
        self.phase.emit(PHASES[3])  # it ran with the reading; its races are listed
        self.progressed.emit(1000, 1000)
        self.exact_ready.emit()

    def _afterwards(self, analyses: Analyses, clock: QtCore.QElapsedTimer) -> None:
        """The exact pass and the deadlock monitor, then ``exact_ready`` (not when
        cancelled: the pass stops at its next progress report)."""
        try:
            analyses.add_afterwards(progress=self._progress)
        except LoadCancelled:
            return
        self._list_exact(analyses)
        self.timings["exact"] = clock.elapsed() / 1e3
        self.exact_ready.emit()

    def _list_exact(self, analyses: Analyses) -> None:
        """Worker thread: :attr:`exact_races` and :attr:`exact_keys` (a quarter of a
        million for 1M events, one array: the GUI thread only shows them)."""
        if analyses.exact is not None:
            self.exact_races = ExactRows(analyses.exact.conflict_array())
            self.exact_keys = DetectorKeys(analyses.exact)  # it is fed no more

    def stop(self) -> None:
        """Cancel the load and wait until the worker has stopped (the window is
        closing, the application quits): a thread still running when its
        QThread is destroyed would abort the program."""
        self.cancel.set()
        self.wait()

    def _put(self, item: _Item) -> bool:
        """Queue ``item`` for the GUI thread; ``False`` if the load was cancelled or
        the GUI thread stopped taking batches (a rule broken: nothing more to add)."""
        while not (self.cancel.is_set() or self._fed.is_set()):
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _start_feeding(self) -> None:
        """GUI thread, after ``started``: the model grows from the event loop on.
        The cyclic garbage collector waits meanwhile (millions of small acyclic
        objects, as :func:`~mpvis.tracefile.reader.load_trace` does)."""
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        self._feeder.start()

    def _feed(self) -> None:
        """GUI thread: add queued batches to the model for up to :data:`FEED_MS`;
        a turn right after other long slots is left for the next turn of the event
        loop (:data:`OTHERS_MS`), and so is a turn while the window's parts wait
        in :mod:`mpvis.gui.turns` (a redraw queued behind another part ran after a
        turn of feeding that came between them: 110-120 ms waits at 10M events),
        so that the frames in between get their turn."""
        a = self._analyses
        assert a is not None
        try:
            others = self._since_turn.elapsed() > OTHERS_MS or turns.pending()
            if others and self._skips < MAX_SKIPS:
                self._skips += 1
            else:
                self._skips = 0
                self._feed_turn(a)
        finally:
            self._since_turn.restart()
            # the next turn is due from now on, not from the start of this one: a
            # repeating timer's next time is set before its slot runs, so after a
            # 30 ms turn it came before every timer that fell due meanwhile and two
            # turns of feeding ran between two of any other timer's (60 ms waits at
            # 1M events, 80+ with a redraw between them)
            if not self._fed.is_set():
                self._feeder.start()

    def _feed_turn(self, a: Analyses) -> None:
        """:meth:`_feed`'s turn: steps of :data:`FEED_STEP` events until :data:`FEED_MS`."""
        clock = QtCore.QElapsedTimer()
        clock.start()
        if self._grown:  # what it triggers is part of the turn
            self._grown = False
            self.grew.emit()
        total = self.path.stat().st_size if self._seen else 0
        try:
            # at least one step per turn, however long steps take, unless laying
            # out took the turn (the next turn steps: it lays out nothing new)
            stepped = clock.elapsed() >= FEED_MS
            while not stepped or clock.elapsed() + self._step_ms < FEED_MS:
                if self.cancel.is_set():
                    self._done()
                    return
                if self._parts:
                    item: _Item = self._parts.popleft()
                else:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:  # the parser is behind: look again in a while
                        self._feeder.setInterval(IDLE_MS)
                        return
                    self._feeder.setInterval(0)
                    if isinstance(item, ParsedBatch):
                        self._parts.extend(split_parsed(item, FEED_STEP))
                        continue
                if item is None:
                    finish_model(a.model, self.path)
                    self._done()
                    return
                if isinstance(item, BaseException):
                    if isinstance(item, ValueError):
                        raise TraceFileError(self.path, None, str(item), a.model)
                    raise unreadable(self.path, item, a.model)
                began, stepped = clock.nsecsElapsed(), True
                add_parsed(a.model, self.path, item)
                self._grown = True
                took = (clock.nsecsElapsed() - began) / 1e6
                self._step_ms = 0.7 * self._step_ms + 0.3 * took
                self._seen += item.nbytes
                self.progressed.emit(int(1000 * min(self._seen, total) // max(total, 1)), 1000)
        except TraceFileError as exc:
            self._error = exc
            self._done()
        except Exception as exc:  # a bug: the load stops with it, not a traceback a turn
            traceback.print_exc()
            self._error = TraceFileError(self.path, None, f"internal error: {exc!r}", a.model)
            self._done()

    def _done(self) -> None:
        """GUI thread: the model is built (or the load failed or was cancelled).
        The reference cycles made while it loaded are collected, then what is
        left is frozen out of the collector's passes.  With the collector
        stopped since ``started`` every object made meanwhile is still in its
        young generations, so collecting those finds the load's garbage (the
        frame index builds' copies of the layout were such cycles) without a
        pass over every object of the process: 4 ms at 1M events, where the
        full collection after the freeze took 31-37 ms and found nothing more."""
        self._feeder.stop()
        gc.collect(1)
        if self._gc_was_enabled:
            gc.enable()
        gc.freeze()
        self._fed.set()

    def _logical(self, layout: Layout) -> None:
        if layout.logical_pending:
            self.phase.emit(PHASES[2])
            self.progressed.emit(0, 0)
            layout.update_logical()
            layout.logical_pending = False
        self.logical_ready.emit()

    def _progress(self, done: int, total: int) -> None:
        if self.cancel.is_set():  # stops the exact pass (the reader checks by itself)
            raise LoadCancelled(str(self.path))
        self.progressed.emit(int(1000 * done // max(total, 1)), 1000)  # per mille: fits an int
