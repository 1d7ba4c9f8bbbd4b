"""Compact record batches (``COMPACT``) and the channel rule that names buffer sends."""

from __future__ import annotations

from typing import Any

import pytest

from mpvis.instrument.recorder import BLOCKING, BUF, Recorder
from mpvis.protocol.chansend import SendResolver, resolve_sends
from mpvis.protocol.compact import RECORD, RECORD_SIZE, CompactDecoder, compact_body
from mpvis.protocol.framing import ProtocolError
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import check_record


def _batch(rank: int = 0) -> dict[str, Any]:
    rec = Recorder(rank, ("/nowhere/",))
    rec.send(0, 1, 5, BLOCKING | BUF)
    rec.wait([0])
    rec.recv(0, -1, -1, True)
    rec.final()
    return compact_body(0, *rec.drain(100))


def test_a_batch_expands_into_spec_records() -> None:
    out, error = CompactDecoder(0).decode(_batch())
    assert error is None
    assert [r["kind"] for r in out] == ["send", "wait", "recv", "final"]
    for r in out:
        check_record({k: v for k, v in r.items() if k != "buf"}, nprocs=2)
    assert out[0]["buf"] is True and out[1]["reqs"] == [0]


def test_every_record_but_a_state_carries_its_call() -> None:
    """Field ``call``: -1 in the compact record (a ``state``) leaves it out."""
    out, error = CompactDecoder(0).decode(_batch())
    assert error is None
    # send starts call 0, the wait continues it (no close_call), recv and final start theirs
    assert [r.get("call") for r in out] == [0, 0, 1, 2]
    body = _batch()
    recs = bytearray(body["recs"])
    fields = list(RECORD.unpack_from(recs, 0))
    fields[-1] = -1
    RECORD.pack_into(recs, 0, *fields)
    body["recs"] = bytes(recs)
    out, _ = CompactDecoder(0).decode(body)
    assert "call" not in out[0]


def test_a_truncated_batch_keeps_its_whole_records() -> None:
    body = _batch()
    body["recs"] = body["recs"][: 2 * RECORD_SIZE + 10]
    out, error = CompactDecoder(0).decode(body)
    assert [r["seq"] for r in out] == [0, 1]
    assert error is not None and "truncated" in error


def test_a_bad_record_stops_the_batch_there_with_its_seq() -> None:
    body = _batch()
    recs = bytearray(body["recs"])
    fields = list(RECORD.unpack_from(recs, 2 * RECORD_SIZE))
    fields[0] = 99  # unknown kind
    RECORD.pack_into(recs, 2 * RECORD_SIZE, *fields)
    body["recs"] = bytes(recs)
    out, error = CompactDecoder(0).decode(body)
    assert [r["seq"] for r in out] == [0, 1]
    assert error == "record seq 2: unknown kind 99"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("site", 77, "unknown site id 77"),
        ("c", 9, "payload 9 is not among"),
    ],
)
def test_bad_references_are_named(field: str, value: int, message: str) -> None:
    body = _batch()
    recs = bytearray(body["recs"])
    fields = list(RECORD.unpack_from(recs, RECORD_SIZE))  # the wait
    fields[{"site": 3, "c": 9}[field]] = value
    RECORD.pack_into(recs, RECORD_SIZE, *fields)
    body["recs"] = bytes(recs)
    out, error = CompactDecoder(0).decode(body)
    assert len(out) == 1 and error is not None and message in error


