"""The event store's columnar queries against the trace records, event by event.

The oracle is the plain one: each event's trace record (``m.record``) and the
model's per-event queries (``m.partner``, ``m.gidx``), compared with what
:func:`run_arrays` and :func:`rank_arrays` give for every position.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import event_arrays
from mpvis.model.event_arrays import (
    EventArrays,
    events_at,
    rank_arrays,
    rank_chunks,
    run_arrays,
)
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import EVENT_KINDS
from mpvis.tracefile.reader import load_trace
from tests.fixtures import model_of
from tests.model.random_traces import interleave, random_execution

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample_traces").rglob("*.jsonl"))
#: Record fields with a column of their own (the rest are extras).
COLUMN_FIELDS = {"rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag",
                 "blocking", "sync", "req", "recv", "send", "size", "call"}


def _expected(rec: Record, m: ModelManager) -> dict[str, Any]:
    """What the arrays must say of the event whose record is ``rec``."""
    kind = rec["kind"]
    ref = -1
    if kind == "recv":
        consume = m.consume_of(rec["rank"], rec["seq"])
        ref = -1 if consume is None else consume
    elif kind == "consume":
        ref = rec["recv"]
    return {
        "rank": rec["rank"], "seq": rec["seq"], "kind": kind,
        "blocking": bool(rec.get("blocking", False)), "comm": rec.get("comm", 0),
        "peer": rec.get("dest", rec.get("src")), "tag": rec.get("tag"),
        "call": rec.get("call", -1), "req": rec.get("req", -1), "ref": ref,
        "extras": {k: v for k, v in rec.items() if k not in COLUMN_FIELDS},
    }


def _actual(ev: EventArrays, p: int) -> dict[str, Any]:
    kind = EVENT_KINDS[int(ev.kind[p])]
    pos = np.array([p])
    peer = int(ev.field("peer", pos)[0]) if kind in ("send", "recv", "consume") else None
    tag = int(ev.field("tag", pos)[0]) if kind in ("send", "recv", "consume") else None
    return {
        "rank": int(ev.field("rank", pos)[0]), "seq": int(ev.field("seq", pos)[0]),
        "kind": kind, "blocking": bool(ev.blocking[p]), "comm": int(ev.field("comm", pos)[0]),
        "peer": peer, "tag": tag, "call": int(ev.field("call", pos)[0]),
        "req": int(ev.field("req", pos)[0]) if kind in ("send", "recv") else -1,
        "ref": int(ev.field("ref", pos)[0]) if kind in ("recv", "consume") else -1,
        "extras": dict(ev.extras(pos)[0]),
    }


def _check(m: ModelManager) -> None:
    ev = run_arrays(m.store)
    assert ev.counts == [m.count(r) for r in range(m.nprocs)]
    assert len(ev) == m.event_count
    keys = [(r, s) for r in range(m.nprocs) for s in range(m.count(r))]
    assert [(int(a), int(b)) for a, b in zip(ev.rank, ev.seq, strict=True)] == keys
    assert ev.indices.tolist() == [m.gidx(r, s) for r, s in keys]
    everything = np.arange(len(ev))
    where = {k: p for p, k in enumerate(keys)}
    partners = ev.partner(everything).tolist()
    for p, (r, s) in enumerate(keys):
        rec = m.record(r, s)
        assert _actual(ev, p) == _expected(rec, m), (r, s)
        other = m.partner(r, s)
        assert partners[p] == (-1 if other is None else where[other])
        assert int(ev.position(np.array([r]), np.array([s]))[0]) == p
    rs = np.array([r for r, _ in keys] + [0, -1, m.nprocs, 0], dtype=np.int64)
    ss = np.array([s for _, s in keys] + [m.count(0), 0, 0, -1], dtype=np.int64)
    assert ev.at("call", rs, ss, missing=-7).tolist() == \
        [m.record(r, s).get("call", -1) for r, s in keys] + [-7] * 4
    shuffled = np.random.default_rng(len(keys)).permutation(len(rs))
    some, held = events_at(m.store, rs[shuffled], ss[shuffled])
    assert held.tolist() == [i < len(keys) for i in shuffled.tolist()]
    assert some.indices.tolist() == [m.gidx(*keys[i]) for i in shuffled.tolist()
                                     if i < len(keys)]
    some_events = np.random.default_rng(len(keys) + 1).permutation(len(ev))[:len(ev) // 2 + 1]
    lengths, flat = ev.requests(some_events)
    want = [m.record(*keys[p]).get("reqs", []) for p in some_events.tolist()]
    assert lengths.tolist() == [len(q) for q in want]
    assert flat.tolist() == [q for reqs in want for q in reqs]
    for kind in ("send", "recv", "consume", "wait", "coll", "state", "final"):
        assert ev.of_kind(kind).tolist() == [p for p, k in enumerate(keys)
                                             if m.record(*k)["kind"] == kind]
    # the events whose extra field has a value: every value some record has
    extras = [_expected(m.record(*k), m)["extras"] for k in keys]
    pairs = {(k, repr(v)): (k, v) for ex in extras for k, v in ex.items()}
    for name, value in [*pairs.values(), ("mode", "buffered")]:
        assert ev.with_extra(name, value).tolist() == [
            p for p, ex in enumerate(extras) if name in ex and ex[name] == value]
    for r in range(m.nprocs):
        n = m.count(r)
        for start, stop in ((0, None), (n // 3, n - n // 3), (n, n + 5)):
            part = rank_arrays(m.store, r, start, stop)
            seqs = range(n)[start:stop]
            assert part.indices.tolist() == [m.gidx(r, s) for s in seqs]
            assert [_actual(part, i) for i in range(len(part))] == \
                [_expected(m.record(r, s), m) for s in seqs]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_traces(path: Path) -> None:
    _check(load_trace(path))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5))
def test_random_executions_in_any_arrival_order(seed: int, nprocs: int) -> None:
    header, recs = random_execution(seed, nprocs=nprocs, steps=24)
    _check(model_of(header, interleave(recs, random.Random(seed))))


def test_a_query_is_a_snapshot_and_does_not_pin_the_store() -> None:
    """Arrays kept while the model grows keep their events, and the rank's
    events can still grow (a NumPy view of them would forbid it)."""
    header, recs = random_execution(7, nprocs=2, steps=30)
    half = len(recs) // 2
    m = model_of(header, recs[:half], finish=False)
    run, rank0 = run_arrays(m.store), rank_arrays(m.store, 0)
    before = (run.indices.tolist(), run.kind.tolist(), rank0.indices.tolist())
    m.add_batch(recs[half:])
    m.finish()
    assert (run.indices.tolist(), run.kind.tolist(), rank0.indices.tolist()) == before
    assert len(run_arrays(m.store)) == m.event_count > len(run)


def test_an_empty_run() -> None:
    m = model_of({"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 3}, [])
    ev = run_arrays(m.store)
    assert (len(ev), ev.counts, ev.starts.tolist()) == (0, [0, 0, 0], [0, 0, 0, 0])
    assert ev.of_kind("send").tolist() == []
    assert ev.with_extra("mode", "buffered").tolist() == []
    assert ev.partner(np.zeros(0, np.int64)).tolist() == []
    assert len(rank_arrays(m.store, 2)) == 0


def test_buffered_sends_by_their_extra_field() -> None:
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2}
    send = {"kind": "send", "dest": 1, "tag": 0, "blocking": True, "sync": False}
    recs: list[Record] = [
        {"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 0, "blocking": True},
        {"rank": 0, "seq": 0, **send},
        {"rank": 0, "seq": 1, **send, "mode": "buffered"},
        {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 0, "send": [0, 1]},
    ]
    ev = run_arrays(model_of(header, recs, finish=False).store)
    assert ev.with_extra("mode", "buffered").tolist() == [1]  # rank 0's second event
    assert ev.partner(np.arange(4)).tolist() == [-1, 3, -1, 1]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 40))
def test_rank_chunks_and_chunked_lookups_give_the_whole_run(seed: int, nprocs: int,
                                                           chunk: int) -> None:
    """Chunks of whole ranks, joined, are the run's arrays (their partners
    where held, their partners' fields wherever), and events looked up a few
    at a time are those looked up at once."""
    header, recs = random_execution(seed, nprocs=nprocs, steps=24)
    m = model_of(header, interleave(recs, random.Random(seed)))
    whole = run_arrays(m.store)
    chunks = list(rank_chunks(m.store, chunk))
    assert [c.lo for c in chunks] == sorted({c.lo for c in chunks})
    assert [n for c in chunks for n in c.counts] == whole.counts
    assert np.concatenate([c.indices for c in chunks]).tolist() == whole.indices.tolist()
    assert np.concatenate([c.rank for c in chunks]).tolist() == whole.rank.tolist()
    assert np.concatenate([c.seq for c in chunks]).tolist() == whole.seq.tolist()
    everything = np.arange(len(whole))
    has, (p_rank, p_seq) = whole.partner_fields(everything, "rank", "seq")
    partner = whole.partner(everything)
    assert has.tolist() == (partner >= 0).tolist()
    assert p_rank[has].tolist() == whole.rank[partner[has]].tolist()
    assert p_seq[has].tolist() == whole.seq[partner[has]].tolist()
    for c in chunks:
        mine = c.partner(np.arange(len(c)))
        start = int(whole.starts[c.lo])
        inside = (partner[start:start + len(c)] >= whole.starts[c.lo]) & (
            partner[start:start + len(c)] < whole.starts[c.lo + len(c.counts)])
        assert (mine >= 0).tolist() == inside.tolist()
        assert (mine[inside] + start).tolist() == partner[start:start + len(c)][inside].tolist()
    rs = np.concatenate([whole.rank, [-1, nprocs, 0]]).astype(np.int64)
    ss = np.concatenate([whole.seq, [0, 0, 10**6]]).astype(np.int64)
    at_once, held = events_at(m.store, rs, ss)
    old = event_arrays.QUERY_CHUNK
    try:
        event_arrays.QUERY_CHUNK = 3
        pieces, held3 = events_at(m.store, rs, ss)
    finally:
        event_arrays.QUERY_CHUNK = old
    assert held3.tolist() == held.tolist() == [True] * len(whole) + [False] * 3
    assert pieces.indices.tolist() == at_once.indices.tolist() == whole.indices.tolist()
