"""The window's live path: the live feed, and the one Qt piece, a signal that hops threads.

Decision (issue 4, kept by issue 18): the central process runs on its own
thread; its :class:`~mpvis.collector.feed.LiveFeed` hands each typed message
to :class:`FeedBridge`, whose only job is to emit it as a Qt signal.  The
window receives it on the GUI thread (a queued connection) and appends it to
its inbox; the window's timer drains the inbox, hands each message to the
run's :class:`~mpvis.collector.live_run.LiveRun` (the model, the policy for
bad records, shared with ``mpvis run`` headless) and repaints once per drain.
So the model and Qt are only ever touched by the GUI thread and no lock is
needed.  The session advertises itself (:mod:`mpvis.collector.rendezvous`) so
``mpvis run`` / ``mpvis demo`` in a terminal stream into this window.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
from pathlib import Path

from PySide6 import QtCore

from mpvis.collector import rendezvous
from mpvis.collector.feed import LiveFeed, StreamFailed
from mpvis.sim.live import stream_scenario

log = logging.getLogger(__name__)


class FeedBridge(QtCore.QObject):
    """Emits each message of a live feed as :attr:`message`, from the feed's thread.

    Connected to a slot of an object of the GUI thread, the message arrives
    there (Qt queues it across threads)."""

    message = QtCore.Signal(object)  # a FeedMessage


class LiveSession:
    """A live feed (its central process) whose messages :attr:`bridge` emits."""

    def __init__(self, journal_dir: str | Path | None = None, *, advertise: bool = True) -> None:
        self._tmp = None
        if journal_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mpvis-live-")
            journal_dir = self._tmp.name
        self.journal_dir = Path(journal_dir)
        self.advertise = advertise
        self.bridge = FeedBridge()
        self.feed = LiveFeed(journal_dir=self.journal_dir)
        self.feed.subscribe(self.bridge.message.emit)
        self.central = self.feed.central
        self._streams: list[tuple[threading.Thread, threading.Event]] = []
        self.started = False

    def start(self) -> LiveSession:
        self.feed.start()
        self.started = True
        if self.advertise:
            rendezvous.advertise(self.central.address, self.central.token)
        return self

    def stream_demo(self, scenario: str, seed: int, speed: float) -> None:
        """Stream a built-in scenario into this session, from a background thread."""
        stop = threading.Event()

        def run() -> None:
            try:
                stream_scenario(
                    scenario,
                    self.central.address,
                    self.central.token,
                    seed,
                    speed,
                    stop,
                    hold_stuck=True,
                )
            except Exception as exc:  # the window shows it; the thread must not die loudly
                self.feed.post(StreamFailed(f"demo stream failed: {exc}"))

        t = threading.Thread(target=run, name="mpvis-demo-stream", daemon=True)
        self._streams.append((t, stop))
        t.start()

    def stop(self) -> None:
        """Stop streams, withdraw the rendezvous file, stop the central process."""
        for _, ev in self._streams:
            ev.set()
        for t, _ in self._streams:
            t.join(timeout=5)
        if self.advertise and self.started:
            rendezvous.withdraw()
        if self.started:
            self.feed.stop()
            self.started = False
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.cleanup()
