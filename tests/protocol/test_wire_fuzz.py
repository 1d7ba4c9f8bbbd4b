"""The wire decoders under mutated frames (issue 15): whatever bytes a peer
sends, the frame decoder, the message checks, the COMPACT decoder and, at the
central process, the journal's record checks and the channel resolver either
take it or refuse it with a :class:`ProtocolError` (or a named bad record):
no other exception, which would kill a connection's handler.

The frames are those of a real rank session (HELLO, HEADER, COMPACT batches
encoded by the C recorder's layout, BYE) and of a collector's envelopes,
mutated by hypothesis (bit flips, truncation, spliced bytes, hostile values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpvis.collector.journal import Journal
from mpvis.protocol import messages as m
from mpvis.protocol.chansend import SendResolver
from mpvis.protocol.compact import RECORD, CompactDecoder, compact_body
from mpvis.protocol.framing import (
    EOF,
    NEED_DATA,
    FrameDecoder,
    Message,
    MsgType,
    ProtocolError,
    encode_frame,
)
from mpvis.protocol.records import make_header

EXAMPLES = 300
HOSTILE: list[Any] = [None, -1, 2**64, 1.5, "x", b"\x00", [], {}, [[[]]], {"a": [1]}, True]


def _compact_recs() -> bytes:
    """A few records in the COMPACT layout (fields as packed by the C recorder)."""
    out = b""
    for seq in range(5):  # blocking sends to rank 1, tag 0, at site id 1
        out += RECORD.pack(1, 1, 0, 1, seq, 0.001 * seq, 0, 1, 0, -1, -1, seq)
    return out + RECORD.pack(8, 0, 0, 0, 5, 0.01, 0, 0, 0, 0, 0, 5)  # final


def session_frames() -> list[bytes]:
    hello = m.hello_rank(0, "tok", pid=1, host="h")
    body = compact_body(0, _compact_recs(), 1, ["a.py:1"], 0, [])
    return [encode_frame(MsgType.HELLO, hello),
            encode_frame(MsgType.HEADER, make_header(2)),
            encode_frame(MsgType.COMPACT, body),
            encode_frame(MsgType.BYE, m.bye_body(0))]


def envelope_frames() -> list[bytes]:
    recs = [{"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 0, "blocking": True,
             "sync": False, "buf": True},
            {"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 0, "blocking": True},
            {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 0, "chan": 0}]
    return [encode_frame(MsgType.RECORDS, m.envelope_body(0, recs, header=make_header(2))),
            encode_frame(MsgType.RECORDS, m.envelope_body(1, [], ends=[m.bye_body(0)]))]


def _mutate(draw: st.DrawFn, data: bytes) -> bytes:
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        how = draw(st.sampled_from(["flip", "cut", "splice", "byte"]))
        if how == "flip":
            data = data[:pos] + bytes([data[pos] ^ (1 << draw(st.integers(0, 7)))]) + data[pos + 1:]
        elif how == "cut":
            data = data[:pos]
        elif how == "splice":
            data = data[:pos] + draw(st.binary(max_size=16)) + data[pos:]
        else:
            data = data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1:]
    return data


@st.composite
def mutated_stream(draw: st.DrawFn, frames: list[bytes]) -> bytes:
    return b"".join(_mutate(draw, f) if draw(st.booleans()) else f for f in frames)


def _messages(stream: bytes) -> list[Message]:
    dec = FrameDecoder(64 << 10)
    dec.receive_data(stream)
    dec.receive_data(b"")
    out = []
    while (ev := dec.next_event()) is not NEED_DATA and ev is not EOF:
        assert isinstance(ev, Message)
        out.append(ev)
    return out


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated_stream(session_frames()))
def test_a_collector_survives_any_rank_stream(stream: bytes) -> None:
    """What the collector does with a rank's frames (``Collector._rank_message``)."""
    compact = CompactDecoder(0)
    try:
        for msg in _messages(stream):
            if msg.type == MsgType.HELLO:
                m.check_hello(msg.body)
            elif msg.type == MsgType.COMPACT:
                compact.decode(msg.body)
            elif msg.type == MsgType.RECORDS:
                m.check_rank_records(msg.body)
            elif msg.type == MsgType.BYE:
                m.check_bye(msg.body)
    except ProtocolError:
        pass


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutated_stream(envelope_frames()), st.sampled_from(HOSTILE), st.sampled_from(HOSTILE))
def test_the_central_process_survives_any_envelope(tmp_path: Path, stream: bytes, v1: Any,
                                                   v2: Any) -> None:
    """What the central process does with a collector's envelopes (check, the
    journal's record rules, then the channel resolver), hostile chan/buf included."""
    journal = Journal(tmp_path / "j.jsonl", make_header(2))
    resolver = SendResolver()
    try:
        for msg in _messages(stream):
            body = m.check_envelope(msg.body)
            records = body["records"]
            if records and isinstance(records[-1], dict):
                records[-1] = {**records[-1], "chan": v1, "buf": v2}
            journal.append(resolver.feed(journal.valid(records)), checked=True)
    except ProtocolError:
        pass
    finally:
        journal.close()


def test_the_unmutated_streams_are_taken_whole(tmp_path: Path) -> None:
    """The harness starts from streams the decoders accept (else the fuzzing
    would only ever test refusals)."""
    msgs = _messages(b"".join(session_frames()))
    assert [x.type for x in msgs] == [MsgType.HELLO, MsgType.HEADER, MsgType.COMPACT,
                                      MsgType.BYE]
    recs, error = CompactDecoder(0).decode(msgs[2].body)
    assert error is None and [r["seq"] for r in recs] == list(range(6))
    journal = Journal(tmp_path / "j.jsonl", make_header(2))
    resolver = SendResolver()
    for msg in _messages(b"".join(envelope_frames())):
        body = m.check_envelope(msg.body)
        journal.append(resolver.feed(journal.valid(body["records"])), checked=True)
    journal.close()
    assert journal.written == 3 and journal.rejected == 0
