"""Racing deliveries' orders: the groups, their counts and the orders generated to test."""

from __future__ import annotations

import random
from itertools import permutations

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.delivery_orders import (
    Delivery,
    DeliveryGroup,
    candidate_orders,
    completion_groups,
    delivery_groups,
    subset_orders,
)
from mpvis.analysis.linext import count_orderings
from tests.fixtures import model_of


def _group(seed: int, n: int, density: float, picky: bool) -> DeliveryGroup:
    """Random deliveries of rank 0 (messages from ranks 1..3, tags 0..1), ordered
    consistently with their recorded order; ``picky`` receives name some sources."""
    rng = random.Random(seed)
    preds = [0] * n
    for j in range(n):
        for i in range(j):
            if rng.random() < density:
                preds[j] |= 1 << i | preds[i]
    ds = []
    for k in range(n):
        src, tag = rng.randint(1, 3), rng.randint(0, 1)
        ds.append(Delivery(2 * k, 2 * k + 1, (src, k), tag, 0,
                           src if picky and rng.random() < 0.3 else -1, -1))
    return DeliveryGroup(0, tuple(ds), tuple(preds), count_orderings(preds))


def _admissible(g: DeliveryGroup) -> set[tuple[int, ...]]:
    return {p for p in permutations(range(len(g.deliveries))) if g.admissible(p)}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.floats(0, 0.6), st.booleans())
def test_candidates_are_every_other_admissible_order_once(seed: int, n: int, density: float,
                                                          picky: bool) -> None:
    g = _group(seed, n, density, picky)
    got = list(candidate_orders(g))
    assert len(got) == len(set(got))
    identity = tuple(range(n))
    assert set(got) == _admissible(g) - {identity}
    if not picky:  # every receive takes anything: admissible = linear extensions
        assert len(got) + 1 == g.orderings


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 6), st.floats(0, 0.6))
def test_section5_subset_puts_every_free_pair_back_to_back_both_ways(
        seed: int, n: int, density: float) -> None:
    g = _group(seed, n, density, picky=False)
    tried = [tuple(range(n)), *subset_orders(g)]
    assert len(tried) <= 1 + n + n * (n - 1)

    def adjacent(a: int, b: int) -> bool:
        return any(o[k] == a and o[k + 1] == b for o in tried for k in range(n - 1))

    for a in range(n):
        for b in range(n):
            free = a != b and not g.preds[a] >> b & 1 and not g.preds[b] >> a & 1
            if free:
                assert adjacent(a, b) and adjacent(b, a)
    for a in range(n):  # each message once as late as it can be
        succ = {v for v in range(n) if g.preds[v] >> a & 1}
        assert any(set(o[len(o) - len(succ):]) == succ and o[n - 1 - len(succ)] == a
                   for o in tried)


def _trace() -> tuple[dict, list[dict]]:
    """Rank 0 takes four messages with recv(ANY_SOURCE): 1 and 2 send one each,
    3 sends two (one channel: kept in order), and rank 1 sends a second message
    only after receiving rank 0's reply to the first delivery."""
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 4}
    recs: list[dict] = []
    seq = [0, 0, 0, 0]

    def ev(r: int, kind: str, **f: object) -> int:
        recs.append({"rank": r, "seq": seq[r], "kind": kind, **f})
        seq[r] += 1
        return seq[r] - 1

    def send(r: int, dest: int, tag: int) -> int:
        return ev(r, "send", dest=dest, tag=tag, blocking=True, sync=False)

    def recv(r: int, src: int, tag: int, got: tuple[int, int], tag_got: int) -> None:
        y = ev(r, "recv", src=src, tag=tag, blocking=True)
        ev(r, "consume", recv=y, src=got[0], tag=tag_got, send=list(got))

    a = send(1, 0, 5)
    b = send(2, 0, 5)
    c1, c2 = send(3, 0, 5), send(3, 0, 5)
    recv(0, -1, 5, (1, a), 5)          # 0:0/1
    reply = send(0, 1, 9)              # 0:2
    recv(1, 0, 9, (0, reply), 9)
    late = send(1, 0, 5)               # sent after the reply to delivery 0
    recv(0, -1, 5, (2, b), 5)          # 0:3/4
    recv(0, -1, 5, (3, c1), 5)         # 0:5/6
    recv(0, -1, 5, (3, c2), 5)         # 0:7/8
    recv(0, -1, 5, (1, late), 5)       # 0:9/10
    return header, recs


