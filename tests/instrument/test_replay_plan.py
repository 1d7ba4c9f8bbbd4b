"""Replay without MPI: collation, flips, routing decisions and the on-line check."""

from __future__ import annotations

from itertools import combinations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.replay_optimality import optimality
from mpvis.instrument.record_file import RaceEntry, RankRecord, ReplayRecordError, chain
from mpvis.instrument.replay import CHANNEL, POLL, USER, ReplayHooks, find_flip, plan_for


def _records() -> list[RankRecord]:
    """Rank 0 took [1, 2] at receive 3, then [3, 2] at 6 (traced), then [2, 2] at 9 (traced)."""
    r0 = RankRecord(0, 4, "races", 256)
    r0.races = [
        RaceEntry(0, 6, 7, 3, 2, 2, (3, 1, 2)),
        RaceEntry(0, 9, 10, 2, 2, 2, (6, 3, 2)),
        RaceEntry(4, 20, 21, 1, 0, 9, (18, 2, 9)),
    ]
    digest = 0
    for src, send in ((1, 2), (3, 2), (2, 2)):
        digest = chain(digest, src, send)
    r0.consumes, r0.digest = 3, digest
    r0.checks = [(2, 6, chain(chain(0, 1, 2), 3, 2))]
    others = [RankRecord(r, 4, "races", 256) for r in (1, 2, 3)]
    return [r0, *others]


def test_collation_routes_each_traced_message_at_its_sender() -> None:
    recs = _records()
    plans = [plan_for(recs, r) for r in range(4)]
    assert plans[0].forced == {6: (3, 2, 2), 9: (2, 2, 2)}
    assert plans[0].unforceable == 1  # the race on communicator 4
    assert plans[3].routed_sends == {2: (0, 2)} and plans[2].routed_sends == {2: (0, 2)}
    assert plans[1].routed_sends == {}  # the race on communicator 4 is not routed


def test_flip_by_either_receive_of_a_race() -> None:
    recs = _records()
    by_earlier = find_flip(recs, 0, 3)
    assert (by_earlier.recv, by_earlier.src, by_earlier.send, by_earlier.was) == (3, 3, 2, (1, 2))
    by_later = find_flip(recs, 0, 9)  # 9 is no earlier receive: reverse its race with 6
    assert (by_later.recv, by_later.src, by_later.was) == (6, 2, (3, 2))
    with pytest.raises(ReplayRecordError, match="0:3/6"):
        find_flip(recs, 0, 4)
    plan = plan_for(recs, 0, by_earlier)
    assert plan.forced == {3: (3, 2, 2)}  # later deliveries are no longer pinned ...
    assert plan.unpinned == {6, 9}  # ... but still posted on the channel
    # Every traced message stays off COMM_WORLD, so no receive before the flip
    # can take it; so does the message the flipped receive took when recorded.
    assert plan_for(recs, 2, by_earlier).routed_sends == {2: (0, 2)}
    assert plan_for(recs, 3, by_earlier).routed_sends == {2: (0, 2)}
    h1 = ReplayHooks(plan_for(recs, 1, by_earlier))
    assert h1.route_send(2, 0, 5) and not h1.route_send(2, 2, 2) and not h1.route_send(3, 0, 2)


def test_replay_hooks_force_route_and_accept_the_recorded_run() -> None:
    hooks = ReplayHooks(plan_for(_records(), 0))
    assert hooks.route_recv(3, True) == USER
    assert hooks.route_recv(6, True) == CHANNEL
    assert hooks.force_source(0, 6, -1, -1) == (3, 2)
    assert hooks.force_source(0, 3, -1, -1) == (-1, -1)
    for recv, src in ((3, 1), (6, 3)):
        hooks.incoming(0, recv, src, 2, 2, [2, 0])
    assert hooks.route_recv(9, True) == CHANNEL
    hooks.incoming(0, 9, 2, 2, 2, [2, 0])
    v = hooks.verdict()
    assert v["divergence"] is None and v["forced_ok"] == 2


