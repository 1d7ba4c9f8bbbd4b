"""Causality cones (causal histories) and future cones of events.

MPVisualizer (``mpvisualizer-race-detection.txt`` section 1) draws the
causality cone of an event the user selects -- every event that can have
influenced it -- and evaluates predicates on the cone's *frontier*, the last
event of the cone in each process.  Spec ``trace-format.md``, "Cones and
predicates", fixes the meaning: the cone of ``e`` is ``e`` and every event
that happened before it (the spec's happened-before: program order,
send -> consume, collectives' data dependencies, which the model's vector
clocks implement).  The *future cone* of ``e`` is every event ``e`` happened
before (``e`` excluded).

Both are unions of one interval per rank, so a :class:`Cone` holds two
integers per rank:

* the past cone on rank ``r`` is seqs ``0 .. past[r] - 1`` where
  ``past = vc(e)`` (the vector clock counts the events of each rank in the
  causal past of ``e``, ``e`` included); the frontier is ``past[r] - 1``;
* the future cone on rank ``r`` is seqs ``future[r] .. known[r] - 1``:
  event ``f`` of ``r`` is in it iff ``vc(f)[q] > s`` for ``e = (q, s)``, and
  that clock component is monotone along ``r``, so ``future[r]`` is a binary
  search.  Between two merge events (``consume``, ``coll_exit``) a rank's
  clock does not change off the diagonal, so the search runs over the merge
  rows only and ``future[r]`` is always a merge event of ``r`` (or
  ``known[r]`` when the future cone misses ``r``).

:class:`ConeIndex` keeps, per rank, its merge rows column by column (one
contiguous array per other rank), extended when the model grows; a query then
costs ``O(nprocs log m)`` (``m`` merge events per rank).  Only causally
processed events (``m.done``) have clocks: in live mode the future cone covers
the events known so far (``known``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

__all__ = ["Cone", "ConeIndex", "cone_of"]

Key = tuple[int, int]
IntArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]
AnyArray = npt.NDArray[Any]


@dataclass(frozen=True)
class Cone:
    """The past and future cones of ``event`` (see the module docstring)."""

    event: Key
    #: per rank, the number of its events in the past cone (``vc(event)``)
    past: tuple[int, ...]
    #: per rank, the seq of its first event in the future cone (``known[r]`` if none)
    future: tuple[int, ...]
    #: per rank, the events with a known clock when the cone was computed
    known: tuple[int, ...]

    @property
    def frontier(self) -> tuple[int | None, ...]:
        """Seq of the past cone's last event on each rank, or ``None``."""
        return tuple(k - 1 if k > 0 else None for k in self.past)

    @property
    def future_frontier(self) -> tuple[int | None, ...]:
        """Seq of the future cone's first event on each rank, or ``None``."""
        return tuple(f if f < n else None for f, n in zip(self.future, self.known, strict=True))

    @property
    def size(self) -> int:
        """Events in the past cone, ``event`` included."""
        return sum(self.past)

    @property
    def future_size(self) -> int:
        """Events ``event`` happened before."""
        return sum(n - f for f, n in zip(self.future, self.known, strict=True))

    def in_past(self, rank: int, seq: int) -> bool:
        """Did ``(rank, seq)`` happen before ``event`` (or is it ``event``)?"""
        return seq < self.past[rank]

    def in_future(self, rank: int, seq: int) -> bool:
        """Did ``event`` happen before ``(rank, seq)``?"""
        return self.future[rank] <= seq < self.known[rank]

    def past_mask(self, ranks: AnyArray, seqs: AnyArray) -> BoolArray:
        """Vectorised :meth:`in_past` over parallel arrays (e.g. the model's
        ``c_rank``/``c_seq`` views, giving a mask by global index)."""
        return np.asarray(seqs < np.asarray(self.past, dtype=np.int64)[ranks])

    def future_mask(self, ranks: AnyArray, seqs: AnyArray) -> BoolArray:
        """Vectorised :meth:`in_future`."""
        lo = np.asarray(self.future, dtype=np.int64)[ranks]
        hi = np.asarray(self.known, dtype=np.int64)[ranks]
        return np.asarray((seqs >= lo) & (seqs < hi))

    def to_json(self) -> dict[str, Any]:
        """The object ``mpvis cone --json`` prints (spec, "Cones and predicates")."""
        return {
            "event": list(self.event),
            "frontier": list(self.frontier),
            "size": self.size,
            "future_size": self.future_size,
        }


class _RankRows:
    """The merge rows of one rank, stored column by column."""

    __slots__ = ("cols", "seqs")

    def __init__(self, nprocs: int) -> None:
        self.seqs: IntArray = np.zeros(0, dtype=np.int32)
        self.cols: list[IntArray] = [np.zeros(0, dtype=np.int32) for _ in range(nprocs)]


class ConeIndex:
    """Answers cone queries on one model; caches per-rank clock columns.

    The cache grows with the model (checked at each query), so one index may
    serve a live run.  Not thread-safe: query it on the thread that feeds the
    model, or after the model is finished.
    """

    def __init__(self, model: ModelManager) -> None:
        self.model = model
        # made when a query first needs the rank's (nprocs squared empty columns
        # up front took 30 ms of the window at 256 ranks, seconds at thousands)
        self._rows: list[_RankRows | None] = [None] * model.nprocs

    def _columns(self, rank: int) -> _RankRows:
        clocks = self.model.clocks
        cached = self._rows[rank]
        if cached is None:
            cached = self._rows[rank] = _RankRows(self.model.nprocs)
        have = len(cached.seqs)
        total = len(clocks.merge_seq[rank])
        if total > have:
            new = clocks.rows(rank, have)
            seqs = np.frombuffer(clocks.merge_seq[rank], dtype=np.int32)[have:]
            cached.seqs = np.concatenate((cached.seqs, seqs))
            cached.cols = [np.concatenate((col, new[:, j])) for j, col in enumerate(cached.cols)]
        return cached

    def cone(self, rank: int, seq: int) -> Cone:
        """The cones of event ``(rank, seq)``.

        Raises :class:`KeyError` if the event is not in the model or its clock
        is not known yet (it waits for a message or collective to arrive).
        """
        m = self.model
        if not (0 <= rank < m.nprocs and 0 <= seq < m.count(rank)):
            raise KeyError(f"event {rank}:{seq} is not in the trace")
        if not m.clock_ready((rank, seq)):
            raise KeyError(f"event {rank}:{seq} is not causally complete yet")
        past = tuple(int(x) for x in m.clocks.clock(rank, seq))
        known = tuple(m.done)
        future = []
        for r in range(m.nprocs):
            if r == rank:
                future.append(seq + 1)
                continue
            rows = self._columns(r)
            i = int(np.searchsorted(rows.cols[rank], seq, side="right"))
            future.append(int(rows.seqs[i]) if i < len(rows.seqs) else known[r])
        return Cone((rank, seq), past, tuple(future), known)


def cone_of(model: ModelManager, rank: int, seq: int) -> Cone:
    """One-off :meth:`ConeIndex.cone` (build a :class:`ConeIndex` for many queries)."""
    return ConeIndex(model).cone(rank, seq)
