"""The headless consumer of ``mpvis run`` and ``mpvis demo``: the feed, the model, the report.

When no window is running, ``mpvis run`` records the run itself: a
:class:`~mpvis.collector.feed.LiveFeed` (its central process journals every
record to the trace file) queues its messages, and :meth:`HeadlessSession.pump`
hands them to a :class:`~mpvis.collector.live_run.LiveRun` on the caller's
thread, which builds the functional model (MPVisualizer, section 2) exactly
as the window does, with the same policy for bad records (each logged once
with its rank and seq).  At the end the report of ``mpvis check`` is built.
"""

from __future__ import annotations

import logging
import queue
import ssl
import time
from pathlib import Path

from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.report import exit_code, format_report
from mpvis.collector.feed import FeedMessage, LiveFeed, RunEnded
from mpvis.collector.live_run import LiveRun, RankDied

__all__ = ["HeadlessSession"]

log = logging.getLogger(__name__)


class HeadlessSession:
    """A live feed writing ``journal_path``, and the run's model built from it.

    Call :meth:`pump` regularly from the owning thread; :attr:`ended` is set
    once the run has ended.  :attr:`run` is the :class:`LiveRun` (its bad
    records, :meth:`LiveRun.incomplete`).
    """

    def __init__(
        self, journal_path: Path, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._queue: queue.SimpleQueue[FeedMessage] = queue.SimpleQueue()
        self.feed = LiveFeed(host, port, token, journal_path=journal_path, tls=tls)
        self.feed.subscribe(self._queue.put)
        self.central = self.feed.central
        self.run = LiveRun()

    @property
    def analyses(self) -> Analyses | None:
        """The run's model and analyses, once its header is known."""
        return self.run.analyses

    @property
    def ended(self) -> RunEnded | None:
        """The run's end, once it has come."""
        return self.run.ended

    def start(self) -> HeadlessSession:
        """Start listening (see :attr:`central` for the address and token)."""
        self.feed.start()
        return self

    def pump(self, timeout: float = 0.0) -> bool:
        """Feed whatever has arrived to the model; return whether the run has ended."""
        try:
            msg = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return self.ended is not None
        while True:
            for notice in self.run.take(msg):
                if not isinstance(notice, RankDied):  # the report says how ranks ended
                    log.warning("%s", notice)
            try:
                msg = self._queue.get_nowait()
            except queue.Empty:
                return self.ended is not None

    def idle_for(self) -> float:
        """Seconds since the last records arrived."""
        return time.monotonic() - self.run.last_records

    def wait_end(self, timeout: float) -> bool:
        """Pump until the run has ended or ``timeout`` s have passed."""
        deadline = time.monotonic() + timeout
        while self.ended is None and time.monotonic() < deadline:
            self.pump(timeout=0.05)
        return self.ended is not None

    def report(self) -> tuple[str, int]:
        """The readable report and its exit code (0 nothing found, 1 found)."""
        analyses = self.analyses
        if analyses is None:
            return "no records were received", 0
        for notice in self.run.finish():  # when the end never came: settle what is there
            log.warning("%s", notice)
        report = analyses.report()
        journal = self.ended.journal if self.ended is not None else None
        return format_report(report, source=str(journal) if journal else None), exit_code(report)

    def stop(self) -> None:
        """Stop the central process (a run still open is ended and its journal closed)."""
        self.feed.stop()
        self.pump()
