"""A live run's functional model, built from the feed's messages with one policy for bad records.

:class:`LiveRun` is the consumer side of :mod:`mpvis.collector.feed`: the
thread that owns the model (``mpvis run``'s main thread, the window's GUI
thread) hands it each :data:`~mpvis.collector.feed.FeedMessage` in order;
it builds the model and its analyses (MPVisualizer, section 2) and returns
what a person should be told.  ``mpvis run`` / ``mpvis demo`` headless and the
window use it alike, so a run gives the same model and the same report in
either.

**Bad records, one policy.**  A bad record is reported once, with what rule
it breaks and where (its rank and seq), and counted as lost; every good record
is kept:

* one the central process refuses (a per-record rule, a gap in its rank's
  ``seq``, a rank another collector serves; docs/reliability.md) arrives as a
  :class:`~mpvis.collector.feed.BadRecord` and is counted;
* one the model refuses (a rule that needs context: a consume of a receive
  that is not one, a wait on an unknown request...; docs/model.md) is
  reported the same way.  The records before it stay, and the rest of its
  batch is fed again without it.  Its rank cannot go on past a hole in its
  ``seq``: it is marked dead there (``bad record at seq S: rule``), and its
  later records are counted as lost, one :class:`RecordsLost` per rank at the
  run's end.  Messages it sent later are then the model's lost sends.
* a consume whose send never came, found when the run ends, is reported the
  same way but not lost: the record is in the trace and the model.

:meth:`LiveRun.losses` lists every loss and :meth:`LiveRun.incomplete` says
it in one line: ``mpvis run`` prints it and exits 4, the window shows it.

**Rank ends.**  A rank that leaves without ``final`` is marked dead at once
(with the last line of its detail: a traceback's), unless it is suspended in a
blocking call, where a stopped run leaves it to show where it waited.  At the
run's end every rank the end states as not ``final`` is marked dead too,
except, in an interrupted run, the ranks the user stopped and those suspended in
a blocking call (whatever their library said as the stop signal reached them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mpvis.analysis.pipeline import Analyses
from mpvis.collector.feed import (
    REFUSED_BY_CENTRAL,
    BadRecord,
    FeedMessage,
    RankLeft,
    RecordsArrived,
    RecordsLost,
    RunEnded,
    RunStarted,
    StreamFailed,
)
from mpvis.collector.model_columns import model_batch
from mpvis.model.errors import ModelInputError
from mpvis.protocol import messages as wire
from mpvis.protocol.compact_columns import CompactColumns
from mpvis.protocol.record_types import Record

__all__ = ["LiveRun", "Notice", "RankDied"]

BY_MODEL = "the model"
#: Found when the run ended (a consume whose send never came): reported, not lost.
AT_END = "the model at the run's end"


@dataclass(frozen=True)
class RankDied:
    """The run's model marked ``rank`` dead: ``reason`` says how it ended."""

    rank: int
    reason: str

    def __str__(self) -> str:
        return f"rank {self.rank} died: {self.reason}"


#: What :meth:`LiveRun.take` asks to tell a person (``str()`` of each is the text).
Notice = BadRecord | RecordsLost | RankDied | StreamFailed


