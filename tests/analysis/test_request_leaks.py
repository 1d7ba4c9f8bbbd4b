"""Request leaks inferred from the trace (no ``final.requests``): the array pass of
:mod:`mpvis.analysis.request_leaks` against a walk of every rank's records, on
random runs that post, reuse and wait for requests."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.request_leaks import request_leaks
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record


def _walk(m: ModelManager, rank: int) -> list[dict[str, Any]]:
    """Oracle: the open requests of a rank by walking its records in order (a
    posting opens its ``req``, replacing an open entry in place; a wait closes)."""
    live: dict[int, dict[str, Any]] = {}
    for seq in range(m.count(rank)):
        rec = m.record(rank, seq)
        if rec["kind"] in ("send", "recv") and not rec.get("blocking", True):
            live[rec["req"]] = {"call": describe_p2p(rec), "site": rec.get("site"), "seq": seq}
        elif rec["kind"] == "wait":
            for q in rec["reqs"]:
                live.pop(q, None)
    return list(live.values())


def _run(rng: random.Random, nprocs: int, final: list[bool]) -> list[Record]:
    """Ranks that post nonblocking sends (never received) and receives (never
    matched) under a few request handles, reused once completed, and wait for
    some of the sends."""
    recs: list[Record] = [{"kind": "header", "format": "mpvis-trace", "version": 1,
                           "nprocs": nprocs, "program": "./a.out"}]
    for rank in range(nprocs):
        sends: list[int] = []
        used: set[int] = set()
        seq = 0
        for _ in range(rng.randrange(12)):
            op: Record
            free = sorted(set(range(6)) - used)
            if free and (not sends or rng.random() < 0.6):
                q = rng.choice(free)
                used.add(q)
                if rng.random() < 0.6:
                    sends.append(q)
                    op = {"kind": "send", "dest": (rank + 1) % nprocs, "tag": rng.randrange(3),
                          "blocking": False, "sync": False, "mode": "standard", "size": 4}
                else:
                    op = {"kind": "recv", "src": -1, "tag": rng.randrange(3), "blocking": False}
                op = {**op, "req": q, "site": rng.choice([None, f"a.c:{seq}"])}
            elif sends:
                done = rng.sample(sends, rng.randrange(1, len(sends) + 1))
                sends = [q for q in sends if q not in done]
                used -= set(done)
                op = {"kind": "wait", "reqs": done}
            else:
                break
            recs.append({"rank": rank, "seq": seq, **op})
            seq += 1
        if final[rank]:
            recs.append({"rank": rank, "seq": seq, "kind": "final"})
    return recs


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 4), st.lists(st.booleans(), min_size=4,
                                                          max_size=4),
       st.sampled_from([1, 7, 1 << 17]))
def test_inferred_leaks_equal_a_walk_of_the_records(seed: int, nprocs: int,
                                                     final: list[bool], chunk: int) -> None:
    """Whether the ranks are read one, a few or all at a time."""
    header, *records = _run(random.Random(seed), nprocs, final)
    m = ModelManager(header)
    m.add_batch(records)
    m.finish()
    got = [(e["ranks"], e["events"], e["call"], e["site"])
           for e in request_leaks(m, chunk_events=chunk)]
    want = [([r], [f"{r}:{x['seq']}"], x["call"], x["site"])
            for r in range(nprocs) if m.finished[r] and r not in m.dead for x in _walk(m, r)]
    assert got == want
