"""Independent oracles for the POEG tests: orders built another way, counted by enumeration.

* :func:`fig10_order`: Figure 10's POEG straight from the paper's pseudo-code
  (no trace, no model): events ``s``/``r`` per call, blocking calls ordered,
  sends before their receives.
* :func:`trace_order`: a trace's POEG from its records with networkx: the
  section 7 rule (``complete(e) < post(f)``, written out pairwise), message
  edges, and collective entry/exit nodes wired by the spec's dependencies.
  Posting and completion are records' positions, or with ``calls`` (real
  traces, whose records all carry ``call``) their calls' numbers, so that the
  halves of a Sendrecv, one call, are unordered.
* :func:`enumerate_count`: linear extensions by explicit enumeration;
  :func:`downset_count`: by a plain DP over every downset (no decomposition).
"""

from __future__ import annotations

import itertools
from typing import Any

import networkx as nx

from mpvis.protocol.record_types import Record

Key = tuple[int, int]

BARRIER_LIKE = {"barrier", "allreduce", "allgather", "alltoall", "scan"}
FROM_ROOT = {"bcast", "scatter"}
TO_ROOT = {"reduce", "gather"}


def fig10_order(nprocs: int, iterations: int) -> tuple[list[tuple[Any, ...]], list[int]]:
    """Figure 10's POEG: node names and predecessor masks (closed)."""
    calls: list[list[list[tuple[Any, ...]]]] = [[] for _ in range(nprocs)]
    for k in range(iterations):
        for r in range(nprocs):
            if r == 0:
                calls[r].append([("s", 0, 1, k)])
                calls[r].append([("r", 1, 0, k)])
            elif r < nprocs - 1:
                calls[r].append([("s", r, r + 1, k), ("r", r - 1, r, k)])
                calls[r].append([("s", r, r - 1, k), ("r", r + 1, r, k)])
            else:
                calls[r].append([("r", r - 1, r, k)])
                calls[r].append([("s", r, r - 1, k)])
    g = nx.DiGraph()
    for per_rank in calls:
        for call in per_rank:
            g.add_nodes_from(call)
        for a, b in itertools.pairwise(per_rank):
            g.add_edges_from((x, y) for x in a for y in b)
    for node in list(g.nodes):
        if node[0] == "s":
            g.add_edge(node, ("r", *node[1:]))
    return _masks(g, list(g.nodes))


def _masks(g: nx.DiGraph, visible: list[Any]) -> tuple[list[Any], list[int]]:
    pos = {v: i for i, v in enumerate(visible)}
    preds = []
    for v in visible:
        m = 0
        for u in nx.ancestors(g, v):
            if u in pos:
                m |= 1 << pos[u]
        preds.append(m)
    return visible, preds


def _spans(recs: list[Record], at: list[int]) -> dict[int, tuple[int, int]]:
    """Per send and consume (by seq): (the call that posted it, the call after which
    it surely happened), calls named by ``at[seq]``."""
    inf = 10**9
    out: dict[int, tuple[int, int]] = {}
    for s, rec in enumerate(recs):
        if rec["kind"] == "send":
            if rec["blocking"]:
                out[s] = (at[s], at[s])
            else:
                waits = [w for w in range(s + 1, len(recs))
                         if recs[w]["kind"] == "wait" and rec["req"] in recs[w]["reqs"]]
                out[s] = (at[s], at[waits[0]] if waits else inf)
        elif rec["kind"] == "consume":
            r = rec["recv"]
            out[s] = (at[r], at[r]) if recs[r]["blocking"] else (at[r], at[s])
    return out


