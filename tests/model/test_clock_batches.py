"""Clock merges done together against one at a time.

:meth:`ClockStore.merge_many` merges a run of consumes' clocks with one
cumulative maximum; the reference is :meth:`ClockStore.merge_one` called for
each.  Then the whole model: causal release defers a rank's ready consumes'
merges (``CausalRelease.batch_merges``); with it off, every merge is done
one at a time.  Both must give the same vector clocks, Lamport clocks and the
same records, in the same order, to analyzers.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import clocks as clocks_module
from mpvis.model.clocks import ClockStore
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from tests.analysis.exec_generator import generate
from tests.model.random_traces import interleave, random_execution


def _all_rows(c: ClockStore) -> list[list[list[int]]]:
    return [c.rows(r).tolist() for r in range(c.nprocs)]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 6), st.integers(0, 40), st.integers(1, 3))
def test_merge_many_equals_merge_one(seed: int, nprocs: int, n: int, shift: int) -> None:
    saved = clocks_module._MAX_SHIFT
    clocks_module._MAX_SHIFT = shift  # tiny chunks, so that runs cross chunk boundaries
    try:
        stores = ClockStore(nprocs), ClockStore(nprocs)
    finally:
        clocks_module._MAX_SHIFT = saved
    rng = random.Random(seed)
    count = [0] * nprocs  # events of each rank so far
    merged: list[list[int]] = [[] for _ in range(nprocs)]  # seqs with a row
    # some history: each rank merges sends of others, one at a time, in both stores
    for _ in range(rng.randrange(30)):
        r = rng.randrange(nprocs)
        q = rng.choice([x for x in range(nprocs) if x != r])
        if count[q] == 0:
            count[q] += 1
            continue
        qs = rng.randrange(count[q])
        count[r] += rng.randrange(3)
        for c in stores:
            c.merge_one(r, count[r], q, qs)
        merged[r].append(count[r])
        count[r] += 1
    r = rng.randrange(nprocs)
    seqs, senders, sseqs = [], [], []
    for _ in range(n):
        q = rng.choice([x for x in range(nprocs) if x != r])
        if count[q] == 0:
            continue
        count[r] += rng.randrange(2)
        seqs.append(count[r])
        senders.append(q)
        sseqs.append(rng.randrange(count[q]))
        count[r] += 1
    for seq, q, qs in zip(seqs, senders, sseqs, strict=True):
        stores[0].merge_one(r, seq, q, qs)
    stores[1].merge_many(r, seqs, senders, sseqs)
    assert _all_rows(stores[0]) == _all_rows(stores[1])
    assert [list(a) for a in stores[0].merge_seq] == [list(a) for a in stores[1].merge_seq]
    for q in range(nprocs):
        for s in range(count[q]):
            assert np.array_equal(stores[0].clock(q, s), stores[1].clock(q, s))


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def feed(self, batch: list[Record]) -> None:
        self.seen.extend((x["rank"], x["seq"]) for x in batch)

    def finish(self) -> None:
        pass


def _run(header: Record, records: list[Record], cuts: list[int], batch: bool) -> object:
    m = ModelManager(header)
    m.causal.batch_merges = batch
    rec = _Recorder()
    m.analyzers.append(rec)
    i = 0
    for k in cuts:
        m.add_batch(records[i:i + k])
        i += k
    m.finish()
    clocks = [m.vector_clock(r, s) for r in range(m.nprocs) for s in range(m.count(r))]
    return rec.seen, list(m.c_lamport.data), clocks, [list(a) for a in m.clocks.merge_seq]


def _compare(header: Record, records: list[Record], rng: random.Random) -> None:
    cuts = [rng.choice([1, 3, 10, 40, 200]) for _ in range(len(records))]
    assert _run(header, records, cuts, True) == _run(header, records, cuts, False)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**9))
def test_deferred_merges_equal_one_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    header, *records = generate(seed, max_procs=4, max_messages=20)
    _compare(header, records, rng)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 4))
def test_deferred_merges_equal_one_at_a_time_interleaved(seed: int, nprocs: int) -> None:
    # few ranks, many steps: long runs of ready consumes (merged with one cumulative maximum)
    rng = random.Random(seed)
    header, records = random_execution(seed, nprocs=nprocs, steps=80)
    _compare(header, interleave(records, rng), rng)
