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
"""

from __future__ import annotations

from typing import Protocol

from mpvis.protocol.record_types import Record


class RecordAnalyzer(Protocol):
    """An incremental analysis fed by the model manager."""

    def feed(self, batch: list[Record]) -> None:
        """Take the next records of the causally ordered stream."""

    def finish(self) -> None:
        """The input has ended (end of file, or the live run finished or is stuck)."""
