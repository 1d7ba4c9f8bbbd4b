"""The POEG, its exact ordering counts and its decomposition (Schaeli et al.).

Section 7's numbers on Figure 10's program; counts against enumeration on
random orders and on random traces; the decomposition against its definition.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.linext import CountLimitError, count_orderings, series_parts
from mpvis.analysis.poeg import Poeg, poeg_of
from mpvis.analysis.poeg_decompose import decompose, rank_order
from mpvis.sim.neighbor_exchange import neighbor_exchange_trace
from tests.analysis.poeg_oracle import (
    downset_count,
    enumerate_count,
    fig10_order,
    trace_order,
)
from tests.analysis.test_cones_traces import random_trace
from tests.fixtures import model_of


def _fig10(nprocs: int, iterations: int, *, with_calls: bool = True) -> Poeg:
    return poeg_of(model_of(*neighbor_exchange_trace(nprocs, iterations, with_calls=with_calls)))


def test_section7_counts() -> None:
    """60, 6268 and about 6.5e5 orderings for 1, 2, 3 iterations on 3 ranks."""
    counts = [count_orderings(_fig10(3, k).preds) for k in (1, 2, 3)]
    assert counts[:2] == [60, 6268]
    assert abs(counts[2] - 6.5e5) / 6.5e5 < 0.01


@pytest.mark.parametrize("nprocs", [3, 4, 5, 6])
@pytest.mark.parametrize("iterations", [1, 2, 3])
@pytest.mark.parametrize("with_calls", [True, False])
def test_fig10_matches_independent_count(nprocs: int, iterations: int, with_calls: bool) -> None:
    """With or without ``call`` (Sendrecv halves paired by site), the same count."""
    poeg = _fig10(nprocs, iterations, with_calls=with_calls)
    _, preds = fig10_order(nprocs, iterations)
    assert len(poeg.nodes) == len(preds)
    assert count_orderings(poeg.preds) == downset_count(preds)


@pytest.mark.parametrize("nprocs", [3, 4, 6])
@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_fig10_after_decomposition(nprocs: int, iterations: int) -> None:
    """Figure 11: 2*2*maxIter orderings for each middle rank, one for the ends."""
    d = decompose(_fig10(nprocs, iterations))
    for part in d.ranks:
        middle = 0 < part.rank < nprocs - 1
        assert part.after_subgroups == (2 * 2 * iterations if middle else 1)
        assert part.orderings == (4**iterations if middle else 1)
        if middle:
            assert [g.orderings for g in part.subgroups] == [2] * (2 * iterations)
    assert d.after_process == (nprocs - 2) * 4**iterations + 2
    assert d.after_subgroups == (nprocs - 2) * 4 * iterations + 2


def test_count_limit_is_reported() -> None:
    poeg = _fig10(4, 2)
    with pytest.raises(CountLimitError):
        count_orderings(poeg.preds, limit=3)
    d = decompose(poeg, limit=3)
    assert d.orderings is None and d.note and "downsets" in d.note
    assert d.to_json()["after_subgroups"] == 2 * 4 * 2 + 2


def _random_order(seed: int, n: int, density: float) -> list[int]:
    """A random partial order on ``n`` nodes (edges i -> j, i < j, closed)."""
    rng = random.Random(seed)
    perm = list(range(n))
    rng.shuffle(perm)  # node names in a random order, not a linear extension
    preds = [0] * n
    for i, j in combinations(range(n), 2):
        if rng.random() < density:
            preds[perm[j]] |= 1 << perm[i] | preds[perm[i]]
    for j in range(n):  # close transitively (predecessors listed in topological order)
        for i in range(j):
            if preds[perm[j]] >> perm[i] & 1:
                preds[perm[j]] |= preds[perm[i]]
    return preds


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 8), st.floats(0.0, 0.7))
def test_count_matches_enumeration(seed: int, n: int, density: float) -> None:
    preds = _random_order(seed, n, density)
    assert count_orderings(preds) == enumerate_count(preds)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8), st.floats(0.0, 0.8))
def test_series_parts_by_definition(seed: int, n: int, density: float) -> None:
    """Every cut really separates, and no block could be cut further."""
    preds = _random_order(seed, n, density)
    parts = series_parts(preds, (1 << n) - 1)
    union = 0
    for p in parts:
        assert p and not union & p
        union |= p
    assert union == (1 << n) - 1
    for k, later in enumerate(parts):  # everything of earlier blocks is before `later`
        before = 0
        for p in parts[:k]:
            before |= p
        for v in range(n):
            if later >> v & 1:
                assert preds[v] & before == before
    for block in parts:  # indecomposable: no proper split D < U inside the block
        members = [v for v in range(n) if block >> v & 1]
        for size in range(1, len(members)):
            for down in combinations(members, size):
                dmask = sum(1 << v for v in down)
                ups = [v for v in members if v not in down]
                assert not all(preds[u] & dmask == dmask for u in ups)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_random_traces_against_oracle(seed: int) -> None:
    """Held-out random traces: same order as the networkx oracle, counts by enumeration."""
    header, records = random_trace(seed, max_procs=3, steps=12)
    poeg = poeg_of(model_of(header, records))
    keys, preds = trace_order(header["nprocs"], records)
    assert list(poeg.nodes) == keys
    assert list(poeg.preds) == preds
    if len(keys) <= 9:
        check_counts(poeg, preds, enumerate_count)


def check_counts(poeg: Poeg, preds: list[int], count: Callable[[list[int]], int]) -> None:
    """:func:`decompose`'s counts are the oracle ``count``'s (of the whole order
    ``preds`` and of each rank's), each rank's is the product of its subgroups',
    and every subgroup boundary separates: all earlier events before all later ones."""
    d = decompose(poeg)
    assert d.orderings == count(preds)
    for part in d.ranks:
        _nodes, local = rank_order(poeg, part.rank)
        assert part.orderings == count(local)
        assert math.prod(g.orderings for g in part.subgroups) == part.orderings
        seen: list[int] = []
        for g in part.subgroups:
            for v in g.nodes:
                assert all(poeg.before(u, v) for u in seen)
            seen += g.nodes


def test_nonblocking_receive_floats_until_its_wait() -> None:
    """Irecv; Send; Wait: the delivery may come before or after the send."""
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2}
    records = [
        {"rank": 0, "seq": 0, "kind": "recv", "src": 1, "tag": 0, "blocking": False, "req": 1},
        {"rank": 0, "seq": 1, "kind": "send", "dest": 1, "tag": 0, "blocking": True,
         "sync": False},
        {"rank": 0, "seq": 2, "kind": "consume", "recv": 0, "src": 1, "tag": 0, "send": [1, 0]},
        {"rank": 0, "seq": 3, "kind": "wait", "reqs": [1]},
        {"rank": 0, "seq": 4, "kind": "send", "dest": 1, "tag": 1, "blocking": True,
         "sync": False},
        {"rank": 1, "seq": 0, "kind": "send", "dest": 0, "tag": 0, "blocking": True,
         "sync": False},
        {"rank": 1, "seq": 1, "kind": "recv", "src": 0, "tag": 0, "blocking": True},
        {"rank": 1, "seq": 2, "kind": "consume", "recv": 1, "src": 0, "tag": 0, "send": [0, 1]},
        {"rank": 1, "seq": 3, "kind": "recv", "src": 0, "tag": 1, "blocking": True},
        {"rank": 1, "seq": 4, "kind": "consume", "recv": 3, "src": 0, "tag": 1, "send": [0, 4]},
    ]
    poeg = poeg_of(model_of(header, records))
    consume, send, last = poeg.index(0, 2), poeg.index(0, 1), poeg.index(0, 4)
    assert not poeg.before(send, consume) and not poeg.before(consume, send)
    assert poeg.before(consume, last) and poeg.before(send, last)
    assert decompose(poeg).ranks[0].orderings == 2


def test_sendrecv_pairing_by_partial_call_field() -> None:
    """A library that gives ``call`` only to a Sendrecv's records: paired without sites."""
    header, records = neighbor_exchange_trace(4, 2, with_calls=False)
    by_key = {(r["rank"], r["seq"]): r for r in records}
    for rec in records:
        rec.pop("site", None)
    for rec in records:
        prev = by_key.get((rec["rank"], rec["seq"] - 1))
        if rec["kind"] == "recv" and prev is not None and prev["kind"] == "send":
            prev["call"] = prev["seq"]  # as the mpi4py library writes it: the send half only
    paired = poeg_of(model_of(header, records))
    assert set(paired.pairing) == {"site"}
    _, preds = fig10_order(4, 2)
    assert count_orderings(paired.preds) == downset_count(preds)
    for rec in records:
        rec.pop("call", None)
    unpaired = poeg_of(model_of(header, records))  # no site, no call: halves in program order
    assert count_orderings(unpaired.preds) < count_orderings(paired.preds)


def test_approx_any_size() -> None:
    from mpvis.analysis.linext import approx

    assert [approx(n) for n in (0, 999, 653916, 999_500, 7 * 10**400)] == [
        "0", "999", "6.54e5", "1.00e6", "7.00e400"]
    assert approx(1862610445146582197016908571072300287, 2) == "1.9e36"
