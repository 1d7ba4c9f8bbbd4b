"""Vector clocks stored sparsely: a full vector only where clocks merge.

The clock of event ``e`` of rank ``r`` is the vector ``vc(e)`` where
``vc(e)[j]`` counts the events of rank ``j`` that happened before ``e`` or are
``e`` (Fidge/Mattern clocks, in the counting form).  Along one rank a clock only
changes off the diagonal at *merge* events (a ``consume``, a ``coll_exit``), so
only those store a row; any other event's clock is the last merge row at or
before it on its rank with the diagonal set to ``seq + 1``.  That keeps memory
to one row per merge event, not per event, and answers "does a happen before
b" with one binary search (and a short scan, below).

Rows are stored compactly (:mod:`mpvis.model._ccausal`, "clock rows"): a
merge keeps either its whole row (a *dense* row) or only the components that
differ from its rank's previous merge (a *delta record* of (rank, value)
pairs; the rank's own component is always ``seq + 1`` and is not stored).  A
rank's first merge, the first after :data:`FULL_EVERY` - 1 records, and one
that changes more components than :func:`record_max` (a collective exit,
typically) keep dense rows.  Most consumes change a handful of components,
so a merge costs tens of bytes, not ``nprocs`` counts (the clocks of the
1M-event, 64-rank trace: 44.5 -> 10.3 MB); a row is read back from the last
dense row at or before it and at most ``FULL_EVERY - 1`` records.  Dense
rows live in fixed-size chunks (no reallocation as the run grows); row 0 is
all zeros (the rows of events before a rank's first merge); a collective's
joined row (:meth:`ClockStore.join`) is a dense row too, and the exits of an
all-members collective refer to it (their rows are that row but for their
own component).  The merges happen
in C, while ranks are walked in causal order (:meth:`ClockStore.releaser`):
Python sees a merge only where it decides its cause (a collective exit, an
event forced at the end of input).

Components are counts of events of one rank, so dense rows are stored as
16-bit unsigned integers while every count fits (65,535 events per rank); the
first merge that needs a larger count widens every chunk to 32 bits, once.
Queries return 32-bit values whatever the storage.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from mpvis.model import _ccausal
from mpvis.model.store import EventStore
from mpvis.protocol import records as R

IntVec = npt.NDArray[np.int32]

#: What the caller decided for the event a :meth:`ClockStore.walk` resumes at:
#: ``(how, x, lamport)``, ``how`` one of the ``CAUSE_*`` codes.
Cause = tuple[int, int, int]
CAUSE_WALK, CAUSE_NONE, CAUSE_EVENT, CAUSE_JOINED = 0, 1, 2, 3
#: Nothing decided: the walk looks at the event's cause itself.
WALK: Final[Cause] = (CAUSE_WALK, 0, 0)
#: Forced at the end of input with nothing to merge.
NO_CAUSE: Final[Cause] = (CAUSE_NONE, 0, 0)


def event_cause(g: int) -> Cause:
    """Merge the clock of the processed event of global index ``g`` (a lost
    send's stand-in: its rank's last recorded event)."""
    return (CAUSE_EVENT, g, 0)


def joined_cause(row: int, lamport: int) -> Cause:
    """Merge a row made by :meth:`ClockStore.join`; ``lamport`` is the largest
    Lamport clock of the events joined."""
    return (CAUSE_JOINED, row, lamport)


#: Why a walk stopped at an event the caller decides (:data:`Decide`).
END, NO_SEND, SEND_LATE, COLL_EXIT = 0, 1, 2, 3
_WIDEN = 4
_MERGE_KINDS = (R.KIND_CODE[R.CONSUME], R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT])

#: What the caller decides where a walk stopped: ``decide(rank, why, seq,
#: forced)`` -> the :data:`Cause` of event ``seq`` of ``rank`` or ``None`` (it
#: waits; the caller registered what for).  ``why`` is :data:`NO_SEND` (a
#: consume whose send is unknown), :data:`SEND_LATE` (a consume whose send is
#: not processed: only the stop forced at the end of input) or
#: :data:`COLL_EXIT` (a collective exit); ``forced``: the end of input forces it.
Decide = Callable[[int, int, int, bool], Cause | None]
#: See :meth:`ClockStore.releaser`.
Releaser = Callable[[set[int], int], None]


class CollectiveCounts:
    """The collective instances whose entries the walk counts in C
    (:meth:`ClockStore.releaser`), numbered 0, 1, ... (instance ids).

    Instance ``i`` is complete when ``count[i]`` (its entries processed)
    reaches ``need[i]`` (its members); ``joined[i]`` is set once its joined
    row is made (the walk then leaves its exits to the caller);
    ``waiting[i]`` is ``None`` or the set of ranks stopped at one of its
    exits until it is complete (emptied to ``None`` when they are woken).
    ``at[r]`` and ``iid[r]`` list rank ``r``'s registered collective events
    in seq order (entries, and exits of all-members operations) with their
    instance id, -1 for an event the caller decides itself.  Every array is
    held by the walk, not copied: only append between walks."""

    __slots__ = ("at", "count", "iid", "joined", "need", "waiting")

    def __init__(self, nprocs: int) -> None:
        self.at: list[array[int]] = [array("i") for _ in range(nprocs)]
        self.iid: list[array[int]] = [array("i") for _ in range(nprocs)]
        self.need = array("i")
        self.count = array("i")
        self.joined = array("b")
        self.waiting: list[set[int] | None] = []

    def new_instance(self, members: int) -> int:
        """Number an instance of ``members`` members; returns its id."""
        self.need.append(members)
        self.count.append(0)
        self.joined.append(0)
        self.waiting.append(None)
        return len(self.need) - 1

    def instance_at(self, rank: int, seq: int) -> int:
        """The instance id registered for event ``(rank, seq)``, -1 if none."""
        at = self.at[rank]
        i = bisect_left(at, seq)
        return self.iid[rank][i] if i < len(at) and at[i] == seq else -1

    def truncate(self, rank: int, cut: int) -> None:
        """Forget rank ``rank``'s events from seq ``cut`` on."""
        i = bisect_left(self.at[rank], cut)
        del self.at[rank][i:]
        del self.iid[rank][i:]

    def entered(self, iid: int) -> set[int] | None:
        """Count a processed entry of instance ``iid`` (the walk's rule, for
        entries handed to Python); returns the ranks to wake, if it is now
        complete and some wait."""
        self.count[iid] += 1
        if self.count[iid] < self.need[iid]:
            return None
        ranks, self.waiting[iid] = self.waiting[iid], None
        return ranks

    def wait(self, iid: int, rank: int) -> None:
        """``rank`` waits at an exit of instance ``iid`` for its last entry."""
        ranks = self.waiting[iid]
        if ranks is None:
            self.waiting[iid] = ranks = set()
        ranks.add(rank)

