"""Brute-force Theorem 2.2 of Cypher and Leu, for testing the exact race detectors.

Independent of ``mpvis.analysis``: the events of section 2.2 are built literally
(a blocking send is a PS then a WS/WB event, a blocking receive's consume is its
WR, a ``wait`` record is one WS/WB/WR event per listed request, in order, and
every other record is an INTERNAL event), the happened-immediately-before
relation R_h is built as an explicit networkx graph from rules 1 to 4 of
section 2.5 (R_m over all pairs of matches) plus the spec's collective edges,
and conflicts are enumerated by the definition before Theorem 2.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from mpvis.protocol.record_types import Record

Key = tuple[int, int]
Conflict = tuple[int, int, Key, Key]  # (rank, r1 seq, s1, s2)

_ALL = {"barrier", "allreduce", "allgather", "alltoall", "scan"}
_FROM_ROOT = {"bcast", "scatter"}
_TO_ROOT = {"reduce", "gather"}


@dataclass
class _Event:
    node: int
    kind: str  # PS WS WB PR WR INTERNAL
    rec: Record
    corr: _Event | None = None
    next: _Event | None = None


def _compatible(s: Record, r: Record) -> bool:
    return (
        s["dest"] == r["rank"]
        and s.get("comm", 0) == r.get("comm", 0)
        and r["src"] in (-1, s["rank"])
        and r["tag"] in (-1, s["tag"])
    )


def oracle_conflicts(records: list[Record]) -> set[Conflict]:
    """Every conflicting (match, send) pair of the execution, by definition."""
    events = [r for r in records if r.get("kind") != "header"]
    by_rank: dict[int, list[Record]] = {}
    for rec in sorted(events, key=lambda r: (r["rank"], r["seq"])):
        by_rank.setdefault(rec["rank"], []).append(rec)
    graph: nx.DiGraph[int] = nx.DiGraph()
    nodes: list[_Event] = []

    def new(kind: str, rec: Record, rank_events: list[_Event]) -> _Event:
        ev = _Event(len(nodes), kind, rec)
        nodes.append(ev)
        graph.add_node(ev.node)
        if rank_events:
            rank_events[-1].next = ev
            graph.add_edge(rank_events[-1].node, ev.node)  # rule 1
        rank_events.append(ev)
        return ev

    ps: dict[Key, _Event] = {}
    pr: dict[Key, _Event] = {}
    entries: dict[tuple[int, int], dict[int, _Event]] = {}
    exits: list[tuple[tuple[int, int], Record, _Event]] = []
    for rank, recs in by_rank.items():
        evs: list[_Event] = []
        reqs: dict[int, _Event] = {}
        last_blocking: _Event | None = None
        ncoll: dict[int, int] = {}
        for rec in recs:
            kind = rec["kind"]
            if kind == "send":
                post = ps[(rank, rec["seq"])] = new("PS", rec, evs)
                if rec["blocking"]:
                    new("WS" if rec["sync"] else "WB", rec, evs).corr = post
                else:
                    reqs[rec["req"]] = post
            elif kind == "recv":
                post = pr[(rank, rec["seq"])] = new("PR", rec, evs)
                if rec["blocking"]:
                    last_blocking = post
                else:
                    reqs[rec["req"]] = post
            elif (
                kind == "consume"
                and last_blocking is not None
                and last_blocking.rec["seq"] == rec["recv"]
            ):
                new("WR", rec, evs).corr = last_blocking
                last_blocking = None
            elif kind == "wait" and any(q in reqs for q in rec["reqs"]):
                for q in rec["reqs"]:
                    waited = reqs.pop(q, None)
                    if waited is None:
                        continue
                    w = "WR" if waited.kind == "PR" else ("WS" if waited.rec["sync"] else "WB")
                    new(w, rec, evs).corr = waited
            else:
                ev = new("INTERNAL", rec, evs)
                comm = rec.get("comm", 0)
                if kind == "coll":
                    k = ncoll.get(comm, 0)
                    entries.setdefault((comm, k), {})[rank] = ev
                    ncoll[comm] = k + 1
                elif kind == "coll_exit":
                    exits.append(((comm, ncoll.get(comm, 0) - 1), rec, ev))
    # Collective edges (spec, "Happened-before").
    for inst, rec, ev in exits:
        members = entries.get(inst, {})
        op = rec["op"]
        root = next(iter(e.rec.get("root") for e in members.values()), None)
        if op in _ALL or (op in _TO_ROOT and rec["rank"] == root):
            sources = list(members.values())
        elif op in _FROM_ROOT and root in members:
            sources = [members[root]]
        else:
            sources = []
        for src in sources:
            graph.add_edge(src.node, ev.node)
    # Matches and rules 2, 3.
    matches: list[tuple[int, _Event, _Event]] = []
    for rec in events:
        if rec["kind"] != "consume" or rec.get("send") is None:
            continue
        s = ps.get((rec["send"][0], rec["send"][1]))
        r = pr.get((rec["rank"], rec["recv"]))
        if s is None or r is None:
            continue
        m = len(nodes) + len(matches)
        graph.add_edge(s.node, m)
        graph.add_edge(r.node, m)
        for post in (s, r):
            waits = [e for e in nodes if e.corr is post]
            if waits and waits[0].kind != "WB" and waits[0].next is not None:
                graph.add_edge(m, waits[0].next.node)
        matches.append((m, s, r))
    # Rule 4: R_m.
    for m1, s1, r1 in matches:
        for m2, s2, r2 in matches:
            if m1 == m2:
                continue
            if (
                _compatible(s1.rec, r2.rec)
                and s1.rec["rank"] == s2.rec["rank"]
                and s1.rec["seq"] < s2.rec["seq"]
            ) or (
                _compatible(s2.rec, r1.rec)
                and r1.rec["rank"] == r2.rec["rank"]
                and r1.rec["seq"] < r2.rec["seq"]
            ):
                graph.add_edge(m1, m2)
    matched_to = {id(s): r for _, s, r in matches}
    out: set[Conflict] = set()
    for m1, s1, r1 in matches:
        after = nx.descendants(graph, m1)
        for s2 in ps.values():
            if s2 is s1 or not _compatible(s2.rec, r1.rec):
                continue
            if s2.rec["rank"] == s1.rec["rank"] or s2.node in after:
                continue
            taker = matched_to.get(id(s2))
            if (
                taker is not None
                and taker.rec["rank"] == r1.rec["rank"]
                and taker.rec["seq"] < r1.rec["seq"]
            ):
                continue
            out.add(
                (
                    r1.rec["rank"],
                    r1.rec["seq"],
                    (s1.rec["rank"], s1.rec["seq"]),
                    (s2.rec["rank"], s2.rec["seq"]),
                )
            )
    return out