@pytest.mark.parametrize(
    ("flags", "d", "field"),
    [(1 | 4, 41, {"send": ["src", 41]}), (1 | 8, 2, {"chan": 2}), (1, 0, {})],
)
@pytest.mark.parametrize(
    ("comm", "src", "tag", "ns"), [(0, 3, 7, 1500), (2**31 - 1, 7, 2**31 - 1, 2**32 - 1)]
)
def test_a_merged_receive_expands_into_its_recv_and_consume(  # noqa: PLR0917
    flags: int, d: int, field: Record, comm: int, src: int, tag: int, ns: int
) -> None:
    """Kind 9: a blocking receive and its consume in one record (compact docstring)."""
    field = {"send": [src, d]} if "send" in field else field
    body = _batch()
    packed_comm = (ns << 32 | comm) - (1 << 64 if ns >= 1 << 31 else 0)
    packed_c = ((tag & 0xFFFFFFFF) << 32 | src) - (1 << 64 if tag < 0 else 0)
    merged = (9, flags, 0, 1, 4, 2.5, packed_comm, -1, -1, packed_c, d, 7)
    body["recs"] = body["recs"][: 3 * RECORD_SIZE] + RECORD.pack(*merged)
    out, error = CompactDecoder(0).decode(body)
    assert error is None
    recv, consume = out[3:]
    site = out[0]["site"]
    assert recv == {
        "rank": 0,
        "seq": 4,
        "kind": "recv",
        "t": 2.5,
        "site": site,
        "comm": comm,
        "src": -1,
        "tag": -1,
        "blocking": True,
        "call": 7,
    }
    assert consume == {
        "rank": 0,
        "seq": 5,
        "kind": "consume",
        "t": pytest.approx(2.5 + ns * 1e-9),
        "site": site,
        "comm": comm,
        "recv": 4,
        "src": src,
        "tag": tag,
        "call": 7,
        **field,
    }
    for r in (recv, consume):
        check_record({k: v for k, v in r.items() if k != "chan"}, nprocs=8)


def test_a_site_table_out_of_step_is_reported() -> None:
    dec = CompactDecoder(0)
    body = _batch()
    body["site0"] = 5
    out, error = dec.decode(body)
    assert error is not None and "site table" in error and "unknown site id 1" in error
    assert out == []


@pytest.mark.parametrize(
    "change",
    [{"v": 1}, {"recs": "text"}, {"sites": None}, {"extra0": "0"}, {"batch": None}],
)
def test_a_body_of_the_wrong_shape_is_a_protocol_error(change: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError):
        CompactDecoder(0).decode({**_batch(), **change})


# -- the channel rule ---------------------------------------------------------------------


def _send(rank: int, seq: int, dest: int, tag: int = 0) -> Record:
    return {"rank": rank, "seq": seq, "kind": "send", "dest": dest, "tag": tag, "buf": True}


def _consume(rank: int, seq: int, src: int, chan: int | None, tag: int = 0) -> Record:
    rec = {"rank": rank, "seq": seq, "kind": "consume", "recv": 0, "src": src, "tag": tag}
    if chan is not None:
        rec["chan"] = chan
    return rec


def test_a_consume_waits_for_its_send_and_holds_its_rank_behind_it() -> None:
    res = SendResolver()
    later = {"rank": 1, "seq": 1, "kind": "final"}
    assert res.feed([_consume(1, 0, 0, 0), later]) == []
    assert res.held_ranks == {1} and res.held() == 2
    out = res.feed([_send(0, 0, 1)])
    assert [(r["rank"], r["seq"]) for r in out] == [(0, 0), (1, 0), (1, 1)]
    assert out[1]["send"] == [0, 0] and "chan" not in out[1] and "buf" not in out[0]
    assert res.held_ranks == set()


def test_ordinals_pick_the_channels_sends_in_order() -> None:
    recs = [_send(0, 0, 1), _send(0, 1, 1, tag=7), _send(0, 2, 1), _send(0, 3, 1)]
    recs += [_consume(1, 0, 0, 0), _consume(1, 1, 0, None), _consume(1, 2, 0, 2)]
    recs += [_consume(1, 3, 0, 0, tag=7)]
    out = resolve_sends(recs)
    consumes = [r for r in out if r["kind"] == "consume"]
    assert [c.get("send") for c in consumes] == [[0, 0], None, [0, 3], [0, 1]]
    assert not any("chan" in r or "buf" in r for r in out)


def test_a_senders_end_releases_consumes_it_will_never_match() -> None:
    res = SendResolver()
    assert res.feed([_consume(1, 0, 0, 3)]) == []
    out = res.sender_ended(0)
    assert len(out) == 1 and "send" not in out[0] and "chan" not in out[0]


def test_flush_releases_everything_in_rank_order() -> None:
    res = SendResolver()
    res.feed([_consume(1, 0, 0, 0), _consume(1, 1, 2, 0)])
    out = res.flush()
    assert [r["seq"] for r in out] == [0, 1] and not any("send" in r for r in out)
