"""COMPACT batches as columns, against the dict expansion as oracle (``CompactDecoder.decode``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.protocol.codes import (
    MVC_BLOCKING,
    MVC_BUF,
    MVC_CHAN,
    MVC_PAIR,
    MVC_SEND,
    MVC_SYNC,
    MVK_COLL,
    MVK_COLL_EXIT,
    MVK_CONSUME,
    MVK_FINAL,
    MVK_RECV,
    MVK_RECV_CONSUME,
    MVK_SEND,
    MVK_STATE,
    MVK_WAIT,
)
from mpvis.protocol.compact import RECORD, CompactDecoder, compact_body, needs_channels
from mpvis.protocol.compact_columns import compact_columns
from mpvis.protocol.records import RecordError, check_record

NPROCS = 4
SITES = ["a.py:1", "b.py:2", 'q"uote\\.py:3']
_FLAGS = (0, MVC_BLOCKING, MVC_SYNC, MVC_BLOCKING | MVC_SYNC, MVC_SEND, MVC_PAIR | MVC_BLOCKING,
          MVC_CHAN, MVC_BUF | MVC_BLOCKING, MVC_SEND | MVC_CHAN)
_SMALL = st.sampled_from([-2, -1, 0, 1, 2, 3, 4, 7])


_GOOD_FLAGS = (0, MVC_BLOCKING, MVC_SYNC, MVC_BLOCKING | MVC_SYNC, MVC_SEND,
               MVC_SEND | MVC_BLOCKING, MVC_PAIR | MVC_BLOCKING)
_KINDS = (MVK_SEND, MVK_RECV, MVK_CONSUME, MVK_RECV_CONSUME, MVK_FINAL, MVK_SEND,
          MVK_RECV_CONSUME)


@st.composite
def _record(draw: st.DrawFn, good: bool) -> tuple[Any, ...]:
    """The fields of one compact record but ``seq``: valid ones when ``good``, else
    anything (values out of range, unknown sites, waits, channel flags...)."""
    kind = draw(st.sampled_from((*_KINDS, *_PAYLOADS) if draw(st.booleans()) else _KINDS))
    flags = draw(st.sampled_from(_GOOD_FLAGS if good else _FLAGS))
    site = draw(st.sampled_from([1, 2, 3, 1, 0] if good else [1, 9]))
    t = draw(st.floats(allow_nan=True, allow_infinity=True, width=64) | st.floats(0, 100))
    small = st.integers(0, NPROCS - 1) if good else _SMALL
    comm = draw(st.sampled_from([0, 0, 5, 2**31 + 1] if good else [-1, 0]))
    if kind == MVK_RECV_CONSUME:
        ns = draw(st.integers(0, 2**31 - 1))
        comm = (ns << 32) | (comm & 0x7FFFFFFF)
        c = (draw(small) << 32) | (draw(small) & 0xFFFFFFFF)
    else:
        c = draw(small)
    peer = draw(small if not good or kind != MVK_RECV else st.integers(-1, NPROCS - 1))
    call = draw(st.sampled_from([-1, 0, 5, 2**40]))
    return (kind, flags, 0, site, 0, t, comm, peer, draw(small), c, draw(small), call)


#: Payloads of the variable-size kinds, good ones, then bad ones (rule broken, no JSON).
_PAYLOADS: dict[int, tuple[list[Any], list[Any]]] = {
    MVK_WAIT: ([[0, 3], []], ["x", [1.5]]),
    MVK_COLL: ([["barrier", {}], ["bcast", {"root": 1, "count": 2, "dtype": "i"}]],
               [["bcast", {"root": -5}], ["gather", {"blob": b"z"}], "x",
                ["barrier", {"seq": 0}], ["barrier", {"kind": "final"}]]),
    MVK_COLL_EXIT: (["barrier"], [7, ""]),
    MVK_STATE: ([{"i": 1, "s": "a"}, {}], [{"l": [1]}, ["x"]]),
}


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A ``COMPACT`` body, mostly of valid records."""
    good = draw(st.integers(0, 4)) > 0
    recs = draw(st.lists(_record(good), min_size=1, max_size=40))
    seq = draw(st.sampled_from([0, 0, 7, 2**40]))
    extra0 = draw(st.sampled_from([0, 5]))
    extras: list[Any] = []
    packed = bytearray()
    for fields in recs:
        c = fields[9]
        if fields[0] in _PAYLOADS:
            ok, bad = _PAYLOADS[fields[0]]
            c = extra0 + len(extras)
            extras.append(draw(st.sampled_from(ok if good else ok + bad)))
            if not good and draw(st.integers(0, 5)) == 0:
                c += 100  # not among the batch's payloads
        packed += RECORD.pack(*fields[:4], seq, *fields[5:9], c, *fields[10:])
        seq += 2 if fields[0] == MVK_RECV_CONSUME else 1
        if not good and draw(st.integers(0, 10)) == 0:
            seq += 1  # a gap
    return compact_body(0, bytes(packed), 1, list(SITES), extra0, extras)


