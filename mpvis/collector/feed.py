"""The live feed: what the central process receives, as typed messages to subscribers.

MPVisualizer, section 2: the central process feeds the manager that builds
the functional model.  Every consumer of a live run (``mpvis run`` and
``mpvis demo`` headless, the window) takes the run from one :class:`LiveFeed`:
it owns the :class:`~mpvis.collector.central.CentralProcess`, turns its
callbacks into the messages below and hands each to every subscriber, in the
order the central process produced them:

* :class:`RunStarted` once (the header and the journal file), then
* :class:`RecordsArrived` (journaled records, in arrival order),
  :class:`RankJoined` (a rank's first record), :class:`RankLeft` (its end as
  its launcher reported it) and :class:`BadRecord` (a record the central
  process refused: what rule it breaks, which rank and seq) as they come,
* :class:`RecordsLost` for what the central process lost in all (records
  refused, records it could not write), then :class:`RunEnded` once, with the
  run's outcome (counts of records written, refused and unwritten; every
  rank's end).

:class:`StreamFailed` comes from a producer beside the central process (the
built-in demo's stream thread) through :meth:`LiveFeed.post`.

Subscribers are called on the central process's server thread (or the
poster's): they must only hand the message over to their own thread (a
queue; the window's Qt signal), never touch a model there.  The consumer side,
building the model with the one policy for bad records, is
:class:`mpvis.collector.live_run.LiveRun`.

At most :data:`LISTED_BAD_RECORDS` :class:`BadRecord` messages are delivered
per run (a rank that leaves a gap in its ``seq`` has every later record
refused); :attr:`RunEnded.rejected` counts them all.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeAlias

from mpvis.collector.central import CentralProcess
from mpvis.protocol import messages as wire
from mpvis.protocol.compact_columns import CompactColumns
from mpvis.protocol.record_types import Record

__all__ = [
    "LISTED_BAD_RECORDS",
    "REFUSED_BY_CENTRAL",
    "BadRecord",
    "FeedMessage",
    "LiveFeed",
    "RankEnd",
    "RankJoined",
    "RankLeft",
    "RecordsArrived",
    "RecordsLost",
    "RunEnded",
    "RunStarted",
    "StreamFailed",
    "Subscriber",
]

log = logging.getLogger(__name__)

#: BadRecord messages delivered per run; later refusals are only counted.
LISTED_BAD_RECORDS = 20
#: Why records refused by the central process are lost.
REFUSED_BY_CENTRAL = ("refused by the central process (malformed or out of sequence, "
                      "see the log above)")


@dataclass(frozen=True)
class RunStarted:
    """A run's header is known; its records are journaled to ``journal``."""

    header: Record
    journal: Path


@dataclass(frozen=True)
class RecordsArrived:
    """Records journaled (checked per record, ``seq`` in order per rank), in arrival order:
    a list of dicts, or one rank's compact batch as columns
    (:class:`~mpvis.protocol.compact_columns.CompactColumns`, a sequence of the same
    dicts, built only if asked for: :class:`~mpvis.collector.live_run.LiveRun` feeds
    the model its columns)."""

    records: Sequence[Record]


@dataclass(frozen=True)
class RankJoined:
    """The first record of ``rank`` arrived."""

    rank: int


@dataclass(frozen=True)
class RankLeft:
    """``rank`` ended: ``status`` ``final``, ``crashed``, ``killed``...; ``detail`` says why
    (a traceback for a crash).  Delivered after the rank's records."""

    rank: int
    status: str
    detail: str = ""

    @property
    def died(self) -> bool:
        """It did not end normally."""
        return self.status != wire.FINAL

    def reason(self) -> str:
        """``status: last line of detail`` (a traceback's last line says it)."""
        lines = self.detail.strip().splitlines()
        return f"{self.status}: {lines[-1]}" if lines else self.status


@dataclass(frozen=True)
class BadRecord:
    """A record refused: ``what`` rule it breaks, at ``rank``/``seq`` (``None`` when the
    record does not say), refused ``by`` the central process or the model.
    The record is lost; the rest of its batch is kept."""

    rank: int | None
    seq: int | None
    what: str
    by: str = "the central process"

    @property
    def where(self) -> str:
        """``rank R, seq S`` (what the record says of itself)."""
        return f"rank {self.rank}, seq {self.seq}"

    def __str__(self) -> str:
        return f"bad record ({self.where}) refused by {self.by}: {self.what}"


@dataclass(frozen=True)
class RecordsLost:
    """``count`` records that are not in the model or the trace: ``why``, and ``where``
    (a rank, a file)."""

    count: int
    why: str
    where: str = ""

    def __str__(self) -> str:
        at = f" ({self.where})" if self.where else ""
        return f"{self.count} records {self.why}{at}"


@dataclass(frozen=True)
class RankEnd:
    """How one rank ended, as the run's end states it."""

    rank: int
    status: str
    detail: str = ""


