"""When each simulated record is released: simulated time scaled by a speed.

A record of simulated time ``t`` is due ``t / speed`` wall-clock seconds after
the stream starts.  Records are grouped into batches by ``interval`` (one
batch per tick, as the in-rank library and the collector batch), so a burst of
records costs one message.  ``speed <= 0`` releases everything at once in
batches of at most ``max_batch`` records.  Order is kept: each batch holds the
next records of the input, which stays in simulated-time order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mpvis.protocol.record_types import Record

DEFAULT_INTERVAL = 0.05


def paced_batches(
    records: Sequence[Record],
    speed: float,
    interval: float = DEFAULT_INTERVAL,
    max_batch: int = 2000,
) -> list[tuple[float, list[Record]]]:
    """``(due, batch)`` pairs: ``due`` is seconds after the start, non-decreasing."""
    out: list[tuple[float, list[Record]]] = []
    if speed <= 0:
        for i in range(0, len(records), max_batch):
            out.append((0.0, list(records[i : i + max_batch])))
        return out
    tick = -1
    for rec in records:
        due = float(rec.get("t", 0.0)) / speed
        this = max(tick, math.floor(due / interval))
        if this != tick or len(out[-1][1]) >= max_batch:
            out.append((this * interval, []))
            tick = this
        out[-1][1].append(rec)
    return out