def _senders(per_rank: list[list[Record]]) -> dict[Key, Key]:
    """The send of each consume: its ``send`` field, else MPI's non-overtaking rule
    (the C library names none): on each channel (sender, receiver, communicator,
    tag) the receives, in posting order, take the channel's sends in order."""
    out: dict[Key, Key] = {}
    sends: dict[tuple[int, int, int, int], list[Key]] = {}
    unnamed: dict[tuple[int, int, int, int], list[tuple[int, Key]]] = {}
    for r, recs in enumerate(per_rank):
        for s, rec in enumerate(recs):
            if rec["kind"] == "send":
                sends.setdefault((r, rec["dest"], rec.get("comm", 0), rec["tag"]), []).append(
                    (r, s))
            elif rec["kind"] == "consume" and "send" in rec:
                out[(r, s)] = (rec["send"][0], rec["send"][1])
            elif rec["kind"] == "consume":
                chan = (rec["src"], r, rec.get("comm", 0), rec["tag"])
                unnamed.setdefault(chan, []).append((rec["recv"], (r, s)))
    for chan, consumes in unnamed.items():
        for (_, c), send in zip(sorted(consumes), sends.get(chan, []), strict=False):
            out[c] = send
    return out


def trace_order(nprocs: int, records: list[Record], *, calls: bool = False
                ) -> tuple[list[Key], list[int]]:
    """A trace's POEG (module docstring), nodes in (rank, seq) order."""
    per_rank: list[list[Record]] = [[] for _ in range(nprocs)]
    for rec in sorted(records, key=lambda r: (r["rank"], r["seq"])):
        per_rank[rec["rank"]].append(rec)
    g = nx.DiGraph()
    visible: list[Key] = []
    colls: dict[tuple[int, int], dict[int, Record]] = {}
    sender = _senders(per_rank)
    for r, recs in enumerate(per_rank):
        at = [rec.get("call", -1) if calls else s for s, rec in enumerate(recs)]
        spans = _spans(recs, at)
        visible += [(r, s) for s in sorted(spans)]
        g.add_nodes_from((r, s) for s in spans)
        for e, (_, ce) in spans.items():
            for f, (pf, _) in spans.items():
                if ce < pf:
                    g.add_edge((r, e), (r, f))
        n = 0
        for s, rec in enumerate(recs):
            if rec["kind"] == "consume" and (r, s) in sender:
                g.add_edge(sender[(r, s)], (r, s))
            if rec["kind"] == "coll":
                colls.setdefault((rec.get("comm", 0), n), {})[r] = rec
                n += 1
                g.add_node(("in", r, s))
                g.add_node(("out", r, s))
                for e, (pe, ce) in spans.items():
                    if ce < at[s]:
                        g.add_edge((r, e), ("in", r, s))
                    if pe > at[s]:
                        g.add_edge(("out", r, s), (r, e))
                for s0 in range(s):  # program order between the rank's collectives
                    if recs[s0]["kind"] == "coll":
                        g.add_edge(("out", r, s0), ("in", r, s))
    for inst in colls.values():
        exited = {r: rec for r, rec in inst.items()
                  if any(x["kind"] == "coll_exit" and x["seq"] > rec["seq"]
                         for x in per_rank[r])}
        for r, rec in exited.items():
            op = rec["op"]
            root = rec.get("root")
            if op in BARRIER_LIKE:
                deps = list(inst.values())
            elif op in FROM_ROOT:
                deps = [inst[root]] if root in inst else []
            elif op in TO_ROOT:
                deps = list(inst.values()) if r == root else []
            else:
                deps = []
            for d in deps:
                g.add_edge(("in", d["rank"], d["seq"]), ("out", r, rec["seq"]))
    return _masks(g, visible)


def enumerate_count(preds: list[int]) -> int:
    """Linear extensions by listing them one by one (small orders only)."""
    n = len(preds)

    def extend(placed: int) -> int:
        if placed == (1 << n) - 1:
            return 1
        total = 0
        for v in range(n):
            if not placed >> v & 1 and preds[v] & placed == preds[v]:
                total += extend(placed | 1 << v)
        return total

    return extend(0)


def downset_count(preds: list[int]) -> int:
    """Linear extensions as paths through all downsets, one level at a time."""
    level = {0: 1}
    for _ in range(len(preds)):
        nxt: dict[int, int] = {}
        for mask, c in level.items():
            for v, p in enumerate(preds):
                if not mask >> v & 1 and p & mask == p:
                    nxt[mask | 1 << v] = nxt.get(mask | 1 << v, 0) + c
        level = nxt
    return sum(level.values())
