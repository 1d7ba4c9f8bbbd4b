"""Large synthetic traces for benchmarks: many ranks, wildcard receives.

:func:`generate_records` yields a valid trace (records in a causally
consistent arrival order, every consume naming its send) of about
``n_events`` events on ``nprocs`` ranks.  Rounds of a pattern mixing
neighbour exchanges (specific receives), gathers to a rotating master with
``recv(-1,-1)`` and ``recv(-1,tag)``, nonblocking receives completed by
waits, and an occasional barrier.  Deterministic for a given ``seed``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from mpvis.protocol.record_types import Record


def generate_records(n_events: int, nprocs: int, seed: int = 0) -> Iterator[Record]:
    """Yield about ``n_events`` event records (header not included)."""
    rng = random.Random(seed)
    seq = [0] * nprocs
    t = [0.0] * nprocs
    produced = 0

    def ev(rank: int, kind: str, **fields: Any) -> Record:
        nonlocal produced
        t[rank] += rng.random() * 1e-4 + 1e-6
        rec: Record = {
            "rank": rank,
            "seq": seq[rank],
            "kind": kind,
            "t": round(t[rank], 7),
            "site": f"synthetic.py:{10 + len(kind)}",
            **fields,
        }
        seq[rank] += 1
        produced += 1
        return rec

    rnd = 0
    while produced < n_events:
        rnd += 1
        kind = rnd % 8
        if kind == 7:
            yield from _barrier(ev, nprocs)
            continue
        if kind % 2 == 0:
            # ring exchange with specific receives
            sent = []
            for r in range(nprocs):
                dest = (r + 1) % nprocs
                s = ev(r, "send", dest=dest, tag=1, blocking=True, sync=False, size=8)
                sent.append(s["seq"])
                yield s
            for r in range(nprocs):
                src = (r - 1) % nprocs
                recv = ev(r, "recv", src=src, tag=1, blocking=True)
                yield recv
                yield ev(r, "consume", recv=recv["seq"], src=src, tag=1, send=[src, sent[src]])
        else:
            # gather to a rotating master with wildcard receives
            master = rnd % nprocs
            sends: list[tuple[int, int, int]] = []
            for r in range(nprocs):
                if r != master:
                    tag = rng.choice((2, 3))
                    s = ev(r, "send", dest=master, tag=tag, blocking=True, sync=False, size=8)
                    sends.append((r, s["seq"], tag))
                    yield s
            rng.shuffle(sends)
            nb = rnd % 4 == 1
            for i, (src, sseq, tag) in enumerate(sends):
                wsrc, wtag = (-1, -1) if i % 3 else (-1, tag)
                if nb:
                    recv = ev(master, "recv", src=wsrc, tag=wtag, blocking=False, req=1)
                    yield recv
                    yield ev(
                        master, "consume", recv=recv["seq"], src=src, tag=tag, send=[src, sseq]
                    )
                    yield ev(master, "wait", reqs=[1])
                else:
                    recv = ev(master, "recv", src=wsrc, tag=wtag, blocking=True)
                    yield recv
                    yield ev(
                        master, "consume", recv=recv["seq"], src=src, tag=tag, send=[src, sseq]
                    )
    for r in range(nprocs):
        yield ev(r, "final")


def _barrier(ev: Any, nprocs: int) -> Iterator[Record]:
    for r in range(nprocs):
        yield ev(r, "coll", op="barrier")
    for r in range(nprocs):
        yield ev(r, "coll_exit", op="barrier")
