"""Cones and frontiers against plain graph reachability on random traces."""

from __future__ import annotations

from itertools import pairwise

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.cones import ConeIndex, cone_of
from mpvis.model.manager import ModelManager
from mpvis.sim.api import simulate
from tests.analysis.test_cones_traces import hb_graph, random_trace
from tests.fixtures import model_of


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32))
def test_cones_match_reachability(seed: int) -> None:
    header, records = random_trace(seed)
    m = model_of(header, records)
    g = hb_graph(records)
    index = ConeIndex(m)
    ranks, seqs = m.c_rank.view(), m.c_seq.view()
    for e in g.nodes:
        past = nx.ancestors(g, e) | {e}
        future = nx.descendants(g, e)
        cone = index.cone(*e)
        assert cone.size == len(past)
        assert cone.future_size == len(future)
        for r in range(m.nprocs):
            mine = [s for q, s in past if q == r]
            assert cone.frontier[r] == (max(mine) if mine else None)
            later = [s for q, s in future if q == r]
            assert cone.future_frontier[r] == (min(later) if later else None)
        keys = list(zip(ranks.tolist(), seqs.tolist(), strict=True))
        assert cone.past_mask(ranks, seqs).tolist() == [k in past for k in keys]
        assert cone.future_mask(ranks, seqs).tolist() == [k in future for k in keys]
        assert all(cone.in_past(*k) == (k in past) for k in keys)
        assert all(cone.in_future(*k) == (k in future) for k in keys)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6))
def test_index_follows_a_growing_model(seed: int, parts: int) -> None:
    """Queries between batches see every event causally known at that time."""
    header, records = random_trace(seed, steps=40)
    g = hb_graph(records)
    m = ModelManager(header)
    index = ConeIndex(m)
    cuts = np.linspace(0, len(records), parts + 1).astype(int)
    for lo, hi in pairwise(cuts.tolist()):
        m.add_batch(records[lo:hi])
        known = {(r, s) for r in range(m.nprocs) for s in range(m.done[r])}
        for e in sorted(known)[:: max(1, len(known) // 8)]:
            cone = index.cone(*e)
            assert cone.future_size == len(nx.descendants(g, e) & known)
            assert cone.size == len(nx.ancestors(g, e)) + 1


def test_json_shape_on_a_scenario() -> None:
    header, records = simulate("ring", 0)
    m = model_of(header, records)
    last = m.count(0) - 1
    out = cone_of(m, 0, last).to_json()
    assert set(out) == {"event", "frontier", "size", "future_size"}
    assert out["event"] == [0, last]
    assert len(out["frontier"]) == m.nprocs
    assert out["frontier"][0] == last
    assert out["size"] == sum(0 if f is None else f + 1 for f in out["frontier"])
    first = cone_of(m, 0, 0).to_json()
    assert first["size"] == 1
    assert first["frontier"] == [0] + [None] * (m.nprocs - 1)


def test_unknown_or_incomplete_events_are_refused() -> None:
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2}
    m = ModelManager(header)
    m.add_batch(
        [
            {"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 0, "blocking": True},
            {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 0, "send": [0, 0]},
        ]
    )
    index = ConeIndex(m)
    with pytest.raises(KeyError, match="not causally complete"):
        index.cone(1, 1)
    with pytest.raises(KeyError, match="not in the trace"):
        index.cone(0, 0)
    m.add_batch(
        [
            {
                "rank": 0,
                "seq": 0,
                "kind": "send",
                "dest": 1,
                "tag": 0,
                "blocking": True,
                "sync": False,
            }
        ]
    )
    assert index.cone(1, 1).frontier == (0, 1)
    assert index.cone(0, 0).future_frontier == (None, 1)