def test_replay_hooks_say_where_a_run_diverged() -> None:
    hooks = ReplayHooks(plan_for(_records(), 0))
    hooks.incoming(0, 3, 3, 2, 2, [2, 0])  # took rank 3's message first
    hooks.route_recv(6, True)
    hooks.incoming(0, 6, 1, 2, 2, [2, 0])
    assert hooks.verdict()["divergence"] == (
        "receive 0:6 took message [1, 2] instead of the recorded [3, 2]"
    )
    quiet = ReplayHooks(plan_for(_records(), 0))
    quiet.incoming(0, 3, 3, 2, 2, [2, 0])
    quiet.incoming(0, 4, 1, 2, 2, [2, 0])
    assert "consumes up to #2 (receive 0:6)" in quiet.verdict()["divergence"]


def test_flip_frees_the_rank_and_everyone_it_reaches() -> None:
    recs = _records()
    flip = find_flip(recs, 0, 3)
    h0 = ReplayHooks(plan_for(recs, 0, flip))
    assert h0.route_recv(3, True) == CHANNEL
    h0.incoming(0, 3, 3, 2, 2, [2, 0])
    assert h0.free and h0.route_recv(6, True) == POLL and h0.route_recv(6, False) == CHANNEL
    assert h0.route_recv(7, False) == USER and h0.force_source(0, 6, -1, 2) == (-1, 2)
    assert h0.outgoing(0, 1, 1, 5) == [5, 1]
    h3 = ReplayHooks(plan_for(recs, 3, flip))
    assert h3.route_send(2, 0, 2) and not h3.route_send(2, 1, 2)
    h3.incoming(0, 4, 0, 1, 5, [5, 1])
    # Free, it still routes a send that goes where the recorded one went.
    assert h3.free and h3.route_send(2, 0, 2) and not h3.route_send(2, 0, 7)
    assert h0.verdict()["divergence"] is None


def test_optimality_lower_bound_is_a_maximum_matching() -> None:
    # Three mutually racing messages (Figure 5a): any cover needs 2 (a matching finds 1).
    tri = [((1, 0), (2, 0)), ((2, 0), (3, 0)), ((1, 0), (3, 0))]
    o = optimality(tri, messages=3, recorded=2)
    assert o.lower_bound == 2 and o.optimal and o.fraction == pytest.approx(2 / 3)
    # Figure 5b: non-transitive races, a chain of three; one message suffices.
    chain3 = [((1, 0), (3, 0)), ((3, 0), (4, 0))]
    assert optimality(chain3, messages=3, recorded=2).lower_bound == 1
    # A 5-cycle: not complete, not bipartite; the matching (2) is below the optimum (3).
    cycle = [((i, 0), ((i + 1) % 5, 0)) for i in range(5)]
    assert optimality(cycle, messages=5, recorded=3).lower_bound == 2
    path = [((1, 0), (2, 0)), ((3, 0), (4, 0))]
    assert optimality(path, messages=10, recorded=2).optimal
    assert optimality([], messages=0, recorded=0).text().startswith("0 messages, 0 recorded")


@settings(max_examples=60, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=14))
def test_lower_bound_never_exceeds_the_brute_force_minimum_cover(
    pairs: set[tuple[int, int]],
) -> None:
    edges = [((a, 0), (b, 0)) for a, b in pairs if a != b]
    nodes = sorted({v for e in edges for v in e})
    best = min(
        k
        for k in range(len(nodes) + 1)
        for cover in combinations(nodes, k)
        if all(a in cover or b in cover for a, b in edges)
    )
    bound = optimality(edges, messages=len(nodes), recorded=best).lower_bound
    assert bound <= best
    graph = nx.Graph(edges)
    if all(nx.is_bipartite(graph.subgraph(c)) for c in nx.connected_components(graph)):
        assert bound == best  # König