class LiveRun:
    """The model of the run a feed delivers; see the module docstring.

    :attr:`analyses` (the model is ``analyses.model``) exists from
    :class:`RunStarted` on; :attr:`ended` holds the run's end once it has come.
    """

    def __init__(self) -> None:
        self.analyses: Analyses | None = None
        self.header: Record | None = None
        self.journal: Path | None = None
        self.ended: RunEnded | None = None
        #: every bad record reported (the central process lists at most 20)
        self.bad: list[BadRecord] = []
        #: rank -> (seq of its bad record, its later records dropped)
        self.cut: dict[int, tuple[int, int]] = {}
        #: what the central process lost, as its feed said at the run's end
        self.central_lost: list[RecordsLost] = []
        self.last_records = time.monotonic()

    def take(self, msg: FeedMessage) -> list[Notice]:
        """Apply ``msg`` to the model; return what to tell (bad records, deaths...)."""
        if isinstance(msg, RunStarted):
            self.header, self.journal = msg.header, msg.journal
            self.analyses = Analyses.for_header(msg.header, validate=False)  # journal checked
            return []
        if isinstance(msg, StreamFailed):
            return [msg]
        if isinstance(msg, BadRecord):
            self.bad.append(msg)
            return [msg]
        if isinstance(msg, RecordsLost):
            self.central_lost.append(msg)  # said in one line by incomplete()
            return []
        if isinstance(msg, RunEnded):
            self.ended = msg
        if self.analyses is None:
            return []
        if isinstance(msg, RecordsArrived):
            self.last_records = time.monotonic()
            return self._feed(msg.records)
        if isinstance(msg, RankLeft):
            return self._left(msg)
        if isinstance(msg, RunEnded):
            return self._end(msg)
        return []

    # -- records ------------------------------------------------------------

    def _feed(self, records: Sequence[Record]) -> list[Notice]:
        """Add ``records``; a bad one is reported, its rank cut there, the rest fed again.

        A rank's compact batch (:class:`CompactColumns`) goes in as columns
        (:func:`~mpvis.collector.model_columns.model_batch`: no per-record
        extraction, no dicts: the analyzers read the model's columns), unless
        its rank is cut or its values need ``extract``."""
        assert self.analyses is not None
        model = self.analyses.model
        notices: list[Notice] = []
        if isinstance(records, CompactColumns) and records.rank not in self.cut:
            cols = model_batch(records, model.site_table)
            if cols is not None:
                try:
                    model.add_columns(cols)
                    return notices
                except ModelInputError as exc:
                    rest = self._refused(exc, records, notices)
                    if rest is None:
                        return notices
                    records = rest
        records = list(records)
        while records:
            if self.cut:
                records = self._without_cut(records)
            try:
                model.add_batch(records)
                return notices
            except ModelInputError as exc:
                rest = self._refused(exc, records, notices)
                if rest is None:
                    return notices
                records = rest
        return notices

    def _refused(self, exc: ModelInputError, records: Sequence[Record], notices: list[Notice]
                 ) -> list[Record] | None:
        """The model refused a record of ``records``: report it (into ``notices``), cut
        its rank there; the records after it to feed again (``None``: none can be)."""
        bad = BadRecord(exc.rank, exc.seq, str(exc), BY_MODEL)
        self.bad.append(bad)
        notices.append(bad)
        if exc.index is None:  # not located in the batch: the rest cannot be trusted
            notices.append(RecordsLost(len(records), f"the batch of {bad.where}",
                                       "refused by the model"))
            return None
        if exc.rank is not None and exc.rank not in self.cut:
            self.cut[exc.rank] = (exc.seq if exc.seq is not None else -1, 0)
            notices.extend(self._mark_dead(
                exc.rank, f"bad record at seq {exc.seq}: {exc}", check_suspended=False))
        return list(records[exc.index + 1:])

    def _without_cut(self, records: list[Record]) -> list[Record]:
        """``records`` less those of ranks cut after a bad record (counted as lost)."""
        kept = [r for r in records if r["rank"] not in self.cut]
        if len(kept) < len(records):
            for r in records:
                rank = r["rank"]
                if rank in self.cut:
                    seq, n = self.cut[rank]
                    self.cut[rank] = (seq, n + 1)
        return kept

    # -- ends ---------------------------------------------------------------

    def _mark_dead(self, rank: int, reason: str, *, check_suspended: bool = True) -> list[Notice]:
        a = self.analyses
        assert a is not None
        m = a.model
        if rank in m.dead or (check_suspended and m.status(rank) == "suspended"):
            return []
        a.mark_rank_dead(rank, reason)
        return [RankDied(rank, reason)]

    def _left(self, msg: RankLeft) -> list[Notice]:
        if not msg.died or msg.rank in self.cut:
            return []
        return self._mark_dead(msg.rank, msg.reason())

    def _end(self, msg: RunEnded) -> list[Notice]:
        notices: list[Notice] = []
        stopped_by_user = wire.KILLED if msg.interrupted else None
        for end in msg.ranks:
            if end.status not in (wire.FINAL, stopped_by_user) and end.rank not in self.cut:
                reason = RankLeft(end.rank, end.status, end.detail).reason()
                # A stopped run leaves a rank blocked in a call where it waited,
                # also when its library said "crashed: stopped by signal" on the
                # way out (the C library ships its records on SIGINT/SIGTERM).
                notices += self._mark_dead(end.rank, reason, check_suspended=msg.interrupted)
        return notices + self.finish()

    def finish(self) -> list[Notice]:
        """No more records will come (the run ended, or its end will never come):
        settle the model (lost sends, what waited for later records)."""
        a = self.analyses
        if a is None or a.model.input_ended:
            return []
        try:
            a.model.finish()
        except ModelInputError as exc:
            bad = BadRecord(exc.rank, exc.seq, str(exc), AT_END)
            self.bad.append(bad)
            return [bad]
        return []

    # -- what was lost ------------------------------------------------------

    def losses(self) -> list[RecordsLost]:
        """Every loss known so far: the central process's (refused, unwritten; counted
        in full at the run's end), the records the model refused, and the records
        of ranks cut after one."""
        if self.ended is not None:
            lost = list(self.central_lost)
        else:
            refused = sum(b.by not in (BY_MODEL, AT_END) for b in self.bad)
            lost = [RecordsLost(refused, REFUSED_BY_CENTRAL)] if refused else []
        by_model = sum(b.by == BY_MODEL for b in self.bad)
        if by_model:
            lost.append(RecordsLost(by_model, "refused by the model (see above)"))
        for rank, (seq, n) in sorted(self.cut.items()):
            if n:
                lost.append(RecordsLost(n, f"after its bad record at seq {seq}", f"rank {rank}"))
        return lost

    def incomplete(self, extra: list[RecordsLost] | None = None, *,
                   end_missing: bool = False) -> str | None:
        """One line saying how many records were lost and why, or ``None`` if none
        were (as far as the run can tell).  ``extra``: losses known elsewhere (the
        collector's unacknowledged batches); ``end_missing``: the run's end never
        came (said even when nothing else was lost)."""
        lost = self.losses() + list(extra or ())
        why = [str(x) for x in lost]
        if end_missing:
            why.append("the end of the run was not recorded")
        if not why:
            return None
        return (f"the trace is incomplete: {sum(x.count for x in lost)} records lost: "
                + "; ".join(why))
