"""The headless central process of ``mpvis run``: journal, model, and the report at the end.

When no window is running, ``mpvis run`` records the run itself: a
:class:`~mpvis.collector.central.CentralProcess` journals every record to the
trace file, and this session feeds the records to the manager that builds the
functional model (MPVisualizer, section 2) on the caller's thread, through a
queue, the way the window does.  At the end, ranks that did not terminate
normally are marked dead and the report of ``mpvis check`` is built.
"""

from __future__ import annotations

import logging
import queue
import ssl
import time
from pathlib import Path
from typing import Any

from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.report import exit_code, format_report
from mpvis.collector.central import CentralProcess
from mpvis.model.errors import ModelInputError
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record

__all__ = ["HeadlessSession"]

log = logging.getLogger(__name__)



class HeadlessSession:
    """A central process writing ``journal_path``, plus the model and analyses fed from it.

    Call :meth:`pump` regularly from the owning thread; :attr:`info` is set
    once the run has ended (the central process's ``on_run_end`` info).
    """

    def __init__(
        self, journal_path: Path, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.central = CentralProcess(
            host,
            port,
            token,
            journal_path=journal_path,
            on_run_start=lambda header, path: self._queue.put(("start", header)),
            on_records=lambda recs: self._queue.put(("records", recs)),
            on_run_end=lambda info: self._queue.put(("end", info)),
            tls=tls,
        )
        self.analyses: Analyses | None = None
        self.info: dict[str, Any] | None = None
        self._last_records = time.monotonic()
        self.model_errors = 0

    def start(self) -> HeadlessSession:
        """Start listening (see :attr:`central` for the address and token)."""
        self.central.start()
        return self

    def pump(self, timeout: float = 0.0) -> bool:
        """Feed whatever has arrived to the model; return whether the run has ended."""
        try:
            item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return self.info is not None
        while True:
            self._take(*item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return self.info is not None

    def _take(self, what: str, payload: Any) -> None:
        if what == "start":
            self.analyses = Analyses.for_header(payload, validate=False)  # journal checked
        elif what == "records" and self.analyses is not None:
            self._last_records = time.monotonic()
            self._feed(self.analyses.model, payload)
        elif what == "end":
            self.info = payload

    def _feed(self, model: ModelManager, records: list[Record]) -> None:
        while records:
            try:
                model.add_batch(records)
                return
            except ModelInputError as exc:
                self.model_errors += 1
                log.warning("model refused record (rank %s, seq %s): %s", exc.rank, exc.seq, exc)
                if exc.index is None:
                    return
                records = records[exc.index + 1 :]

    def idle_for(self) -> float:
        """Seconds since the last records arrived."""
        return time.monotonic() - self._last_records

    def wait_end(self, timeout: float) -> bool:
        """Pump until the run has ended or ``timeout`` s have passed."""
        deadline = time.monotonic() + timeout
        while self.info is None and time.monotonic() < deadline:
            self.pump(timeout=0.05)
        return self.info is not None

    def report(self) -> tuple[str, int]:
        """The readable report and its exit code (0 nothing found, 1 found)."""
        info = self.info or {}
        analyses = self.analyses
        if analyses is None:
            return "no records were received", 0
        # After Ctrl-C the ranks the user stopped are left where they were: one
        # blocked in a receive then shows up as suspended (and in a deadlock).
        stopped_by_user = "killed" if info.get("interrupted") else None
        for r in info.get("ranks", []):
            if r["status"] not in ("final", stopped_by_user):
                lines = r["detail"].strip().splitlines()  # a traceback: its last line says it
                detail = f"{r['status']}: {lines[-1]}" if lines else r["status"]
                analyses.mark_rank_dead(r["rank"], detail)
        try:
            analyses.model.finish()
        except ModelInputError as exc:
            log.warning("the trace is incomplete: %s", exc)
        report = analyses.report()
        return format_report(report, source=info.get("journal")), exit_code(report)

    def stop(self) -> None:
        """Stop the central process (a run still open is ended and its journal closed)."""
        self.central.stop()
        self.pump()