def test_groups_of_a_trace_follow_causality_and_channels() -> None:
    header, recs = _trace()
    m = model_of(header, recs)
    (g,) = delivery_groups(m, {0: {0, 3, 5, 7, 9}})
    assert [d.recv for d in g.deliveries] == [0, 3, 5, 7, 9]
    # message 0 ([1, a]) before the late one (causality) and before the other [1, x]
    # (channel); the two of rank 3 in their channel's order; 2's free.
    perms = [p for p in permutations(range(5)) if g.admissible(p)]
    assert g.orderings == len(perms)
    assert all(p.index(0) < p.index(4) and p.index(2) < p.index(3) for p in perms)
    assert any(p.index(1) == 0 for p in perms)
    assert g.order_spec((1, 0, 2, 3, 4)) == "0:0=2:0,3=1:0,5=3:0,7=3:1,9=1:3"


def test_receives_naming_different_tags_are_tested_apart() -> None:
    """Rank 0: recv(ANY, tag 0), recv(ANY, tag 1), twice; ranks 1 and 2 send one of each
    tag (different tags: different channels, no order between them).  720 orders of
    four messages would be an upper bound; apart, two classes of two: 2 + 2."""
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 3}
    recs: list[dict] = []
    for w in (1, 2):
        for tag in (0, 1):
            recs.append({"rank": w, "seq": tag, "kind": "send", "dest": 0, "tag": tag,
                         "blocking": True, "sync": False})
    seq = 0
    for src, tag in ((1, 0), (2, 1), (2, 0), (1, 1)):
        recs.append({"rank": 0, "seq": seq, "kind": "recv", "src": -1, "tag": tag,
                     "blocking": True})
        recs.append({"rank": 0, "seq": seq + 1, "kind": "consume", "recv": seq, "src": src,
                     "tag": tag, "send": [src, tag]})
        seq += 2
    m = model_of(header, recs)
    groups = delivery_groups(m, {0: {0, 2, 4, 6}})
    assert [[d.recv for d in g.deliveries] for g in groups] == [[0, 4], [2, 6]]
    assert [g.orderings for g in groups] == [2, 2]
    assert [list(candidate_orders(g)) for g in groups] == [[(1, 0)], [(1, 0)]]
    assert groups[1].order_spec((1, 0)) == "0:2=1:1,6=2:1"


def test_completion_groups_of_recorded_waitany_calls() -> None:
    """Rank 0: three Irecvs with named sources, completed by Waitany calls at 3, 5
    (recorded: two or more requests active) and 7 (the last one, not recorded)."""
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 4}
    recs: list[dict] = []
    for w in (1, 2, 3):
        recs.append({"rank": w, "seq": 0, "kind": "send", "dest": 0, "tag": 3,
                     "blocking": True, "sync": False})
        recs.append({"rank": 0, "seq": w - 1, "kind": "recv", "src": w, "tag": 3,
                     "blocking": False, "req": w - 1})
    for k, w in enumerate((1, 2, 3)):
        recs.append({"rank": 0, "seq": 3 + 2 * k, "kind": "consume", "recv": w - 1, "src": w,
                     "tag": 3, "send": [w, 0], "site": "p.py:9"})
        recs.append({"rank": 0, "seq": 4 + 2 * k, "kind": "wait", "reqs": [w - 1],
                     "site": "p.py:9"})
    m = model_of(header, recs)
    assert delivery_groups(m, {}) == []
    (g,) = completion_groups(m, {0: {3: 0, 5: 1}})
    assert g.kind == "anys" and g.option == "--anys" and g.orderings == 2
    assert [d.recv for d in g.deliveries] == [3, 5]
    assert list(candidate_orders(g)) == [(1, 0)]
    assert g.order_spec((1, 0)) == "0:3=1,5=0"
