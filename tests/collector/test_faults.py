"""Faults at the central process (issue 15): a malformed record from a client
holding the run's token is refused alone, with a clear message; the handler
survives; the batch is acknowledged; nothing after it is lost (it once killed
the handler, the resent batch was dropped as a duplicate and every later
record of those ranks refused as a gap)."""

from __future__ import annotations

import socket
from typing import Any

from mpvis.collector.central import CentralProcess
from mpvis.protocol import messages as m
from mpvis.protocol.framing import MsgType, encode_frame
from mpvis.protocol.records import make_header

from .conftest import Recorded, journal_lines
from .test_live import read_messages, state

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