@dataclass(frozen=True)
class RunEnded:
    """The run's end: what the journal holds and lost, and every rank's end.

    ``interrupted``: the user stopped the run (its killed ranks were stopped
    where they were); ``stopped``: the central process stopped before the run's
    end arrived."""

    journal: Path | None = None
    run: str = ""
    nprocs: int = 0
    records: int = 0
    rejected: int = 0
    duplicates: int = 0
    unwritten: int = 0
    journal_error: str | None = None
    refused_connections: int = 0
    ranks: tuple[RankEnd, ...] = ()
    exit_code: int | None = None
    interrupted: bool = False
    stopped: bool = False

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> RunEnded:
        """From the central process's ``on_run_end`` info."""
        journal = info.get("journal")
        return cls(
            journal=Path(journal) if journal else None,
            run=str(info.get("run", "")),
            nprocs=int(info.get("nprocs") or 0),
            records=int(info.get("records") or 0),
            rejected=int(info.get("rejected") or 0),
            duplicates=int(info.get("duplicates") or 0),
            unwritten=int(info.get("unwritten") or 0),
            journal_error=info.get("journal_error"),
            refused_connections=int(info.get("refused_connections") or 0),
            ranks=tuple(RankEnd(int(r["rank"]), str(r["status"]), str(r.get("detail", "")))
                        for r in info.get("ranks", ())),
            exit_code=info.get("exit_code"),
            interrupted=bool(info.get("interrupted")),
            stopped=bool(info.get("stopped")),
        )

    def losses(self) -> list[RecordsLost]:
        """What the central process lost: records refused, records unwritten."""
        lost = []
        if self.rejected:
            lost.append(RecordsLost(self.rejected, REFUSED_BY_CENTRAL))
        if self.unwritten or self.journal_error:
            why = f"not written: {self.journal_error}" if self.journal_error else "not written"
            lost.append(RecordsLost(self.unwritten, why))
        return lost


@dataclass(frozen=True)
class StreamFailed:
    """A producer beside the central process failed (the demo's stream): ``text`` says why."""

    text: str


FeedMessage: TypeAlias = (
    RunStarted | RecordsArrived | RankJoined | RankLeft | BadRecord | RecordsLost | RunEnded
    | StreamFailed
)
Subscriber: TypeAlias = Callable[[FeedMessage], None]


@dataclass
class _RunState:
    """What the feed remembers of the run in progress."""

    nprocs: int = 0
    joined: set[int] = field(default_factory=set)
    listed_bad: int = 0


class LiveFeed:
    """A central process whose runs are delivered as :data:`FeedMessage` to subscribers.

    The arguments are :class:`~mpvis.collector.central.CentralProcess`'s (host,
    port, token, where journals go, TLS); :attr:`central` is the process itself
    (its address, token, :meth:`~CentralProcess.request_halt`...).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        journal_dir: str | Path | None = None,
        *,
        journal_path: str | Path | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._run = _RunState()
        self.central = CentralProcess(
            host, port, token, journal_dir, journal_path=journal_path, tls=tls,
            on_run_start=self._started, on_records=self._records,
            on_rank_end=self._rank_end, on_run_end=self._ended, on_refused=self._refused,
        )

    def subscribe(self, subscriber: Subscriber) -> None:
        """Deliver every later message to ``subscriber`` (called on the producer's thread)."""
        with self._lock:
            self._subscribers.append(subscriber)

    def post(self, message: FeedMessage) -> None:
        """Deliver ``message`` to every subscriber (any thread); a subscriber that
        fails is logged and does not keep the message from the others."""
        with self._lock:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(message)
            except Exception:
                log.exception("live feed: a subscriber failed")

    def start(self) -> LiveFeed:
        """Start the central process (listening once this returns)."""
        self.central.start()
        return self

    def stop(self) -> None:
        """Stop the central process (a run still open ends: :class:`RunEnded` ``stopped``)."""
        self.central.stop()

    # -- the central process's callbacks (its server thread) ------------------

    def _started(self, header: Record, journal: Path) -> None:
        self._run = _RunState(nprocs=int(header.get("nprocs") or 0))
        self.post(RunStarted(header, journal))

    def _records(self, records: Sequence[Record]) -> None:
        run = self._run
        new: list[int] = []
        if len(run.joined) < run.nprocs:  # once every rank is in, no per-record work
            ranks = ({records.rank} if isinstance(records, CompactColumns)
                     else set(map(itemgetter("rank"), records)))
            new = sorted(ranks - run.joined)
            run.joined.update(new)
        for rank in new:
            self.post(RankJoined(rank))
        self.post(RecordsArrived(records))

    def _rank_end(self, rank: int, status: str, detail: str) -> None:
        self.post(RankLeft(rank, status, detail))

    def _refused(self, rec: object, reason: str) -> None:
        run = self._run
        run.listed_bad += 1
        if run.listed_bad > LISTED_BAD_RECORDS:
            return
        rank = rec.get("rank") if isinstance(rec, dict) else None
        seq = rec.get("seq") if isinstance(rec, dict) else None
        self.post(BadRecord(rank if type(rank) is int else None,
                            seq if type(seq) is int else None, reason))

    def _ended(self, info: dict[str, Any]) -> None:
        end = RunEnded.from_info(info)
        for lost in end.losses():
            self.post(lost)
        self.post(end)
