"""Compact clock rows (dense rows and delta records) and the C walk's guards.

:class:`~mpvis.model.clocks.ClockStore` keeps a whole row only every
``FULL_EVERY``-th merge of a rank (or when a delta record would be larger),
the others as changes against the rank's previous merge.  These tests run
executions long enough for ranks to cross many dense rows, with the period
and the narrow limit lowered so boundaries and widening fall anywhere, and
check every clock, ``rows`` and ``column`` against brute-force reachability
in the spec's happened-before graph.  Then inconsistent input to the C
functions: an exception, never a crash.
"""

from __future__ import annotations

import copy
import random
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import _ccausal, clocks
from mpvis.model.manager import ModelManager
from tests.model.random_traces import interleave, random_execution
from tests.model.test_happened_before import assert_clocks_match_graph


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 4), st.integers(1, 5), st.integers(0, 4),
       st.integers(0, 60))
def test_compact_rows_match_graph_reachability(seed: int, nprocs: int, every: int,
                                               most: int, limit: int) -> None:
    """Dense rows every ``every`` merges at most, records of up to ``most``
    changes (the real bound would leave these few ranks no records at all),
    rows widened when a count passes ``limit``."""
    header, recs = random_execution(seed, nprocs, steps=60)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(clocks, "FULL_EVERY", every)
        mp.setattr(clocks, "record_max", lambda n: most)
        mp.setattr(clocks, "_NARROW_MAX", limit)
        m = ModelManager(header)
        m.add_batch(interleave(copy.deepcopy(recs), random.Random(seed)))
        m.finish()
    assert_clocks_match_graph(m, recs, nprocs)
    cs = m.clocks
    for r in range(nprocs):
        seqs = list(cs.merge_seq[r])
        rows = cs.rows(r)
        # a merge row is its event's clock (whose own component is seq + 1)
        assert rows.tolist() == [m.vector_clock(r, s) for s in seqs]
        for start in range(len(seqs) + 1):
            assert cs.rows(r, start).tolist() == rows[start:].tolist()
        count = m.count(r)
        for j in range(nprocs):
            assert cs.column(r, j, count).tolist() == [m.vector_clock(r, s)[j]
                                                       for s in range(count)]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.integers(1, 5), st.integers(0, 60))
def test_happened_before_many_equals_one_by_one(seed: int, nprocs: int, every: int,
                                               limit: int) -> None:
    """The batch query (one C call) answers what the scalar one answers, for
    every pair of processed events (same rank included), on compact and
    widened rows."""
    header, recs = random_execution(seed, nprocs, steps=40)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(clocks, "FULL_EVERY", every)
        mp.setattr(clocks, "_NARROW_MAX", limit)
        m = ModelManager(header)
        m.add_batch(interleave(copy.deepcopy(recs), random.Random(seed)))
        m.finish()
    keys = [(r, s) for r in range(nprocs) for s in range(m.done[r])]
    pairs = [(a, b) for a in keys for b in keys]
    a_rank, a_seq, b_rank, b_seq = (np.array(x, dtype=np.int64).reshape(-1) for x in (
        [a[0] for a, _ in pairs], [a[1] for a, _ in pairs],
        [b[0] for _, b in pairs], [b[1] for _, b in pairs]))
    got = m.clocks.happened_before_many(a_rank, a_seq, b_rank, b_seq)
    assert got.tolist() == [m.clocks.happened_before(a, b) for a, b in pairs]
    # the component the batch reads is the clock's, its own one included
    comp = np.empty(len(pairs), dtype=np.int32)
    _ccausal.components(m.clocks._rows_ctx, b_rank, b_seq, a_rank, comp)
    assert comp.tolist() == [m.clocks.clock(*b)[a[0]] for a, b in pairs]


def test_components_on_bad_arguments_raise() -> None:
    cs = _store_with_rows()
    one = np.zeros(1, dtype=np.int64)
    out = np.empty(1, dtype=np.int32)
    for q, s, j in ((5, 0, 0), (0, 0, 2), (-1, 0, 0), (0, -1, 1), (0, 1 << 40, 1)):
        with pytest.raises(ValueError, match="out of range"):
            _ccausal.components(cs._rows_ctx, one + q, one + s, one + j, out)
    with pytest.raises(ValueError, match="different lengths"):
        _ccausal.components(cs._rows_ctx, one, one, np.zeros(2, dtype=np.int64), out)
    with pytest.raises(ValueError, match="different lengths"):
        _ccausal.components(cs._rows_ctx, one, one, one, np.empty(3, dtype=np.int32))
    with pytest.raises(TypeError):
        _ccausal.components(cs._rows_ctx, one.astype(np.int32), one, one, out)
    with pytest.raises(TypeError):
        _ccausal.components(cs._rows_ctx, one, one, one, out.astype(np.int64))
    with pytest.raises(TypeError):
        _ccausal.components(cs._rows_ctx, one, one, one)  # type: ignore[call-arg]  # deliberately wrong
    seq = cs.merge_seq[0][-1]
    with pytest.raises(ValueError, match="delta record out of range"):
        _ccausal.components(_ctx(cs, deltas=array("i", [5])), one, one + seq, one + 1, out)
    empty = np.zeros(0, dtype=np.int64)
    _ccausal.components(cs._rows_ctx, empty, empty, empty, np.empty(0, dtype=np.int32))


