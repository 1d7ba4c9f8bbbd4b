"""The frame decoder fed with bytes: whole, split anywhere, garbage, truncated, oversized."""

from __future__ import annotations

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.protocol.framing import (
    EOF,
    HEADER_SIZE,
    MAX_PAYLOAD,
    NEED_DATA,
    OUT_OF_LINE,
    FrameDecoder,
    Message,
    MsgType,
    ProtocolError,
    encode_frame,
    encode_frame_parts,
)


def decode_all(chunks: list[bytes], *, eof: bool = True) -> list[Message]:
    dec = FrameDecoder()
    out: list[Message] = []
    for chunk in [*chunks, b""] if eof else chunks:
        dec.receive_data(chunk)
        while True:
            ev = dec.next_event()
            if ev is NEED_DATA or ev is EOF:
                break
            assert isinstance(ev, Message)
            out.append(ev)
    return out


SAMPLE = [
    (MsgType.HELLO, {"role": "rank", "rank": 0, "token": None, "pid": 1, "host": "h"}),
    (MsgType.RECORDS, {"batch": 0, "records": [{"rank": 0, "seq": 0, "kind": "final"}]}),
    (MsgType.BYE, {"rank": 0, "status": "final", "detail": ""}),
]


def test_frames_round_trip() -> None:
    stream = b"".join(encode_frame(t, b) for t, b in SAMPLE)
    msgs = decode_all([stream])
    assert [(m.type, m.body) for m in msgs] == SAMPLE


def test_header_layout() -> None:
    frame = encode_frame(MsgType.ACK, {"batch": 7})
    magic, version, mtype, length = struct.unpack(">2sBBI", frame[:HEADER_SIZE])
    assert (magic, version, mtype) == (b"MV", 1, 5)
    assert length == len(frame) - HEADER_SIZE
    assert msgpack.unpackb(frame[HEADER_SIZE:]) == {"batch": 7}


bodies = st.dictionaries(
    st.text(max_size=5),
    st.one_of(
        st.integers(-(2**40), 2**40),
        st.text(max_size=20),
        st.none(),
        st.booleans(),
        st.lists(st.integers(0, 9), max_size=5),
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(list(MsgType)), bodies), min_size=1, max_size=6),
    st.data(),
)
def test_any_split_gives_the_same_messages(
    frames: list[tuple[MsgType, dict]], data: st.DataObject
) -> None:
    stream = b"".join(encode_frame(t, b) for t, b in frames)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=12)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    msgs = decode_all([c for c in chunks if c])
    assert [(m.type, m.body) for m in msgs] == frames


def test_byte_by_byte_needs_data_until_the_last_byte() -> None:
    frame = encode_frame(*SAMPLE[1])
    dec = FrameDecoder()
    for b in frame[:-1]:
        dec.receive_data(bytes([b]))
        assert dec.next_event() is NEED_DATA
    dec.receive_data(frame[-1:])
    ev = dec.next_event()
    assert isinstance(ev, Message) and ev.body == SAMPLE[1][1]
    dec.receive_data(b"")
    assert dec.next_event() is EOF


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GET / HTTP/1.1\r\n\r\n", "bad magic"),
        (b"X", "bad magic"),
        (b"MV\x02\x03\x00\x00\x00\x00", "protocol version 2"),
        (b"MV\x01\x63\x00\x00\x00\x00", "unknown message type 99"),
        (b"MV\x01\x03\x00\x00\x00\x01\xc1", "undecodable"),  # 0xc1 is never valid msgpack
        (b"MV\x01\x03\x00\x00\x00\x01\x05", "must be a map"),
        (b"MV\x01\x03\x00\x00\x00\x03\xd4\x05\x00", "undecodable"),  # an extension type
        (b"MV\x01\x03\x00\x00\x00\x03\x81\x01\x02", "undecodable"),  # an int map key
    ],
)
def test_garbage_is_refused_with_a_reason(data: bytes, reason: str) -> None:
    dec = FrameDecoder()
    dec.receive_data(data)
    with pytest.raises(ProtocolError, match=reason):
        dec.next_event()
    with pytest.raises(ProtocolError, match=reason):  # the stream stays broken
        dec.next_event()


def test_oversized_frame_is_refused_from_its_header_alone() -> None:
    dec = FrameDecoder()
    dec.receive_data(struct.pack(">2sBBI", b"MV", 1, 3, MAX_PAYLOAD + 1))
    with pytest.raises(ProtocolError, match="oversized"):
        dec.next_event()


def test_a_lower_bound_applies() -> None:
    dec = FrameDecoder(max_payload=10)
    dec.receive_data(encode_frame(MsgType.STATUS, {"x": "y" * 20}))
    with pytest.raises(ProtocolError, match="oversized"):
        dec.next_event()


def test_encoder_refuses_oversized_payloads_and_unknown_types() -> None:
    with pytest.raises(ProtocolError, match="oversized"):
        encode_frame(MsgType.RECORDS, {"records": "x" * (MAX_PAYLOAD + 1)})
    with pytest.raises(ProtocolError, match="unknown message type"):
        encode_frame(42, {})
    with pytest.raises(ProtocolError, match="map"):
        encode_frame(MsgType.STATUS, [1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize("cut", [1, 5, HEADER_SIZE, HEADER_SIZE + 3])
def test_eof_inside_a_frame_is_a_truncated_stream(cut: int) -> None:
    frame = encode_frame(*SAMPLE[1])
    good = encode_frame(*SAMPLE[0])
    dec = FrameDecoder()
    dec.receive_data(good + frame[:cut])
    dec.receive_data(b"")
    first = dec.next_event()
    assert isinstance(first, Message) and first.type == MsgType.HELLO
    with pytest.raises(ProtocolError, match="truncated"):
        dec.next_event()


def test_clean_eof_between_frames() -> None:
    dec = FrameDecoder()
    dec.receive_data(b"")
    assert dec.next_event() is EOF
    with pytest.raises(RuntimeError):
        dec.receive_data(b"more")


_values = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=8),
    st.binary(max_size=300),
    st.integers(OUT_OF_LINE - 2, OUT_OF_LINE + 70_000).map(lambda n: bytes([n % 251]) * n),
    st.lists(st.integers(0, 9), max_size=4),
)


@settings(max_examples=60)
@given(st.integers(1, 8), st.dictionaries(st.text(max_size=6), _values, max_size=5))
def test_frame_parts_join_into_the_frame_and_leave_large_bytes_uncopied(
    msg_type: int, body: dict[str, object]
) -> None:
    parts = encode_frame_parts(msg_type, body)
    payload = msgpack.packb(body, use_bin_type=True)
    assert b"".join(parts) == struct.pack(">2sBBI", b"MV", 1, msg_type, len(payload)) + payload
    assert encode_frame(msg_type, body) == b"".join(parts)
    large = [v for v in body.values() if type(v) is bytes and len(v) >= OUT_OF_LINE]
    assert sum(any(p is v for p in parts) for v in large) == len(large)
    dec = FrameDecoder()
    dec.receive_data(b"".join(parts))
    msg = dec.next_event()
    assert isinstance(msg, Message) and msg.body == body


def test_frame_parts_refuse_oversized_payloads() -> None:
    with pytest.raises(ProtocolError, match="oversized"):
        encode_frame_parts(MsgType.COMPACT, {"recs": b"x" * (MAX_PAYLOAD + 1)})
