"""The causally ordered record stream that incremental analyses consume.

The model manager receives records in *arrival order* (ranks interleaved in any
way, a consume possibly before its send).  Analyses that work on the fly (the
exact race detector of Cypher and Leu, the deadlock monitor) need a *consistent*
order instead.  The manager releases records to every registered
:class:`RecordAnalyzer` in batches that honour this contract:

* every record is a ``dict`` in the trace format of ``shared/spec/trace-format.md``,
  normalised: ``comm`` is always present (default ``0``), a ``consume`` always
  carries ``send`` (inferred by the non-overtaking rule when the file omitted it);
* the records of one rank come in increasing ``seq`` order, with no gaps;
* a ``consume`` comes after the ``send`` it consumes;
* a ``coll_exit`` comes after the ``coll`` records its collective depends on
  (for the spec's happened-before rules: every member's ``coll`` for barrier-like
  operations, the root's for bcast/scatter; reduce/gather exits at the root wait
  for every member).

Records are released exactly once.  Analyses must not mutate them.

An analyzer that also has ``feed_columns(batch, cols)`` (:class:`ColumnAnalyzer`)
gets each batch through it instead of ``feed``, with the model's columns of
the same records position by position (:class:`ReleasedColumns`), so it can
work on the batch with whole-array operations and look at dicts only where it
needs them.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy.typing as npt

from mpvis.protocol.record_types import Record


class RecordAnalyzer(Protocol):
    """An incremental analysis fed by the model manager."""

    def feed(self, batch: list[Record]) -> None:
        """Take the next records of the causally ordered stream."""

    def finish(self) -> None:
        """The input has ended (end of file, or the live run finished or is stuck)."""


class ReleasedColumns(NamedTuple):
    """The model's columns of a released batch: entry ``i`` describes ``batch[i]``."""

    #: Global index of each record's event.
    gidx: npt.NDArray[Any]
    #: Kind codes (:data:`mpvis.protocol.records.KIND_CODE`).
    kind: npt.NDArray[Any]
    #: Flag bits (:mod:`mpvis.protocol.codes`).
    flags: npt.NDArray[Any]
    #: A send's consume, a consume's send (global indices), else -1.
    partner: npt.NDArray[Any]
    rank: npt.NDArray[Any]


class ColumnAnalyzer(RecordAnalyzer, Protocol):
    """A :class:`RecordAnalyzer` that also takes each batch with its columns."""

    def feed_columns(self, batch: list[Record], cols: ReleasedColumns) -> None:
        """Exactly what ``feed(batch)`` does; ``cols`` describe the same records."""
