"""Faults at the central process (issue 15): a malformed record from a client
holding the run's token is refused alone, with a clear message; the handler
survives; the batch is acknowledged; nothing after it is lost (it once killed
the handler, the resent batch was dropped as a duplicate and every later
record of those ranks refused as a gap)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from mpvis.collector.central import LOGGED_INCIDENTS, MAX_UNAUTHENTICATED, CentralProcess
from mpvis.collector.collector import LOGGED_REFUSALS as COLLECTOR_LOGGED
from mpvis.protocol import messages as m
from mpvis.protocol.framing import MsgType, encode_frame
from mpvis.protocol.records import make_header

from .conftest import Recorded, journal_lines
from .test_live import read_messages, start_collector, state

#: Records that once broke the central process (the channel resolver or the
#: journal): an unhashable rank on a buffer consume, a record that is no object,
#: a rank beyond the header's nprocs.
MALFORMED = [
    {"rank": [1], "seq": 0, "kind": "consume", "recv": 0, "src": 0, "tag": 0, "chan": 0},
    5,
    {"rank": 7, "seq": 0, "kind": "final"},
    {"rank": 0, "seq": "x", "kind": "final"},
]


def test_malformed_records_are_refused_alone_and_nothing_later_is_lost(
    central: CentralProcess, recorded: Recorded
) -> None:
    hello = encode_frame(
        MsgType.HELLO, m.hello_collector("c1", "run-f", central.token, pid=1, host="h"))
    batches = []
    seq = [0, 0]
    for b in range(6):
        recs: list[Any] = []
        for rank in (0, 1):
            for _ in range(5):
                recs.append(state(rank, seq[rank]))
                seq[rank] += 1
        if b == 2:
            recs[3:3] = MALFORMED
        batches.append(encode_frame(MsgType.RECORDS, m.envelope_body(
            b, recs, header=make_header(2) if b == 0 else None)))
    finals = [{"rank": r, "seq": seq[r], "kind": "final"} for r in (0, 1)]
    batches.append(encode_frame(MsgType.RECORDS, m.envelope_body(
        6, finals, ends=[m.bye_body(0), m.bye_body(1)], end={})))
    sock = socket.create_connection(central.address)
    sock.sendall(hello + b"".join(batches))
    assert recorded.ended.wait(10)
    sock.shutdown(socket.SHUT_WR)
    acks = [x.body["batch"] for x in read_messages(sock) if x.type == MsgType.ACK]
    assert acks == list(range(7))
    lines = journal_lines(recorded.ends[0]["journal"])
    got = sorted((r["rank"], r["seq"]) for r in lines[1:])
    assert got == [(r, s) for r in (0, 1) for s in range(seq[r] + 1)]  # every good record once
    assert not any("internal error" in i for i in central.incidents)
    assert recorded.ends[0]["rejected"] == len(MALFORMED)


# ------------------------------------------------------- before authentication

def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    """Whether the peer closes ``sock`` within ``within`` seconds (generous bound)."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


@pytest.mark.slow
def test_a_slow_hello_does_not_keep_its_connection(central: CentralProcess) -> None:
    """One deadline for the whole HELLO (hello_timeout=2 s in the fixture): a byte
    every half second used to reset it forever."""
    sock = socket.create_connection(central.address)
    hello = encode_frame(
        MsgType.HELLO, m.hello_collector("c1", "run-s", central.token, pid=1, host="h"))
    closed = False
    for b in hello[:-1]:  # never completes
        try:
            sock.sendall(bytes([b]))
        except OSError:
            closed = True
            break
        if _closed_by_peer(sock, 0.5):
            closed = True
            break
    assert closed or _closed_by_peer(sock, 30)
    assert any("no HELLO in time" in i for i in central.incidents)


def test_a_big_frame_before_hello_is_refused_from_its_header(central: CentralProcess) -> None:
    """A 1 MiB frame before HELLO is refused as soon as its length is read (not
    buffered and decoded before the token is checked)."""
    sock = socket.create_connection(central.address)
    sock.sendall(b"MV\x01\x01" + (1 << 20).to_bytes(4, "big"))
    assert _closed_by_peer(sock, 30)
    assert any("oversized frame" in i for i in central.incidents)


def test_idle_connections_are_capped_and_refusals_summarised(
    central: CentralProcess, recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    idle = [socket.create_connection(central.address) for _ in range(MAX_UNAUTHENTICATED + 8)]
    refused = sum(_closed_by_peer(s, 1.0) for s in idle[MAX_UNAUTHENTICATED:])
    assert refused == 8  # the ones beyond the cap are closed at once
    for s in idle:
        s.close()
    assert central.incident_count >= 8
    logged = [r for r in caplog.records if "central process:" in r.getMessage()]
    assert len(logged) <= LOGGED_INCIDENTS + 1


def test_a_collector_cannot_send_records_of_another_collectors_rank(
    central: CentralProcess, recorded: Recorded
) -> None:
    def hello(cid: str) -> bytes:
        return encode_frame(
            MsgType.HELLO, m.hello_collector(cid, "run-r", central.token, pid=1, host="h"))

    good = socket.create_connection(central.address)
    good.sendall(hello("c1") + encode_frame(MsgType.RECORDS, m.envelope_body(
        0, [state(0, 0), state(0, 1)], header=make_header(1))))
    rogue = socket.create_connection(central.address)
    rogue.sendall(hello("rogue") + encode_frame(MsgType.RECORDS, m.envelope_body(
        0, [state(0, 2), {"rank": 0, "seq": 3, "kind": "final"}],
        ends=[m.bye_body(0)])))
    rogue.shutdown(socket.SHUT_WR)
    read_messages(rogue)
    good.sendall(encode_frame(MsgType.RECORDS, m.envelope_body(
        1, [state(0, 2), {"rank": 0, "seq": 3, "kind": "final"}], ends=[m.bye_body(0)],
        end={})))
    assert recorded.ended.wait(10)
    good.close()
    lines = journal_lines(recorded.ends[0]["journal"])
    assert [(r["rank"], r["seq"]) for r in lines[1:]] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert recorded.ends[0]["rejected"] == 2  # the rogue's two records


def test_the_collector_limits_connections_before_hello(
    central: CentralProcess, caplog: pytest.LogCaptureFixture
) -> None:
    coll = start_collector(central, 1, hello_timeout=1.0)
    try:
        slow = socket.create_connection(coll.address)
        slow.sendall(b"M")  # then nothing: the whole HELLO has one deadline
        big = socket.create_connection(coll.address)
        big.sendall(b"MV\x01\x01" + (1 << 20).to_bytes(4, "big"))
        garbage = [socket.create_connection(coll.address) for _ in range(20)]
        for s in garbage:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert _closed_by_peer(slow, 30) and _closed_by_peer(big, 30)
        assert all(_closed_by_peer(s, 30) for s in garbage)
        assert coll.refusals >= 22
        logged = [r for r in caplog.records if r.getMessage().startswith("collector:")]
        assert len(logged) <= COLLECTOR_LOGGED + 1
    finally:
        coll.stop()
