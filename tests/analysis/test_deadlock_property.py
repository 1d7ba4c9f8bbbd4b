"""Property: executions that complete normally are never reported, at any point of the stream.

Random small executions (2-4 ranks) mix blocking and nonblocking, standard and
synchronous, specific and wildcard point-to-point messages, collectives with
agreeing arguments, and lock critical sections.  Their records are released in
a random causally consistent order (consume after send, collective exits after
every entry, a lock acquired after its previous holder released it).  At every
prefix a live check must find nothing (a consistent cut of an execution that
completes is never deadlocked), and the finished stream nothing either.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.deadlock_monitor import DeadlockMonitor
from mpvis.protocol.record_types import Record as Rec


def execution(seed: int, nprocs: int, steps: int) -> list[Rec]:
    """A complete execution's records in a random causally consistent order."""
    rng = random.Random(seed)
    progs: list[list[Rec]] = [[] for _ in range(nprocs)]
    deps: dict[int, list[tuple[int, int]]] = {}  # id(record) -> [(rank, index)] it waits for
    open_reqs: list[list[tuple[int, Rec | None]]] = [[] for _ in range(nprocs)]
    next_req = [0] * nprocs

    gate: list[tuple[int, int] | None] = [None] * nprocs  # a blocking ssend's matching receive

    def emit(rank: int, rec: Rec, after: list[tuple[int, int]] | None = None) -> tuple[int, int]:
        rec.update(rank=rank, seq=len(progs[rank]), comm=rec.get("comm", 0))
        progs[rank].append(rec)
        after = [*(after or ()), *((gate[rank],) if gate[rank] else ())]
        gate[rank] = None
        if after:
            deps[id(rec)] = after
        return rank, len(progs[rank]) - 1

    def flush_wait(rank: int) -> None:
        reqs = open_reqs[rank]
        if not reqs:
            return
        for _, consume in reqs:
            if consume is not None:
                consume["recv"] = consume.pop("_recv")
                emit(rank, consume, consume.pop("_after"))
        emit(rank, {"kind": "wait", "reqs": [q for q, _ in reqs]})
        open_reqs[rank] = []

    last_holder: dict[str, tuple[int, int]] = {}
    for _ in range(steps):
        what = rng.random()
        if what < 0.6:
            src, dst = rng.sample(range(nprocs), 2)
            tag = rng.randrange(2)
            sync = rng.random() < 0.3
            sblock = rng.random() < 0.6
            send: Rec = {"kind": "send", "dest": dst, "tag": tag, "blocking": sblock, "sync": sync}
            if not sblock:
                send["req"] = next_req[src]
                next_req[src] += 1
            flush_wait(dst)  # no receive outstanding at dst: messages match in order
            sref = emit(src, send)
            rsrc = -1 if rng.random() < 0.3 else src
            recv: Rec = {"kind": "recv", "src": rsrc, "tag": -1 if rng.random() < 0.2 else tag}
            cons: Rec = {"kind": "consume", "src": src, "tag": tag, "send": [src, sref[1]]}
            if rng.random() < 0.5:
                recv["blocking"] = True
                rref = emit(dst, recv)
                cons["recv"] = rref[1]
                emit(dst, cons, [sref])
            else:
                recv.update(blocking=False, req=next_req[dst])
                next_req[dst] += 1
                rref = emit(dst, recv)
                cons.update(_recv=rref[1], _after=[sref])
                open_reqs[dst].append((recv["req"], cons))
            if not sblock:
                open_reqs[src].append((send["req"], None))
            if sync and sblock:  # the ssend returns once matched: after the receive is posted
                gate[src] = rref
        elif what < 0.8:
            for r in range(nprocs):
                flush_wait(r)
            op = rng.choice(["barrier", "bcast", "allreduce"])
            sig: Rec = {"op": op, "count": 1}
            if op == "bcast":
                sig["root"] = rng.randrange(nprocs)
            entries = [emit(r, {"kind": "coll", **sig}) for r in range(nprocs)]
            for r in range(nprocs):
                emit(r, {"kind": "coll_exit", "op": op}, entries)
        else:
            r = rng.randrange(nprocs)
            name = rng.choice("AB")
            lk = emit(r, {"kind": "lock", "lock": name})
            prev = last_holder.get(name)
            emit(r, {"kind": "locked", "lock": name}, [prev] if prev else None)
            last_holder[name] = emit(r, {"kind": "unlock", "lock": name})
            del lk
    for r in range(nprocs):
        flush_wait(r)
        emit(r, {"kind": "final"})
    return interleave(rng, progs, deps)


def interleave(rng: random.Random, progs: list[list[Rec]], deps: dict[int, Any]) -> list[Rec]:
    """Merge the ranks' records at random, each only after the records it depends on."""
    pos = [0] * len(progs)
    out: list[Rec] = []
    while True:
        ready = [
            r
            for r, p in enumerate(progs)
            if pos[r] < len(p) and all(pos[a] > i for a, i in deps.get(id(p[pos[r]]), ()))
        ]
        if not ready:
            assert all(pos[r] == len(p) for r, p in enumerate(progs))
            return out
        r = rng.choice(ready)
        out.append(progs[r][pos[r]])
        pos[r] += 1


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    nprocs=st.integers(2, 4),
    steps=st.integers(1, 14),
    chunk=st.integers(1, 5),
)
def test_completing_executions_are_never_reported(
    seed: int, nprocs: int, steps: int, chunk: int
) -> None:
    records = execution(seed, nprocs, steps)
    monitor = DeadlockMonitor(nprocs)
    for i in range(0, len(records), chunk):
        monitor.feed(records[i : i + chunk])
        assert monitor.check(final=False) == [], records[: i + chunk]
    monitor.finish()
    assert monitor.deadlocks == []
