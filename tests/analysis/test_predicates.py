"""Predicate detection against brute-force enumeration of all consistent cuts."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.cones import ConeIndex
from mpvis.analysis.predicate_lang import holds
from mpvis.analysis.predicates import (
    GlobalPredicate,
    LocalPredicate,
    PredicateError,
    PredicateEvaluator,
    PredicateSet,
    detect_conjunctive,
    detect_disjunctive,
    is_consistent,
    parse_definition,
)
from mpvis.protocol.record_types import Record
from mpvis.sim.api import simulate
from tests.analysis.test_cones_traces import hb_graph, random_trace
from tests.fixtures import model_of

Cut = tuple[int, ...]

EXPRESSIONS = [
    "x > 1",
    "x == 0",
    "x >= 2 and phase == 'b'",
    "phase == 'a' or x == 3",
    "not (x < 2)",
    "kind == 'consume'",
    "kind == 'state' and x != 1",
    "kind == 'recv' and event.blocking",
    "event.tag == 1",
    "true",
    "false",
    "not x",
]


def brute_value(records: list[Record], pred: LocalPredicate, k: int) -> bool:
    """The predicate after ``k`` events of its rank, folding ``state`` records."""
    mine = sorted((r for r in records if r["rank"] == pred.rank), key=lambda r: r["seq"])
    vars_: dict[str, Any] = {}
    for rec in mine[:k]:
        if rec["kind"] == "state":
            vars_.update(rec["vars"])
    last = mine[k - 1] if k else None
    return holds(pred.tree, vars_, last["kind"] if last else None, last)


def consistent_cuts(records: list[Record], nprocs: int) -> list[Cut]:
    """Every cut closed under the happened-before edges of the plain graph."""
    g = hb_graph(records)
    counts = [sum(1 for r in records if r["rank"] == q) for q in range(nprocs)]
    out = []
    for cut in itertools.product(*(range(c + 1) for c in counts)):
        if all(v[1] >= cut[v[0]] or u[1] < cut[u[0]] for u, v in g.edges):
            out.append(cut)
    return out


def random_preds(data: st.DataObject, nprocs: int) -> list[LocalPredicate]:
    n = data.draw(st.integers(1, 3))
    return [
        LocalPredicate.make(
            f"p{i}", data.draw(st.integers(0, nprocs - 1)), data.draw(st.sampled_from(EXPRESSIONS))
        )
        for i in range(n)
    ]


def leq(a: Cut, b: Cut) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True))


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_conjunctive_is_the_least_satisfying_consistent_cut(seed: int, data: st.DataObject) -> None:
    header, records = random_trace(seed, max_procs=3, steps=14)
    m = model_of(header, records)
    preds = random_preds(data, m.nprocs)
    cuts = consistent_cuts(records, m.nprocs)
    sat = [c for c in cuts if all(brute_value(records, p, c[p.rank]) for p in preds)]
    got = detect_conjunctive(PredicateEvaluator(m), preds)
    if not sat:
        assert got is None
    else:
        assert got in sat
        assert all(leq(got, c) for c in sat)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_disjunctive_minimal_cuts(seed: int, data: st.DataObject) -> None:
    header, records = random_trace(seed, max_procs=3, steps=14)
    m = model_of(header, records)
    preds = random_preds(data, m.nprocs)
    cuts = consistent_cuts(records, m.nprocs)
    sat = [c for c in cuts if any(brute_value(records, p, c[p.rank]) for p in preds)]
    minimal = {c for c in sat if not any(leq(o, c) and o != c for o in sat)}
    got = detect_disjunctive(PredicateEvaluator(m), preds)
    assert {cut for _, _, cut in got.minimal} == minimal
    assert got.holds == bool(sat)
    for name, event, cut in got.minimal:
        pred = next(p for p in preds if p.name == name)
        assert brute_value(records, pred, cut[pred.rank])
        assert (event is None) == (cut[pred.rank] == 0)
        if event is not None:
            assert event == (pred.rank, cut[pred.rank] - 1)
            assert not brute_value(records, pred, cut[pred.rank] - 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_truth_and_frontier_values_match_brute_force(seed: int, data: st.DataObject) -> None:
    header, records = random_trace(seed, steps=25)
    m = model_of(header, records)
    preds = random_preds(data, m.nprocs)
    ev = PredicateEvaluator(m)
    for p in preds:
        want = [brute_value(records, p, k) for k in range(m.count(p.rank) + 1)]
        assert ev.truth(p).tolist() == want
    g = hb_graph(records)
    e = data.draw(st.sampled_from(sorted(g.nodes)))
    cone = ConeIndex(m).cone(*e)
    assert is_consistent(m, cone.past)
    values = ev.values_at(preds, cone.past)
    assert values == {p.name: brute_value(records, p, cone.past[p.rank]) for p in preds}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_is_consistent_matches_graph_closure(seed: int) -> None:
    header, records = random_trace(seed, max_procs=3, steps=10)
    m = model_of(header, records)
    good = set(consistent_cuts(records, m.nprocs))
    counts = [m.count(r) for r in range(m.nprocs)]
    for cut in itertools.product(*(range(c + 1) for c in counts)):
        assert is_consistent(m, cut) == (cut in good)


def test_truth_follows_a_growing_model() -> None:
    header, records = simulate("master_worker", 3)
    ev_model = model_of(header, records[: len(records) // 2])
    pred = parse_definition("a=0:done >= 1")
    ev = PredicateEvaluator(ev_model)
    first = ev.truth(pred).copy()
    ev_model.add_batch(records[len(records) // 2 :])
    assert len(ev.truth(pred)) == ev_model.count(0) + 1 > len(first)
    assert ev.truth(pred)[: len(first)].tolist() == first.tolist()


def test_scenario_conjunction_needs_consistency() -> None:
    """On the master-worker demo: the master's count reaches 1 only in a cut
    that contains the consume of a worker's result, hence that worker's send."""
    header, records = simulate("master_worker", 0)
    m = model_of(header, records)
    ev = PredicateEvaluator(m)
    a = parse_definition("a=0:done >= 1")
    cut = detect_conjunctive(ev, [a])
    assert cut is not None
    assert is_consistent(m, cut)
    assert sum(cut[1:]) > 0
    assert ev.values_at([a], cut) == {"a": True}
    assert detect_conjunctive(ev, [parse_definition("n=0:done > 1000000000")]) is None


def test_definitions_and_settings_round_trip() -> None:
    pred = parse_definition('hot=2:x > 3 and phase == "update"')
    assert (pred.name, pred.rank, pred.source) == ("hot", 2, 'x > 3 and phase == "update"')
    ps = PredicateSet()
    ps.add_local(pred)
    ps.add_local(parse_definition("cold=1:x < 0"))
    ps.add_global(GlobalPredicate("both", "conj", ("hot", "cold")))
    again = PredicateSet.from_settings(ps.to_settings())
    assert again.to_settings() == ps.to_settings()
    assert again.parts_of("both") == [again.locals["hot"], again.locals["cold"]]
    ps.remove("cold")
    assert "both" not in ps.globals


@pytest.mark.parametrize(
    "text",
    ["noequals", "a=x:1", "a=1", "=1:x", "a b=1:x", "a=-1:x", "a=1:x >", "a=1:"],
)
def test_bad_definitions_are_refused(text: str) -> None:
    with pytest.raises(PredicateError):
        parse_definition(text)


def test_bad_sets_are_refused() -> None:
    ps = PredicateSet()
    with pytest.raises(PredicateError, match="unknown local"):
        ps.add_global(GlobalPredicate("g", "conj", ("nope",)))
    with pytest.raises(PredicateError, match="malformed"):
        PredicateSet.from_settings({"local": [{"name": "a"}]})
    with pytest.raises(PredicateError, match="mode"):
        PredicateSet.from_settings(
            {
                "local": [{"name": "a", "rank": 0, "expr": "x"}],
                "global": [{"name": "g", "mode": "xor", "parts": ["a"]}],
            }
        )
    header, records = simulate("ring", 0)
    ev = PredicateEvaluator(model_of(header, records))
    with pytest.raises(PredicateError, match="not in the run"):
        ev.truth(parse_definition("far=99:x"))
