"""Where two runs of one program part ways (issue 14, item 6).

A replay with a race flipped (Netzer and Miller's re-execution, MPVisualizer
section 2) is shown beside the recorded run; :func:`first_divergence` says,
rank by rank, the first event whose record differs in what it *does*: its
kind and peer, tag, operation, lock, and for a consume the message it took
(the send it names).  Times and sites are left out: they differ between any
two runs.
"""

from __future__ import annotations

from typing import Any

from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import RecordView

__all__ = ["SAME_FIELDS", "first_divergence", "signature"]

#: Fields that say what an event does (compared); ``t``/``site`` are not.
SAME_FIELDS = ("kind", "src", "dest", "tag", "send", "op", "root", "lock", "recv", "reqs")


def signature(rec: RecordView) -> tuple[Any, ...]:
    """What an event does, comparable across runs (any record: absent fields are None)."""
    return tuple(
        tuple(v) if isinstance(v, list) else v for v in (rec.get(f) for f in SAME_FIELDS)
    )


def first_divergence(a: ModelManager, b: ModelManager) -> dict[int, int]:
    """``{rank: seq}`` of the first event that differs between the runs, for every
    rank whose events differ (one run may also have more events than the other:
    then the first event only one of them has)."""
    out: dict[int, int] = {}
    for r in range(min(a.nprocs, b.nprocs)):
        na, nb = a.count(r), b.count(r)
        for s in range(min(na, nb)):
            if signature(a.record(r, s)) != signature(b.record(r, s)):
                out[r] = s
                break
        else:
            if na != nb:
                out[r] = min(na, nb)
    return out
