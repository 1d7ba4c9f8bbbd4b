"""The causally ordered stream that incremental analyses consume, as columns.

The model manager receives records in *arrival order* (ranks interleaved in any
way, a consume possibly before its send).  Analyses that work on the fly (the
exact race detector of Cypher and Leu, the deadlock monitor) need a *consistent*
order instead.  Causal release (:mod:`mpvis.model.causal`) hands every
registered analyzer the events it has processed, in batches that honour this
contract:

* a batch is the *global indices* of the released events
  (:class:`ReleasedColumns`: ``gidx``, with the store's kind, rank, seq, flag and
  partner columns at them); an analyzer reads anything else from the store
  (:class:`~mpvis.model.store.EventStore`), which holds only checked events;
* the events of one rank come in increasing ``seq`` order, with no gaps;
* a ``consume`` comes after the ``send`` it consumes, and knows it: its
  ``partner`` is that send (linked by the file's ``send`` field or inferred by
  the non-overtaking rule).  Only a consume forced at the end of input (a cause
  that can never come) may come before its send, or have none: a send never
  recorded leaves ``partner`` -1, and :attr:`ReleasedColumns.named` then gives
  the send its record named, if it named one;
* a ``coll_exit`` comes after the ``coll`` records its collective depends on
  (for the spec's happened-before rules: every member's ``coll`` for barrier-like
  operations, the root's for bcast/scatter; reduce/gather exits at the root wait
  for every member);
* the communicator is the store's ``c_comm`` (``0`` when the trace omitted it).

Every event is released exactly once.  Analyses must not change the store.

An analyzer takes the batches through ``feed_columns(cols)``
(:class:`StreamAnalyzer`); no record dict is built for it.  One that needs a
record builds it (:meth:`ReleasedColumns.records_at`: the trace records of
some released events, a batch at a time, normalised as below).  A plain
:class:`RecordAnalyzer` (only ``feed(records)``; none in mpvis itself, tests'
recorders use it) gets the same batches as normalised record dicts built from
the store, and only such an analyzer makes causal release build them:
``comm`` always present (default ``0``), a consume's ``send`` always present
but for a forced consume whose send was lost and not named.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from mpvis.model.columns import Column
from mpvis.model.record_batch import rebuild_records
from mpvis.model.store import EventStore
from mpvis.protocol import records as R
from mpvis.protocol.record_types import EventRecord, Record

Key = tuple[int, int]

K_CONSUME = R.KIND_CODE[R.CONSUME]


class RecordAnalyzer(Protocol):
    """An incremental analysis fed record dicts (see the module docstring)."""

    def feed(self, batch: list[Record]) -> None:
        """Take the next records of the causally ordered stream."""

    def finish(self) -> None:
        """The input has ended (end of file, or the live run finished or is stuck)."""


class ReleasedColumns(NamedTuple):
    """A released batch: entry ``i`` of each array describes event ``gidx[i]``."""

    #: The store the events are in (for every column not given here, the extras).
    store: EventStore
    #: Global index of each released event, in stream order (int64).
    gidx: npt.NDArray[Any]
    #: Kind codes (:data:`mpvis.protocol.records.KIND_CODE`).
    kind: npt.NDArray[Any]
    rank: npt.NDArray[Any]
    seq: npt.NDArray[Any]
    #: Flag bits (:mod:`mpvis.protocol.codes`).
    flags: npt.NDArray[Any]
    #: A send's consume, a consume's send (global indices), else -1.
    partner: npt.NDArray[Any]
    #: Global index of a released consume with no partner (its send was lost,
    #: forced at the end of input) -> the send its record named; usually empty.
    named: dict[int, Key]

    @classmethod
    def of(cls, store: EventStore, gidx: npt.NDArray[Any],
           named_send_of: Callable[[int], Key | None] | None = None) -> ReleasedColumns:
        """The batch of events ``gidx`` (int64) of ``store``; ``named_send_of(g)``
        names the send of a consume ``g`` without partner (:attr:`named`)."""
        kind, partner = store.c_kind.view()[gidx], store.c_partner.view()[gidx]
        named: dict[int, Key] = {}
        if named_send_of is not None:
            for g in gidx[(kind == K_CONSUME) & (partner < 0)].tolist():
                key = named_send_of(g)
                if key is not None:
                    named[g] = key
        return cls(store, gidx, kind, store.c_rank.view()[gidx], store.c_seq.view()[gidx],
                   store.c_flags.view()[gidx], partner, named)

    def column(self, name: str, pos: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The store's column ``c_<name>`` (e.g. ``"ref"``: a consume's
        receive) at batch entries ``pos``."""
        col: Column = getattr(self.store, "c_" + name)
        out: npt.NDArray[Any] = col.view()[self.gidx[pos]]
        return out

    def buffers(self) -> tuple[memoryview | array[Any], ...]:
        """The batch's global indices, then the store's whole columns kind,
        rank, seq, peer, tag, comm, flags, req, ref and partner (by global
        index), as buffers for C code (valid while the store does not grow)."""
        s = self.store
        return (np.ascontiguousarray(self.gidx, dtype=np.int64).data,
                *(c.data for c in (s.c_kind, s.c_rank, s.c_seq, s.c_peer, s.c_tag, s.c_comm,
                                   s.c_flags, s.c_req, s.c_ref, s.c_partner)))

    def record(self, i: int) -> EventRecord:
        """The normalised trace record of batch entry ``i`` (a fresh dict):
        every field, ``comm`` always, a consume's ``send`` when it has one."""
        return self.records_at(np.array([i]))[0]

    def records_at(self, pos: npt.NDArray[Any]) -> list[EventRecord]:
        """:meth:`record` of each batch entry ``pos``, built a batch at a time."""
        return cast("list[EventRecord]", self._records(pos))  # the store's checked records

    def records(self) -> list[Record]:
        """Every entry's :meth:`record`, in stream order."""
        return self._records(slice(None))

    def _records(self, pos: npt.NDArray[Any] | slice) -> list[Record]:
        gids = self.gidx[pos]
        recs = rebuild_records(self.store, gids, comm_always=True)
        if self.named:
            for rec, g in zip(recs, gids.tolist(), strict=True):
                named = self.named.get(g)
                if named is not None and "send" not in rec and rec["kind"] == R.CONSUME:
                    rec["send"] = list(named)
        return recs


@runtime_checkable
class StreamAnalyzer(Protocol):
    """An incremental analysis fed the stream's batches as columns."""

    def feed_columns(self, cols: ReleasedColumns) -> None:
        """Take the next batch of the causally ordered stream."""

    def finish(self) -> None:
        """The input has ended (end of file, or the live run finished or is stuck)."""


#: What a model's analyzers may be.
Analyzer = StreamAnalyzer | RecordAnalyzer
