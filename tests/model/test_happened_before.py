"""Happened-before and arrival-order independence against brute force."""

from __future__ import annotations

import copy
import itertools
import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.report import build_report
from mpvis.model.manager import ModelManager
from tests.model.random_traces import interleave, random_execution

ALL = {"barrier", "allreduce", "allgather", "alltoall", "scan"}


def explicit_graph(recs: list[dict]) -> nx.DiGraph:
    """The spec's happened-before edges, built plainly as a graph."""
    g = nx.DiGraph()
    by_rank: dict[int, list[dict]] = {}
    for r in recs:
        by_rank.setdefault(r["rank"], []).append(r)
    for rank, evs in by_rank.items():
        evs.sort(key=lambda e: e["seq"])
        for a, b in itertools.pairwise(evs):
            g.add_edge((rank, a["seq"]), (rank, b["seq"]))
        for e in evs:
            g.add_node((rank, e["seq"]))
            if e["kind"] == "consume":
                g.add_edge(tuple(e["send"]), (rank, e["seq"]))
    # n-th collective of each rank (one communicator here)
    colls: dict[int, list[dict]] = {}
    exits: dict[int, list[dict]] = {}
    for rank, evs in by_rank.items():
        colls[rank] = [e for e in evs if e["kind"] == "coll"]
        exits[rank] = [e for e in evs if e["kind"] == "coll_exit"]
    n_inst = min((len(v) for v in exits.values()), default=0)
    for i in range(n_inst):
        op = colls[0][i]["op"]
        root = colls[0][i].get("root")
        for q in by_rank:
            for p in by_rank:
                entry, exit_ = (p, colls[p][i]["seq"]), (q, exits[q][i]["seq"])
                if op in ALL or (op == "bcast" and p == root) or (op == "reduce" and q == root):
                    g.add_edge(entry, exit_)
    return g


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 4))
def test_happened_before_matches_graph_reachability(seed: int, nprocs: int) -> None:
    header, recs = random_execution(seed, nprocs, steps=16)
    m = ModelManager(header)
    m.add_batch(interleave(copy.deepcopy(recs), random.Random(seed)))
    m.finish()
    assert_clocks_match_graph(m, recs, nprocs)


def assert_clocks_match_graph(m: ModelManager, recs: list[dict], nprocs: int) -> None:
    """The oracle: happened-before is reachability in the spec's explicit graph,
    and each vector clock counts the event's ancestors per rank (itself included)."""
    g = explicit_graph(recs)
    nodes = sorted(g.nodes)
    for a in nodes:
        reach = nx.descendants(g, a)
        for b in nodes:
            assert m.happened_before(a, b) == (b in reach), (a, b)
    for b in nodes:
        vc = m.vector_clock(*b)
        anc = nx.ancestors(g, b) | {b}
        assert vc == [sum(1 for x in anc if x[0] == r) for r in range(nprocs)]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9))
def test_report_does_not_depend_on_arrival_order(seed: int) -> None:
    header, recs = random_execution(seed, 3, steps=20)
    reports = []
    rng = random.Random(seed)
    for k in range(4):
        m = ModelManager(header)
        order = interleave(copy.deepcopy(recs), rng)
        if k % 2:
            for rec in order:
                m.add(rec)
        else:
            m.add_batch(order)
        m.finish()
        reports.append(build_report(m, nonadjacent=True))
    assert all(r == reports[0] for r in reports)


def test_live_verdict_updates_when_the_late_send_arrives() -> None:
    """A verdict that needs a late send is provisional, then settled when it comes."""
    h = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 3}
    m = ModelManager(h)
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    class Obs:
        def model_changed(self, change: object) -> None:
            seen.append((change.races_added, change.races_changed))  # type: ignore[attr-defined]

    m.observers.append(Obs())
    m.add_batch([
        {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True,
         "sync": False},
        {"rank": 1, "seq": 0, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
        {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 1, "send": [0, 0]},
        {"rank": 1, "seq": 2, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
        {"rank": 1, "seq": 3, "kind": "consume", "recv": 2, "src": 2, "tag": 1, "send": [2, 0]},
    ])
    (race,) = m.potential_races()
    assert race.verdict == "unverified" and not race.settled
    m.add_batch([{"rank": 2, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True,
                  "sync": False}])
    assert race.verdict == "legitimate" and race.settled
    assert seen[0][0] == (0,) and seen[-1][1] == (0,)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9))
def test_lamport_clocks_respect_happened_before(seed: int) -> None:
    header, recs = random_execution(seed, 3, steps=18)
    m = ModelManager(header)
    m.add_batch(interleave(copy.deepcopy(recs), random.Random(seed)))
    m.finish()
    g = explicit_graph(recs)
    lam = {(int(r), int(s)): int(x) for r, s, x in zip(
        m.c_rank.view(), m.c_seq.view(), m.c_lamport.view(), strict=True)}
    assert min(lam.values()) >= 0
    for a, b in g.edges:
        assert lam[a] < lam[b], (a, b)
