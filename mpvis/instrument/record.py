"""Record mode: vector timestamps, Netzer and Miller's race check, the race record.

Netzer and Miller (netzer-miller-optimal-tracing-replay, section 4.1 and
Figure 3a) trace only racing messages.  After each receive ``Recv`` took the
message sent by ``Send``, the check finds ``PrevRecv``, the latest earlier
receive of the same process that could have accepted that message, and traces
the delivery iff ``PrevRecv`` did not happen before ``Send``.  Section 5.1:
happened-before is known from vector timestamps piggybacked on every message;
``PrevRecv`` happened before ``Send`` iff the sender's timestamp slot for this
process is at least ``PrevRecv``'s event number.

:class:`RaceDetector` is that algorithm, free of MPI, with the trace's ``seq``
as event numbers.  Its contracts:

* a receive's *event number* for the check is its ``consume`` seq (the message
  is certainly matched then; using the posting seq would miss races of
  nonblocking receives that were still pending when their process sent on);
* "could have accepted" compares the receive's arguments (``-1`` wildcards)
  with the message's communicator, source and tag, as MPI matching does;
* a previous receive whose message came from the *same sender* is skipped:
  MPI's non-overtaking rule means it could never have taken the later
  message, and in the paper's terms two sends of one process are never both
  just after a frontier (Definition 3.1), so they never race.  ``PrevRecv`` is
  the latest previous receive, among those accepting the message, whose
  message came from another sender (this keeps Lemma 1's argument: any
  earlier such receive precedes it in program order);
* timestamps only grow through point-to-point messages; collectives add no
  order here, which can only make more deliveries look racing (a superset of
  Figure 3a's, still sufficient for replay by Theorem 2);
* ``all`` mode (the baseline of "tracing every message") writes every delivery.

:class:`RecordHooks` plugs the detector into the trace library through
:mod:`mpvis.instrument.hooks`: ``outgoing`` attaches the timestamp,
``force_source`` remembers each receive's arguments (and changes nothing),
``incoming`` runs the check and the consume chain of :mod:`record_file`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpvis.instrument.hooks import MessageHooks
from mpvis.instrument.record_file import RaceEntry, RecordWriter, chain

__all__ = ["DEFAULT_CHECK_EVERY", "RaceDetector", "RecordHooks"]

ANY = -1
#: Consumes between two ``check`` lines of the record.
DEFAULT_CHECK_EVERY = 256

#: Latest receive per argument pattern: (consume seq, recv seq, sender, send seq).
_Last = tuple[int, int, int, int]


class RaceDetector:
    """Vector timestamp of one process and Figure 3a's check (module docstring)."""

    __slots__ = ("_last", "rank", "vt")

    def __init__(self, rank: int, nprocs: int) -> None:
        self.rank = rank
        self.vt = [-1] * nprocs
        # Per receive pattern: the latest receive, then the latest one whose
        # message came from another sender than the latest's (at most two).
        self._last: dict[tuple[int, int, int], list[_Last]] = {}

    def stamp(self, send_seq: int) -> list[int]:
        """The timestamp to piggyback on the message sent as event ``send_seq``."""
        vt = self.vt
        vt[self.rank] = send_seq
        return vt.copy()

    def deliver(
        self,
        comm: int,
        pattern: tuple[int, int],
        recv_seq: int,
        consume_seq: int,
        *,
        src: int,
        tag: int,
        sender_vt: list[int],
    ) -> RaceEntry | None:
        """Account for receive ``recv_seq`` (arguments ``pattern``) taking a message.

        ``sender_vt`` is the timestamp the message carried (its slot ``src`` is
        the send's seq).  Returns the race entry when the delivery races.
        """
        last = self._last
        prev: _Last | None = None
        for key in ((comm, src, tag), (comm, ANY, tag), (comm, src, ANY), (comm, ANY, ANY)):
            for cand in last.get(key, ()):
                if cand[2] != src:  # same sender: FIFO, never a race (module docstring)
                    if prev is None or cand[0] > prev[0]:
                        prev = cand
                    break
        send_seq = sender_vt[src]
        entry = None
        if prev is not None and prev[0] > sender_vt[self.rank]:
            entry = RaceEntry(
                comm, recv_seq, consume_seq, src, tag, send_seq, (prev[1], prev[2], prev[3])
            )
        vt = self.vt = list(map(max, self.vt, sender_vt))
        vt[self.rank] = consume_seq
        new = (consume_seq, recv_seq, src, send_seq)
        key = (comm, pattern[0], pattern[1])
        old = last.get(key)
        if old is None:
            last[key] = [new]
        elif old[0][2] == src:
            old[0] = new
        else:
            last[key] = [new, old[0]]
        return entry


class RecordHooks(MessageHooks):
    """Record mode in one rank: writes ``DIR/rank-<r>.jsonl`` (see :mod:`record_file`).

    ``next_seq`` returns the trace recorder's next ``seq`` (the consume just
    recorded is ``next_seq() - 1`` when :meth:`incoming` runs).
    """

    def __init__(
        self,
        directory: Path,
        rank: int,
        nprocs: int,
        next_seq: Callable[[], int],
        *,
        record_all: bool = False,
        check_every: int = DEFAULT_CHECK_EVERY,
    ) -> None:
        self.detector = RaceDetector(rank, nprocs)
        self.record_all = record_all
        self.check_every = check_every
        self.writer = RecordWriter(
            directory, rank, nprocs, "all" if record_all else "races", check_every
        )
        self._next_seq = next_seq
        self._patterns: dict[int, tuple[int, int]] = {}
        self.sends = 0
        self.consumes = 0
        self.recorded = 0
        self.digest = 0

    def outgoing(self, comm: int, dest: int, tag: int, send_seq: int) -> Any:
        self.sends += 1
        return self.detector.stamp(send_seq)

    def force_source(self, comm: int, recv_seq: int, src: int, tag: int) -> tuple[int, int]:
        self._patterns[recv_seq] = (src, tag)
        return src, tag

    def incoming(  # noqa: PLR0917 (the hook's signature)
        self, comm: int, recv_seq: int, src: int, tag: int, send_seq: int | None, extra: Any
    ) -> None:
        if not isinstance(extra, list):  # a sender outside record mode: nothing to check
            return
        # A receive completed through a matched probe has no recorded arguments:
        # assume wildcards, which can only add races.
        pattern = self._patterns.pop(recv_seq, (ANY, ANY))
        consume_seq = self._next_seq() - 1
        entry = self.detector.deliver(
            comm, pattern, recv_seq, consume_seq, src=src, tag=tag, sender_vt=extra
        )
        if entry is None and self.record_all:
            entry = RaceEntry(comm, recv_seq, consume_seq, src, tag, extra[src], None)
        if entry is not None:
            self.recorded += 1
            self.writer.race(entry)
        self.digest = chain(self.digest, src, extra[src])
        self.consumes += 1
        if self.consumes % self.check_every == 0:
            self.writer.check(self.consumes, recv_seq, self.digest)

    def log_any(self, at: int, index: int) -> None:
        """A ``Waitany`` that started at event ``at`` chose request ``index``."""
        self.writer.any(at, index)

    def close(self) -> None:
        """Write the ``end`` line (call once the program has finished)."""
        self.writer.close(self.sends, self.consumes, self.digest)
