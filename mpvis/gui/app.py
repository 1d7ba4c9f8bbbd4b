"""Entry points of the window: ``mpvis`` / ``mpvis demo --gui`` and ``mpvis open``."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.collector.rendezvous import discover
from mpvis.gui.keep_run import relay_deadlocks
from mpvis.gui.live import LiveSession
from mpvis.gui.window import MainWindow

#: Qt platforms that show nothing on a screen: a window there is invisible.
INVISIBLE_PLATFORMS = frozenset({"offscreen", "minimal", "minimalegl"})


def no_huge_pages_for_arrays() -> bool:
    """Stop NumPy asking the kernel for transparent huge pages on large arrays;
    whether it could (NumPy's switch is private: ``False`` if it moved).

    NumPy marks every array of 4 MiB or more ``madvise(MADV_HUGEPAGE)``.  Where
    the kernel then defragments on a page fault of such memory (``defrag``
    "madvise", a common default), a fault may wait for the kernel to compact
    memory.  In the window the model grows on the GUI thread: 5 of 19 loads of
    a 10M-event trace had one wait of 283-515 ms of the GUI thread's CPU in an
    ordinary model step, at a random point; with the huge pages off, none of 10
    loads had a wait over 72 ms, and the load took as long (issue 16,
    docs/performance.md).  The window trades the huge pages' fewer TLB misses
    for frames that come on time; ``mpvis check`` keeps them.
    """
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # NumPy 2, 1.26
        try:
            switch = getattr(importlib.import_module(name), "_set_madvise_hugepage", None)
        except ImportError:
            continue
        if callable(switch):
            switch(False)
            return True
    return False


def make_app(*, headless: bool = False) -> QtWidgets.QApplication:
    """The QApplication (created once), arrays without huge pages from then on
    (:func:`no_huge_pages_for_arrays`).

    ``headless`` (drawing to files, ``mpvis render``) picks the offscreen
    platform when there is no display.  Window commands check for a display
    first (:func:`mpvis.cli.display.require_display`), never falling back to an
    invisible window.
    """
    if headless and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and (
        sys.platform.startswith("linux")
    ):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    no_huge_pages_for_arrays()
    app = QtWidgets.QApplication.instance()
    if not isinstance(app, QtWidgets.QApplication):
        app = QtWidgets.QApplication([sys.argv[0]])
        app.setApplicationName("mpvis")
        app.setOrganizationName("mpvis")
    return app


def is_visible_platform() -> bool:
    """Does the running QApplication show windows on a screen (not offscreen)?"""
    return QtGui.QGuiApplication.platformName() not in INVISIBLE_PLATFORMS


def may_advertise(visible: bool) -> tuple[bool, str]:
    """May a new window receive runs?  ``(yes, why not)``: not when it cannot be
    seen, nor when another live window already does (runs would go to whichever
    advertised last: the first window then is clearly the one, and this one says so)."""
    if not visible:
        return False, ""
    other = discover()
    if other is not None and other.pid != os.getpid():
        return False, (f"another mpvis window (pid {other.pid}) receives the runs; "
                       "this one only browses traces")
    return True, ""


def open_live_window(live: LiveSession | None = None) -> tuple[MainWindow, LiveSession]:
    """A window with its own central process started; its feed wired to the window.

    The central process is advertised to ``mpvis run`` / ``mpvis demo``
    (:mod:`mpvis.collector.rendezvous`) only when the window can be seen: a
    run must never stream into a window nobody can look at.
    """
    window = MainWindow()
    advertise, why = may_advertise(is_visible_platform())
    live = (live or LiveSession(advertise=advertise)).start()
    window.live = live
    told: set[str] = set()
    window.deadlocks_changed.connect(lambda: relay_deadlocks(window, told))
    if why:
        window.statusBar().showMessage(why, 30000)
    live.bridge.message.connect(window.feed_message, QtCore.Qt.ConnectionType.QueuedConnection)
    window.destroyed.connect(live.stop)
    return window, live


def _exec(window: MainWindow, live: LiveSession) -> int:
    """Run the event loop; SIGTERM and SIGHUP quit it like closing the window
    (without the question), so the run's temporary files are removed."""
    app = make_app()
    window.show()
    # exit(), not quit(): Qt 6's quit() asks the windows first, and a window
    # with an unsaved live run answers with a question nobody will see
    previous = {sig: signal.signal(sig, lambda *_: app.exit(0))
                for sig in (signal.SIGTERM, signal.SIGHUP)}
    wake = QtCore.QTimer()
    wake.timeout.connect(lambda: None)  # Python code runs, so do its signal handlers
    wake.start(200)
    try:
        return int(app.exec())
    finally:
        wake.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        live.stop()


def run_open_window(path: str | Path | None) -> int:
    """``mpvis open [TRACE]``: the window on a trace (runs stream into it too)."""
    make_app()
    window, live = open_live_window()
    if path is not None:
        window.open_trace(path)
    return _exec(window, live)


def run_demo_window(scenario: str, seed: int, speed: float) -> int:
    """``mpvis`` / ``mpvis demo --gui``: the window, with the scenario streaming live into it."""
    make_app()
    window, live = open_live_window()
    live.stream_demo(scenario, seed, speed)
    return _exec(window, live)
