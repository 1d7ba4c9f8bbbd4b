"""Loading a trace file off the GUI thread, with progress and cancel.

The model *and* its layout (:class:`~mpvis.scene.layout.Layout`, whose
logical clock is a Python loop over the events) are built in a worker
thread; the window receives them ready to draw.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6 import QtCore

from mpvis.scene.layout import Layout
from mpvis.tracefile.reader import LoadCancelled, TraceFileError, load_trace


class TraceLoader(QtCore.QThread):
    """Loads ``path``; emits ``progressed(done, total)``, then ``loaded`` or ``failed``."""

    progressed = QtCore.Signal(int, int)
    loaded = QtCore.Signal(object, object)  # ModelManager, Layout
    failed = QtCore.Signal(str, object, object)  # message, partial model or None, its Layout

    def __init__(self, path: str | Path, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.cancel = threading.Event()

    def run(self) -> None:
        try:
            m = load_trace(self.path, progress=self._progress, cancel=self.cancel)
        except LoadCancelled:
            self.failed.emit("loading cancelled", None, None)
            return
        except TraceFileError as exc:
            partial = exc.model if exc.model is not None and exc.model.event_count else None
            layout = Layout(partial) if partial is not None else None
            if layout is not None:
                layout.update()
            self.failed.emit(str(exc), partial, layout)
            return
        except (OSError, ValueError) as exc:
            self.failed.emit(f"{self.path}: {exc}", None, None)
            return
        layout = Layout(m)
        layout.update()
        self.loaded.emit(m, layout)

    def _progress(self, done: int, total: int) -> None:
        self.progressed.emit(int(1000 * done // max(total, 1)), 1000)  # per mille: fits an int