#: Bytes of one chunk of rows at most (its row count is a power of two, at most 8192,
#: so a header with many ranks never reserves rows it may not need).
_CHUNK_BYTES = 32 << 20
_MAX_SHIFT = 13
#: Row 0 is all zeros: the source of a merge that has nothing earlier to merge.
ZERO_ROW = 0
#: At most this many merges of a rank in a row share one dense row (the
#: first keeps it, the others keep delta records).
FULL_EVERY = 16


def record_max(nprocs: int) -> int:
    """The most components a delta record holds: one that changes more keeps
    a dense row instead (a record of ``c`` changes is ``4 + 8c`` bytes, a
    narrow dense row ``2 * nprocs``)."""
    return max((nprocs // 2 - 1) // 2, 0)
#: The narrow storage of the rows and the largest component it holds.
_NARROW = np.uint16
_NARROW_MAX = int(np.iinfo(_NARROW).max)


class ClockStore:
    """Merge rows per rank, in chunks (see the module docstring)."""

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        shift = _MAX_SHIFT
        while shift > 0 and (4 * nprocs) << shift > _CHUNK_BYTES:
            shift -= 1
        self._shift = shift
        self._mask = (1 << shift) - 1
        self._dtype: type[np.unsignedinteger[Any]] | type[np.int32] = _NARROW
        self._limit = _NARROW_MAX  # the largest component the rows can hold
        self._chunks: list[npt.NDArray[Any]] = [np.zeros((1 << shift, nprocs), dtype=_NARROW)]
        self._nrows = 1  # row 0: ZERO_ROW
        #: Each rank's merge events (seqs, in order) and where each one's row is:
        #: a dense row id (every :data:`FULL_EVERY`-th merge) or a delta record's
        #: offset in ``_deltas``.
        self.merge_seq: list[array[int]] = [array("i") for _ in range(nprocs)]
        self.merge_row: list[array[int]] = [array("i") for _ in range(nprocs)]
        self._deltas = array("i")
        #: What the C functions read the rows from (every object held, not copied).
        self._rows_ctx = (self._chunks, shift, self.merge_seq, self.merge_row, self._deltas,
                          FULL_EVERY, record_max(nprocs))

    # -- building ---------------------------------------------------------
    def _fit(self, count: int) -> None:
        """Make the rows able to hold the component ``count`` (widen them when
        the narrow storage cannot); before a new row is reserved."""
        if count > self._limit:
            self._widen()

    def _widen(self) -> None:
        """Store the rows as 32 bits from now on (once: they replace the chunks)."""
        for i, chunk in enumerate(self._chunks):
            self._chunks[i] = chunk.astype(np.int32)
        self._dtype = np.int32
        self._limit = int(np.iinfo(np.int32).max)

    def _new_row(self) -> tuple[int, npt.NDArray[Any]]:
        """Reserve a row; return its id and a writable view of it."""
        row = self._nrows
        c = row >> self._shift
        if c == len(self._chunks):
            self._chunks.append(np.empty((1 << self._shift, self.nprocs), dtype=self._dtype))
        self._nrows = row + 1
        return row, self._chunks[c][row & self._mask]

    def join(self, others: list[tuple[int, int]]) -> int:
        """A row (owned by no event) holding the componentwise maximum of the
        clocks of ``others``, for :func:`joined_cause`: the members of a
        collective share it."""
        self._fit(max((s for _, s in others), default=-1) + 1)
        acc = np.empty(self.nprocs, dtype=np.int32)
        _ccausal.join(self._rows_ctx, array("i", [q for q, _ in others]),
                      array("i", [s for _, s in others]), acc)
        row, out = self._new_row()
        out[:] = acc
        return row

    def releaser(self, store: EventStore, merge_at: list[array[int]], done: list[int], *,
                 ahead: array[int], lam_last: array[int], waiters: list[dict[int, set[int]]],
                 sink: set[int], out: array[int], decide: Decide,
                 entered: Callable[[int, list[int]], None],
                 collectives: CollectiveCounts) -> Releaser:
        """Causal release's walks over ``store``, in C (:func:`_ccausal.advance
        <mpvis.model._ccausal.advance>`, the one implementation): a function
        ``advance(work, force)`` that pops ranks from the set ``work`` and walks
        each until ``work`` is empty.

        Walking rank ``r`` processes its events from ``done[r]`` in seq order:
        each consume whose send is processed gets its merge row, every event
        its Lamport clock (the store's ``c_lamport``; ``lam_last[r]`` is its
        last processed event's).  A consume whose send ``(q, qs)`` is not
        processed makes ``r`` wait: ``waiters[q][qs]`` gets ``r``.  Where the
        caller decides (``decide``: a collective exit, a consume whose send is
        unknown, the first merge stop of rank ``force`` when >= 0, forced at
        the end of input) the walk asks it and goes on with the cause it
        returns, or stops.  The collective entries a walk passes go to
        ``entered(r, seqs)`` (``done[r]`` already past them) before the next
        decision of that walk, or at its end.  After a walk,
        ``done[r]`` is past the events processed, their global indices are
        appended to ``out``, the ranks waiting for one of them join ``work``,
        and so do the ranks in ``sink`` (emptied): the ranks the caller woke.
        The walk counts the entries of the collective instances
        ``collectives`` numbers itself (:class:`CollectiveCounts`; the other
        entries go to ``entered``) and, at an exit of such an instance that is
        not complete nor joined (not forced), makes the rank wait in the
        instance's set of waiting ranks instead of asking ``decide``; when an
        instance's last entry is counted, its waiting ranks join the work
        through ``sink``.  While entries handed to ``entered`` are pending in a
        walk, both are left to ``decide`` and ``entered`` (the ranks woken join
        ``sink`` in the order of their entries either way).
        ``ahead`` (``int64``, three per rank) holds a collective exit decided
        ahead: ``ahead[3 * q]`` its seq (-1: none), then its joined row
        (:meth:`join`) and the largest Lamport clock joined; the walk passes
        that exit without asking and sets its seq to -1.  ``merge_at[r]`` lists
        the seqs of rank ``r``'s consumes, collective entries and exits.
        Widening the rows and new chunks of rows happen during the call; the
        rows are consistent whenever ``decide`` or ``entered`` runs.

        ``store``'s columns and every list, dict, set and array passed are
        held, not copied: they must be the objects the caller keeps growing."""

        def decided(r: int, why: int, seq: int, forced: bool, nrows: int,  # noqa: PLR0917 (C calls it)
                    seqs: list[int]) -> tuple[int, int, int, int, int]:
            self._nrows = nrows
            if seqs:
                entered(r, seqs)
            cause = decide(r, why, seq, forced)
            how, x, lam = (-1, 0, 0) if cause is None else cause
            return how, x, lam, self._nrows, self._limit

        ctx = (store.by_rank, merge_at, store.c_kind.data, store.c_partner.data,
               store.c_rank.data, store.c_seq.data, store.c_lamport.data, done, ahead,
               self._rows_ctx, *_MERGE_KINDS, lam_last, waiters, sink, out, self._grow,
               decided, entered, collectives.at, collectives.iid, collectives.need,
               collectives.count, collectives.joined, collectives.waiting)
        c_advance = _ccausal.advance

        def advance(work: set[int], force: int) -> None:
            self._nrows = c_advance(ctx, work, force, self._nrows, self._limit)

        return advance

    def _grow(self, status: int) -> int:
        """For the walk: widen the rows (``status`` 4) or add a chunk of rows;
        returns the largest component the rows now hold."""
        if status == _WIDEN:
            self._widen()
        else:
            self._chunks.append(np.empty((1 << self._shift, self.nprocs), dtype=self._dtype))
        return self._limit

    # -- queries --------------------------------------------------------
    def clock(self, rank: int, seq: int) -> IntVec:
        """The full vector clock of event ``(rank, seq)`` (a fresh array)."""
        vec = np.empty(self.nprocs, dtype=np.int32)
        _ccausal.clock_row(self._rows_ctx, rank, seq, vec)
        vec[rank] = seq + 1
        return vec

    def component(self, rank: int, seq: int, j: int) -> int:
        """``clock(rank, s)[j]`` without building the vector."""
        if j == rank:
            return seq + 1
        return _ccausal.component(self._rows_ctx, rank, seq, j)

    def happened_before(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Lamport's strict relation: ``a`` happened before ``b``."""
        if a[0] == b[0]:
            return a[1] < b[1]
        return self.component(b[0], b[1], a[0]) > a[1]

    def happened_before_many(self, a_rank: npt.NDArray[np.int64], a_seq: npt.NDArray[np.int64],
                             b_rank: npt.NDArray[np.int64], b_seq: npt.NDArray[np.int64]
                             ) -> npt.NDArray[np.bool_]:
        """:meth:`happened_before` of each pair ``(a_rank[i], a_seq[i])``,
        ``(b_rank[i], b_seq[i])``, in one C call (the events must exist)."""
        a_rank, a_seq, b_rank, b_seq = (np.ascontiguousarray(x, dtype=np.int64)
                                        for x in (a_rank, a_seq, b_rank, b_seq))
        comp = np.empty(len(a_rank), dtype=np.int32)
        _ccausal.components(self._rows_ctx, b_rank, b_seq, a_rank, comp)
        out: npt.NDArray[np.bool_] = np.where(a_rank == b_rank, a_seq < b_seq, comp > a_seq)
        return out

    def rows(self, rank: int, start: int = 0) -> IntVec:
        """The merge rows of ``rank`` from its ``start``-th on, as a 2-D array
        (one row per merge event, in seq order; see :attr:`merge_seq`)."""
        out = np.empty((max(len(self.merge_seq[rank]) - start, 0), self.nprocs), dtype=np.int32)
        _ccausal.rows(self._rows_ctx, rank, start, out)
        return out

    def column(self, rank: int, j: int, count: int) -> IntVec:
        """``clock(rank, s)[j]`` for ``s`` in ``0..count-1``, vectorised."""
        if j == rank:
            return np.arange(1, count + 1, dtype=np.int32)
        out = np.zeros(count, dtype=np.int32)
        if not self.merge_seq[rank] or count == 0:
            return out
        seqs = np.frombuffer(self.merge_seq[rank], dtype=np.int32)
        vals = self.rows(rank)[:, j]
        idx = np.searchsorted(seqs, np.arange(count), side="right") - 1
        ok = idx >= 0
        out[ok] = vals[idx[ok]]
        return out

    def nbytes(self) -> int:
        """Bytes the rows take: the dense rows' chunks as reserved, the delta
        records and the merge lists."""
        return sum(c.nbytes for c in self._chunks) + sum(
            a.itemsize * len(a) for a in [*self.merge_seq, *self.merge_row, self._deltas])