def _store_with_rows() -> clocks.ClockStore:
    """A model's clock store with merges on both ranks (dense rows and records)."""
    header, recs = random_execution(7, 2, steps=60)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(clocks, "record_max", lambda n: n)
        m = ModelManager(header)
        m.add_batch(recs)
        m.finish()
    rows = [np.frombuffer(m.clocks.merge_row[q], dtype=np.int32) for q in range(2)]
    assert all(len(r) > 1 and (r < 0).any() for r in rows)
    return m.clocks


def _ctx(cs: clocks.ClockStore, merge_row: list[array[int]] | None = None,
         deltas: array[int] | None = None) -> _ccausal.RowsContext:
    chunks, shift, merge_seq, rows, held, every, most = cs._rows_ctx  # a corrupt copy
    return (chunks, shift, merge_seq, rows if merge_row is None else merge_row,
            held if deltas is None else deltas, every, most)


def test_queries_on_corrupt_rows_raise() -> None:
    cs = _store_with_rows()
    seq = cs.merge_seq[0][-1]
    out = np.empty(2, dtype=np.int32)
    far = [array("i", [1 << 30] * len(cs.merge_row[q])) for q in range(2)]
    with pytest.raises(ValueError, match="row that does not exist"):
        _ccausal.clock_row(_ctx(cs, merge_row=far), 0, seq, out)
    bad_delta = [array("i", [0] + [-(1 << 30)] * (len(cs.merge_row[q]) - 1)) for q in range(2)]
    with pytest.raises(ValueError, match="delta record out of range"):
        _ccausal.rows(_ctx(cs, merge_row=bad_delta), 0, 0, np.empty(
            (len(cs.merge_seq[0]), 2), dtype=np.int32))
    no_dense = [array("i", [-1] * len(cs.merge_row[q])) for q in range(2)]
    with pytest.raises(ValueError, match="no dense row"):
        # every merge refers to the one (empty) delta record
        _ccausal.component(_ctx(cs, merge_row=no_dense, deltas=array("i", [0])), 0, seq, 1)
    with pytest.raises(ValueError, match="delta record out of range"):
        _ccausal.component(_ctx(cs, deltas=array("i", [5])), 0, seq, 1)
    short = [array("i") for _ in range(2)]
    with pytest.raises(ValueError, match="different lengths"):
        _ccausal.component(_ctx(cs, merge_row=short), 0, seq, 1)
    with pytest.raises(ValueError, match="rank out of range"):
        _ccausal.component(cs._rows_ctx, 5, seq, 1)
    with pytest.raises(ValueError, match="one entry per rank"):
        _ccausal.clock_row(cs._rows_ctx, 0, seq, np.empty(3, dtype=np.int32))
    with pytest.raises(TypeError):
        _ccausal.clock_row(cs._rows_ctx, 0, seq, np.empty(2, dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        _ccausal.join(cs._rows_ctx, array("i", [0, 9]), array("i", [0, 0]), out)
    with pytest.raises(ValueError, match="a seq per rank"):
        _ccausal.join(cs._rows_ctx, array("i", [0, 1]), array("i", [0]), out)
    with pytest.raises(TypeError):
        _ccausal.rows((1, 2, 3), 0, 0, out)  # type: ignore[arg-type]  # deliberately wrong


def test_walk_on_inconsistent_columns_raises() -> None:
    """The walk reads every index it is given from columns and lists it does
    not own: out-of-range ones raise, the interpreter survives."""
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2}
    m = ModelManager(header)
    m.add_batch([
        {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 0, "blocking": True,
         "sync": False},
        {"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 0, "blocking": True},
        {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 0, "send": [0, 0]},
    ])
    store, cs = m.store, m.clocks
    k_consume, k_coll, k_exit = clocks._MERGE_KINDS

    def ctx(by_rank: list[array[int]], merge_at: list[array[int]], partner: array[int],
            ahead: array[int] | None = None, *,
            lam_last: array[int] | None = None,
            colls: tuple[Any, ...] | None = None) -> _ccausal.AdvanceContext:
        return (by_rank, merge_at, store.c_kind.data, partner, store.c_rank.data,
                store.c_seq.data, array("i", [-1] * 3), [1, 0],
                array("q", [-1, 0, 0] * 2) if ahead is None else ahead, cs._rows_ctx,
                k_consume, k_coll, k_exit, array("q", [0, -1]) if lam_last is None else lam_last,
                [{}, {}], set(), array("q"), lambda status: 65535,
                lambda r, why, s, forced, nrows, seqs: (-1, 0, 0, nrows, 65535),
                lambda r, seqs: None,
                *(([array("i"), array("i")], [array("i"), array("i")], array("i"), array("i"),
                   array("b"), []) if colls is None else colls))

    good_at = [array("i"), array("i", [1])]
    good = ctx(store.by_rank, good_at, store.c_partner.data)
    advance = _ccausal.advance
    with pytest.raises(ValueError, match="out of range"):  # an event index past the columns
        advance(ctx([array("q", [0]), array("q", [1, 99])], good_at, store.c_partner.data),
                {1}, -1, 1, 65535)
    with pytest.raises(ValueError, match="out of range"):  # a consume's send past the columns
        advance(ctx(store.by_rank, good_at, array("q", [2, -1, 1 << 40])), {1}, -1, 1, 65535)
    with pytest.raises(ValueError, match="merges no clock"):  # a stop that is a recv
        advance(ctx(store.by_rank, [array("i"), array("i", [0])], store.c_partner.data),
                {1}, -1, 1, 65535)
    with pytest.raises(ValueError, match="out of range"):
        advance(good, {7}, -1, 1, 65535)
    with pytest.raises(ValueError, match="out of range"):
        advance(good, {1}, 7, 1, 65535)
    with pytest.raises(ValueError, match="three entries per rank"):
        advance(ctx(store.by_rank, good_at, store.c_partner.data, array("q", [-1])),
                {1}, -1, 1, 65535)
    with pytest.raises(ValueError, match="Lamport clock out of range"):
        advance(ctx(store.by_rank, good_at, store.c_partner.data, lam_last=array("q", [0, -5])),
                {1}, -1, 1, 65535)
    # the collective instances: a rank's lists of unequal length, an instance past
    # the instances' arrays, arrays of unequal length, a waiting entry of the wrong type
    inst = (array("i", [2]), array("i", [0]), array("b", [0]), [None])
    with pytest.raises(ValueError, match="differ in length"):
        advance(ctx(store.by_rank, good_at, store.c_partner.data,
                    colls=([array("i"), array("i", [1])], [array("i"), array("i")], *inst)),
                {1}, -1, 1, 65535)
    with pytest.raises(ValueError, match="differ in length"):
        advance(ctx(store.by_rank, good_at, store.c_partner.data,
                    colls=([array("i"), array("i")], [array("i"), array("i")],
                           array("i", [2]), array("i"), array("b", [0]), [None])),
                {1}, -1, 1, 65535)
    with pytest.raises(TypeError):
        advance(ctx(store.by_rank, good_at, store.c_partner.data,
                    colls=([array("i"), array("i")], [array("i"), array("i")],
                           array("q", [2]), array("i", [0]), array("b", [0]), [None])),
                {1}, -1, 1, 65535)
    with pytest.raises(TypeError):
        advance(ctx(store.by_rank, good_at, store.c_partner.data,
                    colls=([array("i"), array("i")], [array("i")], *inst)),
                {1}, -1, 1, 65535)
    with pytest.raises(TypeError):
        advance(ctx(store.by_rank, good_at, store.c_partner.data,
                    colls=([array("i"), array("i")], [array("i"), array("i")],
                           array("i", [2]), array("i", [0]), array("b", [0]), (None,))),
                {1}, -1, 1, 65535)
    with pytest.raises(TypeError):
        advance(good, [1], -1, 1, 65535)  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(TypeError):
        advance((), {1}, -1, 1, 65535)  # type: ignore[arg-type]  # deliberately wrong
    # the model is untouched by the failed walks' arguments and still answers
    assert m.happened_before((0, 0), (1, 1))


def test_a_chain_of_waits_is_released_when_its_first_send_arrives() -> None:
    """Rank 2 waits on rank 1's send, which comes after rank 1's consume of
    rank 0's send: when rank 0's send arrives last, the whole chain is
    processed (the waiting ranks are woken by the walk, not left behind),
    with the clocks the chain implies."""
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 3}
    m = ModelManager(header)

    def hop(rank: int, src: int, send_seq: int) -> list[dict[str, object]]:
        return [{"rank": rank, "seq": 0, "kind": "recv", "src": src, "tag": 0, "blocking": True},
                {"rank": rank, "seq": 1, "kind": "consume", "recv": 0, "src": src, "tag": 0,
                 "send": [src, send_seq]}]

    m.add_batch(hop(2, 1, 2))
    m.add_batch([*hop(1, 0, 0), {"rank": 1, "seq": 2, "kind": "send", "dest": 2, "tag": 0,
                                 "blocking": True, "sync": False}])
    assert m.causal.done == [0, 1, 1]  # rank 1 waits for rank 0's send, rank 2 for rank 1's
    m.add_batch([{"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 0, "blocking": True,
                  "sync": False}])
    assert m.causal.done == [1, 3, 2]
    assert m.clocks.clock(2, 1).tolist() == [1, 3, 2]
    assert m.happened_before((0, 0), (2, 1))
    lam = m.store.c_lamport.data
    assert [lam[m.store.by_rank[2][1]], lam[m.store.by_rank[1][2]]] == [3, 2]
