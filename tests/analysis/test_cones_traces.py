"""Random small traces and a plain happened-before graph, for the cone and
predicate tests (this module's own tests check the generator).

:func:`random_trace` builds a valid trace: blocking and nonblocking sends and
receives (some with wildcard source), ``state`` records setting ``x`` and
``phase``, and collectives of the four dependency shapes of the spec
(barrier-like, from-root, to-root).  Records arrive in a random interleaving
of the ranks (a consume may come before its send).

:func:`hb_graph` builds the spec's happened-before relation as a networkx
graph straight from the records, independently of the model's clocks.
"""

from __future__ import annotations

import random
from typing import Any

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.protocol.record_types import Record
from tests.fixtures import model_of

Key = tuple[int, int]

BARRIER_LIKE = ("barrier", "allreduce", "allgather", "alltoall", "scan")
FROM_ROOT = ("bcast", "scatter")
TO_ROOT = ("reduce", "gather")


def random_trace(seed: int, max_procs: int = 4, steps: int = 30) -> tuple[Record, list[Record]]:
    """A header and its records in a random arrival order."""
    rng = random.Random(seed)
    n = rng.randint(2, max_procs)
    per_rank: list[list[Record]] = [[] for _ in range(n)]
    queues: dict[tuple[int, int, int], list[int]] = {}  # (src, dest, tag) -> send seqs
    open_irecvs: list[list[tuple[int, int, int, int]]] = [[] for _ in range(n)]
    live_sends: list[list[int]] = [[] for _ in range(n)]
    next_req = [0] * n

    def emit(r: int, kind: str, **fields: Any) -> int:
        seq = len(per_rank[r])
        per_rank[r].append({"rank": r, "seq": seq, "kind": kind, **fields})
        return seq

    for _ in range(rng.randint(1, steps)):
        op = rng.random()
        r = rng.randrange(n)
        if op < 0.3:
            dest = rng.choice([d for d in range(n) if d != r])
            tag = rng.randrange(2)
            if rng.random() < 0.7:
                s = emit(r, "send", dest=dest, tag=tag, blocking=True, sync=False)
            else:
                next_req[r] += 1
                s = emit(r, "send", dest=dest, tag=tag, blocking=False, sync=False, req=next_req[r])
                live_sends[r].append(next_req[r])
            queues.setdefault((r, dest, tag), []).append(s)
        elif op < 0.55:
            chans = [c for c, q in queues.items() if c[1] == r and q]
            if not chans:
                continue
            src, _, tag = rng.choice(chans)
            sseq = queues[(src, r, tag)].pop(0)
            wsrc = -1 if rng.random() < 0.4 else src
            if rng.random() < 0.7:
                rs = emit(r, "recv", src=wsrc, tag=tag, blocking=True)
                emit(r, "consume", recv=rs, src=src, tag=tag, send=[src, sseq])
            else:
                next_req[r] += 1
                rs = emit(r, "recv", src=wsrc, tag=tag, blocking=False, req=next_req[r])
                open_irecvs[r].append((rs, src, tag, sseq))
        elif op < 0.65 and open_irecvs[r]:
            rs, src, tag, sseq = open_irecvs[r].pop(0)
            emit(r, "consume", recv=rs, src=src, tag=tag, send=[src, sseq])
            req = per_rank[r][rs]["req"]
            emit(r, "wait", reqs=[req])
        elif op < 0.7 and live_sends[r]:
            emit(r, "wait", reqs=[live_sends[r].pop(0)])
        elif op < 0.9:
            vars_: dict[str, Any] = {}
            if rng.random() < 0.8:
                vars_["x"] = rng.randrange(4)
            if rng.random() < 0.4:
                vars_["phase"] = rng.choice(["a", "b"])
            emit(r, "state", vars=vars_)
        else:
            name = rng.choice(BARRIER_LIKE + FROM_ROOT + TO_ROOT)
            root = rng.randrange(n)
            for q in range(n):
                emit(q, "coll", op=name, root=root)
            for q in range(n):
                emit(q, "coll_exit", op=name)
    for r in range(n):
        for rs, src, tag, sseq in open_irecvs[r]:
            emit(r, "consume", recv=rs, src=src, tag=tag, send=[src, sseq])
        if rng.random() < 0.8:
            emit(r, "final")
    heads = [0] * n
    out: list[Record] = []
    while any(heads[r] < len(per_rank[r]) for r in range(n)):
        r = rng.choice([q for q in range(n) if heads[q] < len(per_rank[q])])
        out.append(per_rank[r][heads[r]])
        heads[r] += 1
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": n}
    return header, out


def hb_graph(records: list[Record]) -> nx.DiGraph:
    """The spec's happened-before as a DAG on ``(rank, seq)`` (its transitive
    closure is the relation): program order, send -> consume, collectives."""
    g = nx.DiGraph()
    by_rank: dict[int, list[Record]] = {}
    for rec in records:
        by_rank.setdefault(rec["rank"], []).append(rec)
        g.add_node((rec["rank"], rec["seq"]))
    colls: dict[int, list[tuple[Record, Record | None]]] = {}
    for r, recs in by_rank.items():
        recs.sort(key=lambda x: x["seq"])
        pending: Record | None = None
        for rec in recs:
            if rec["seq"] > 0:
                g.add_edge((r, rec["seq"] - 1), (r, rec["seq"]))
            if rec["kind"] == "consume":
                g.add_edge(tuple(rec["send"]), (r, rec["seq"]))
            elif rec["kind"] == "coll":
                pending = rec
            elif rec["kind"] == "coll_exit":
                assert pending is not None
                colls.setdefault(r, []).append((pending, rec))
                pending = None
    instances = zip(*colls.values(), strict=True) if colls else iter(())
    for inst in instances:
        op, root = inst[0][0]["op"], inst[0][0]["root"]
        for entry, _ in inst:
            for _, exit_ in inst:
                assert exit_ is not None
                src, dst = entry, exit_
                if op in FROM_ROOT and src["rank"] != root:
                    continue
                if op in TO_ROOT and dst["rank"] != root:
                    continue
                g.add_edge((src["rank"], src["seq"]), (dst["rank"], dst["seq"]))
    return g


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_random_traces_are_valid_and_acyclic(seed: int) -> None:
    header, records = random_trace(seed)
    m = model_of(header, records)
    assert m.event_count == len(records)
    assert all(m.done[r] == m.count(r) for r in range(m.nprocs))
    assert nx.is_directed_acyclic_graph(hb_graph(records))


def test_generator_covers_collectives_and_states() -> None:
    kinds = set()
    for seed in range(30):
        kinds |= {rec["kind"] for rec in random_trace(seed)[1]}
    assert {"coll_exit", "state", "consume", "wait"} <= kinds
