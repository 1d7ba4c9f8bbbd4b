"""The window's live path: a central process whose callbacks only queue.

Decision (issue 4): the central process's callbacks run on its server
thread and do nothing but append to :attr:`LiveSession.inbox` (a
``collections.deque``: appends and pops are thread-safe).  The window's timer
drains the inbox on the GUI thread, feeds the model there in batches and
repaints once per drain; so the model and Qt are only ever touched by the
GUI thread and no lock is needed.  The session advertises itself
(:mod:`mpvis.collector.rendezvous`) so ``mpvis run`` / ``mpvis demo`` in a
terminal stream into this window.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

from mpvis.collector import rendezvous
from mpvis.collector.central import CentralProcess
from mpvis.sim.live import stream_scenario

log = logging.getLogger(__name__)


class LiveSession:
    """A central process feeding :attr:`inbox` with ``(what, *args)`` tuples."""

    def __init__(self, journal_dir: str | Path | None = None, *, advertise: bool = True) -> None:
        self._tmp = None
        if journal_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mpvis-live-")
            journal_dir = self._tmp.name
        self.journal_dir = Path(journal_dir)
        self.inbox: deque[tuple[Any, ...]] = deque()
        self.advertise = advertise
        self.central = CentralProcess(
            journal_dir=self.journal_dir,
            on_run_start=lambda header, path: self.inbox.append(("start", header, path)),
            on_records=lambda recs: self.inbox.append(("records", recs)),
            on_rank_end=lambda rank, status, detail: self.inbox.append(
                ("rank_end", rank, status, detail)
            ),
            on_run_end=lambda info: self.inbox.append(("end", info)),
        )
        self._streams: list[tuple[threading.Thread, threading.Event]] = []
        self.started = False

    def start(self) -> LiveSession:
        self.central.start()
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
                self.inbox.append(("error", f"demo stream failed: {exc}"))

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
            self.central.stop()
            self.started = False
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.cleanup()
