"""Vector clocks stored sparsely: a full vector only where clocks merge.

The clock of event ``e`` of rank ``r`` is the vector ``vc(e)`` where
``vc(e)[j]`` counts the events of rank ``j`` that happened before ``e`` or are
``e`` (Fidge/Mattern clocks, in the counting form).  Along one rank a clock only
changes off the diagonal at *merge* events (a ``consume``, a ``coll_exit``), so
only those store a row; any other event's clock is the last merge row at or
before it on its rank with the diagonal set to ``seq + 1``.  That keeps memory
at ``4 * nprocs`` bytes per merge event, not per event, and answers
"does a happen before b" with one binary search.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

import numpy as np
import numpy.typing as npt

IntVec = npt.NDArray[np.int32]

_CHUNK = 8192


class ClockStore:
    """Merge rows per rank plus each rank's running clock."""

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        self._chunks: list[IntVec] = []
        self._nrows = 0
        self.merge_seq: list[array[int]] = [array("i") for _ in range(nprocs)]
        self.merge_row: list[array[int]] = [array("i") for _ in range(nprocs)]
        #: clock rows merged so far per rank (diagonal not maintained)
        self._cur: list[IntVec] = [np.zeros(nprocs, dtype=np.int32) for _ in range(nprocs)]

    # -- building -------------------------------------------------------
    def _store(self, rank: int, seq: int, vec: IntVec) -> None:
        row = self._nrows
        c, off = divmod(row, _CHUNK)
        if c == len(self._chunks):
            self._chunks.append(np.empty((_CHUNK, self.nprocs), dtype=np.int32))
        self._chunks[c][off] = vec
        self._nrows += 1
        self.merge_seq[rank].append(seq)
        self.merge_row[rank].append(row)

    def merge(self, rank: int, seq: int, others: list[tuple[int, int]]) -> None:
        """Event ``(rank, seq)`` merges the clocks of the events ``others``.

        Every event in ``others`` must already have its clock (causal order).
        """
        cur = self._cur[rank]
        for q, s in others:
            i = bisect_right(self.merge_seq[q], s) - 1
            if i >= 0:
                np.maximum(cur, self._row(self.merge_row[q][i]), out=cur)
            if cur[q] <= s:
                cur[q] = s + 1
        cur[rank] = seq + 1
        self._store(rank, seq, cur)

    def merge_one(self, rank: int, seq: int, q: int, s: int) -> None:
        """:meth:`merge` with one other event ``(q, s)`` (a consume and its send)."""
        cur = self._cur[rank]
        seqs = self.merge_seq[q]
        i = bisect_right(seqs, s) - 1
        if i >= 0:
            c, off = divmod(self.merge_row[q][i], _CHUNK)
            np.maximum(cur, self._chunks[c][off], out=cur)
        cur[q] = max(int(cur[q]), s + 1)
        cur[rank] = seq + 1
        self._store(rank, seq, cur)

    def joined(self, others: list[tuple[int, int]]) -> IntVec:
        """The componentwise maximum of the clocks of ``others``."""
        vec = np.zeros(self.nprocs, dtype=np.int32)
        for q, s in others:
            i = bisect_right(self.merge_seq[q], s) - 1
            if i >= 0:
                np.maximum(vec, self._row(self.merge_row[q][i]), out=vec)
            if vec[q] <= s:
                vec[q] = s + 1
        return vec

    def merge_vector(self, rank: int, seq: int, vec: IntVec) -> None:
        """Event ``(rank, seq)`` merges a clock computed by :meth:`joined`."""
        cur = self._cur[rank]
        np.maximum(cur, vec, out=cur)
        cur[rank] = seq + 1
        self._store(rank, seq, cur)

    # -- queries --------------------------------------------------------
    def _row(self, row: int) -> IntVec:
        c, off = divmod(row, _CHUNK)
        return self._chunks[c][off]

    def clock(self, rank: int, seq: int) -> IntVec:
        """The full vector clock of event ``(rank, seq)`` (a fresh array)."""
        i = bisect_right(self.merge_seq[rank], seq) - 1
        vec = (
            self._row(self.merge_row[rank][i]).copy()
            if i >= 0 else np.zeros(self.nprocs, dtype=np.int32)
        )
        vec[rank] = seq + 1
        return vec

    def component(self, rank: int, seq: int, j: int) -> int:
        """``clock(rank, seq)[j]`` without building the vector."""
        if j == rank:
            return seq + 1
        i = bisect_right(self.merge_seq[rank], seq) - 1
        return int(self._row(self.merge_row[rank][i])[j]) if i >= 0 else 0

    def happened_before(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Lamport's strict relation: ``a`` happened before ``b``."""
        if a[0] == b[0]:
            return a[1] < b[1]
        return self.component(b[0], b[1], a[0]) > a[1]

    def rows(self, rank: int, start: int = 0) -> IntVec:
        """The merge rows of ``rank`` from its ``start``-th on, as a 2-D array
        (one row per merge event, in seq order; see :attr:`merge_seq`)."""
        rows = np.frombuffer(self.merge_row[rank], dtype=np.int32)[start:].astype(np.int64)
        out = np.empty((len(rows), self.nprocs), dtype=np.int32)
        if len(rows) == 0:
            return out
        chunk, off = np.divmod(rows, _CHUNK)
        bounds = np.flatnonzero(np.diff(chunk)) + 1
        starts = np.concatenate(([0], bounds))
        stops = np.concatenate((bounds, [len(rows)]))
        for lo, hi in zip(starts.tolist(), stops.tolist(), strict=True):
            out[lo:hi] = self._chunks[int(chunk[lo])][off[lo:hi]]
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
        return sum(c.nbytes for c in self._chunks) + sum(
            a.itemsize * len(a) for a in self.merge_seq + self.merge_row)