_NAMES = {MVK_SEND: ["send"], MVK_RECV: ["recv"], MVK_CONSUME: ["consume"],
          MVK_RECV_CONSUME: ["recv", "consume"], MVK_FINAL: ["final"], MVK_WAIT: ["wait"],
          MVK_COLL: ["coll"], MVK_COLL_EXIT: ["coll_exit"], MVK_STATE: ["state"]}


def _kinds_kept(body: dict[str, Any], records: list[dict[str, Any]]) -> bool:
    """Whether each record has its compact record's kind (a collective's payload
    may name another, which only the dict path takes)."""
    kinds = [k for f in RECORD.iter_unpack(body["recs"]) for k in _NAMES.get(f[0], ["?"])]
    return kinds == [r["kind"] for r in records]


def _json(records: list[dict[str, Any]]) -> bool:
    try:
        orjson.dumps(records)
    except TypeError:
        return False
    return True


def _checks(records: list[dict[str, Any]]) -> bool:
    try:
        for r in records:
            check_record(r, NPROCS)
    except RecordError:
        return False
    seqs = [r["seq"] for r in records]
    return seqs == list(range(seqs[0], seqs[0] + len(seqs)))


@settings(max_examples=400, deadline=None)
@given(bodies(), st.integers(0, NPROCS))
def test_columns_hold_exactly_the_records_of_decode(body: dict[str, Any], rank: int) -> None:
    oracle, error = CompactDecoder(rank).decode(body)
    decoder = CompactDecoder(rank)
    cols = compact_columns(decoder, body, NPROCS)
    # taken whole: every good batch without buffer sends or channel consumes
    # (needs_channels: any record flagged so, as the central process routes them)
    takeable = (error is None and rank < NPROCS and _checks(oracle) and not needs_channels(body)
                and _json(oracle) and _kinds_kept(body, oracle))
    if cols is None:
        assert decoder.site_table == [None]  # nothing changed
        assert decoder.site_json() == (b"null",)
        assert not takeable
        return
    assert takeable
    assert decoder.site_table == [None, *SITES]
    assert decoder.site_json() == tuple(map(orjson.dumps, [None, *SITES]))
    assert repr(cols.records()) == repr(oracle)  # repr: NaN times compare equal
    assert len(cols) == len(oracle) and list(cols) == cols.records()
    assert cols[1:] == cols.records()[1:]
    assert cols.jsonl() == b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE)
                                    for r in oracle)
    assert cols.first_seq == oracle[0]["seq"]
    assert cols.has_final == any(r["kind"] == "final" for r in oracle)


def test_a_ring_batch_is_taken_whole() -> None:
    """What a ring's rank records (send, merged receive): the fast path takes it."""
    recs = b"".join([
        RECORD.pack(MVK_SEND, MVC_BLOCKING, 0, 1, 0, 0.5, 0, 1, 3, 0, 0, 0),
        RECORD.pack(MVK_RECV_CONSUME, MVC_BLOCKING | MVC_SEND, 0, 2, 1, 0.75, 1500 << 32,
                    3, -1, (3 << 32) | 2, 4, 1),
        RECORD.pack(MVK_FINAL, 0, 0, 0, 3, 1.0, 0, 0, 0, 0, 0, 2),
    ])
    body = compact_body(0, recs, 1, ["a.py:1", "a.py:2"], 0, [])
    cols = compact_columns(CompactDecoder(1), body, NPROCS)
    assert cols is not None
    assert [r["kind"] for r in cols] == ["send", "recv", "consume", "final"]
    assert cols[2]["send"] == [2, 4] and cols[2]["tag"] == 3
    assert cols[2]["t"] == pytest.approx(0.75 + 1500e-9)


@pytest.mark.parametrize("records", [1, 2, 3, 4, 5, 200, 201])
def test_rows_of_a_periodic_pattern_are_written_as_the_dicts_are(records: int) -> None:
    """A ring's rows (send, recv, consume: period 3) with 0, 1 or 2 rows past the
    last whole period, and a final at the end (no period then): the lines are
    orjson's of the dicts."""
    recs = []
    seq = 0
    for i in range(records):
        if i % 2 == 0:
            recs.append(RECORD.pack(MVK_SEND, MVC_BLOCKING, 0, 1 + i % 3, seq, 0.1 * i, 0, 1, i,
                                    0, 0, i))
            seq += 1
        else:
            recs.append(RECORD.pack(MVK_RECV_CONSUME, MVC_BLOCKING | MVC_SEND, 0, 2, seq, 0.2,
                                    3 << 32, 1, 4, (5 << 32) | 1, i, i))
            seq += 2
    for final in (False, True):
        body = compact_body(0, b"".join(recs) + (
            RECORD.pack(MVK_FINAL, 0, 0, 0, seq, 9.0, 0, 0, 0, 0, 0, -1) if final else b""),
            1, list(SITES), 0, [])
        oracle, error = CompactDecoder(0).decode(body)
        cols = compact_columns(CompactDecoder(0), body, NPROCS)
        assert error is None and cols is not None
        assert cols.jsonl() == b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE)
                                        for r in oracle)
