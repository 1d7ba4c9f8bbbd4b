"""Feeding a model in random batches beside a reference fed the same batches as records.

The column entries of the analyzers (the exact detector's, the deadlock
monitor's) are checked against their record entries this way: the model
releases each batch to the analyzer under test as columns and to a
:class:`Recorder` as records, which the test then hands to a reference
analyzer (:func:`add_in_random_batches`).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record


class Recorder:
    """A plain analyzer: keeps the batches the model released, as released."""

    def __init__(self) -> None:
        self.batches: list[list[Record]] = []

    def feed(self, batch: list[Record]) -> None:
        self.batches.append(list(batch))

    def finish(self) -> None:
        pass


def killed(recs: list[Record], rng: random.Random) -> list[Record]:
    """A rank died after recording some of its events (no ``final``)."""
    rank = rng.choice(sorted({x["rank"] for x in recs}))
    mine = sum(1 for x in recs if x["rank"] == rank)
    k = rng.randrange(mine + 1)
    return [x for x in recs if not (x["rank"] == rank and x["seq"] >= k)]


def add_in_random_batches(m: ModelManager, rec: Recorder, records: list[Record],
                          rng: random.Random, *, ref_feed: Callable[[list[Record]], None],
                          check: Callable[[], None]) -> None:
    """Add ``records`` to ``m`` (which releases to ``rec`` too) in batches of 1 to
    12; after each, give the reference (``ref_feed``) the batches released since
    and ``check`` both; then finish the model and give the reference the rest
    (the caller finishes the reference and compares the ends)."""
    fed = 0
    i = 0
    while i < len(records):
        k = rng.randint(1, 12)
        m.add_batch(records[i:i + k])
        i += k
        for batch in rec.batches[fed:]:
            ref_feed(batch)
        fed = len(rec.batches)
        check()
    m.finish()
    for batch in rec.batches[fed:]:
        ref_feed(batch)
