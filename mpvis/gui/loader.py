"""Loading a trace file off the GUI thread, with progress and cancel.

The model (in :class:`~mpvis.analysis.pipeline.Analyses`, built without
analyzers so that it shows sooner), its real-time
:class:`~mpvis.scene.layout.Layout` and the frame index
(:class:`~mpvis.scene.frame.FrameIndex`) are built in a worker thread; the
window receives them ready to draw (``loaded``).  The same thread then
computes the logical clocks, an event-by-event pass, and emits
``logical_ready``: the real-time view is usable meanwhile (the layout's
``logical_pending`` keeps the GUI thread away from them).  Last, the deadlock
monitor and the exact race detector (Cypher and Leu) run over the built model
in one pass (:meth:`~mpvis.analysis.pipeline.Analyses.add_afterwards`) and
``exact_ready`` is emitted (the window then shows deadlocks and exact races):
the trace is browsable meanwhile.

Every phase is announced (``phase(name)``: :data:`PHASES`) and reports its
progress in per mille where it can (``progressed``; ``(0, 0)`` for a phase
that cannot tell), so a long load never looks like an empty window.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6 import QtCore

from mpvis.analysis.pipeline import Analyses
from mpvis.scene.frame import FrameIndex
from mpvis.scene.layout import Layout
from mpvis.scene.messages import message_index
from mpvis.tracefile.reader import LoadCancelled, TraceFileError, load_trace, read_header


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

    ``loaded(analyses, layout, index)`` / ``failed(message, analyses or None,
    layout, index)``; then ``logical_ready()`` once the logical clocks are in,
    and ``exact_ready()`` once the exact races are (after ``loaded`` only).
    """

    progressed = QtCore.Signal(int, int)
    loaded = QtCore.Signal(object, object, object)  # Analyses, Layout, FrameIndex
    failed = QtCore.Signal(str, object, object, object)  # message, partial or None, ...
    logical_ready = QtCore.Signal()
    exact_ready = QtCore.Signal()
    phase = QtCore.Signal(str)  # one of PHASES

    def __init__(self, path: str | Path, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.cancel = threading.Event()
        #: seconds spent in the model (read + analyses) and in the real-time layout
        self.timings: dict[str, float] = {}

    def run(self) -> None:
        clock = QtCore.QElapsedTimer()
        clock.start()
        self.phase.emit(PHASES[0])
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
            analyses.add_afterwards(progress=self._progress)
            self.timings["exact"] = clock.elapsed() / 1e3
            self.exact_ready.emit()

    def _logical(self, layout: Layout) -> None:
        if layout.logical_pending:
            self.phase.emit(PHASES[2])
            self.progressed.emit(0, 0)
            layout.update_logical()
            layout.logical_pending = False
        self.logical_ready.emit()

    def _progress(self, done: int, total: int) -> None:
        self.progressed.emit(int(1000 * done // max(total, 1)), 1000)  # per mille: fits an int
