"""Ranks → collector → central process over real loopback sockets, with faults."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable

import pytest

from mpvis.collector.central import CentralProcess
from mpvis.collector.client import RankClient
from mpvis.collector.collector import Collector
from mpvis.protocol import messages as m
from mpvis.protocol.framing import EOF, NEED_DATA, FrameDecoder, Message, MsgType, encode_frame
from mpvis.protocol.records import make_header

from .conftest import Proxy, Recorded, assert_each_record_once, journal_lines

pytestmark = pytest.mark.timeout(60)


def state(rank: int, seq: int) -> dict:
    return {"rank": rank, "seq": seq, "kind": "state", "vars": {"i": seq}}


def send_rank(address, token, rank: int, n: int, batch: int, *, bye: bool = True) -> None:  # type: ignore[no-untyped-def]
    client = RankClient(address, token, rank)
    for start in range(0, n, batch):
        client.send_records([state(rank, s) for s in range(start, min(n, start + batch))])
    if bye:
        client.send_records([{"rank": rank, "seq": n, "kind": "final"}])
        client.bye()
    else:
        client.close()


def wait_until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def start_collector(central: CentralProcess, nprocs: int | None = None, **kw) -> Collector:  # type: ignore[no-untyped-def]
    header = make_header(nprocs) if nprocs is not None else None
    return Collector(central.address, central.token, "run-1", header=header, **kw).start()


def test_records_of_many_ranks_arrive_once(central: CentralProcess, recorded: Recorded) -> None:
    col = start_collector(central, 4, batch_records=100)
    threads = [
        threading.Thread(target=send_rank, args=(col.address, central.token, r, 500, 37))
        for r in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert col.finish({"exit_code": 0}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    info = recorded.ends[0]
    assert info["records"] == 4 * 501 and info["exit_code"] == 0
    assert [r["status"] for r in info["ranks"]] == ["final"] * 4
    assert_each_record_once(journal_lines(info["journal"]), {r: 501 for r in range(4)})
    assert len(recorded.records) == 4 * 501
    assert recorded.starts[0][0]["run"] == "run-1"


def test_a_rank_that_dies_is_reported_and_its_trace_ends_there(
    central: CentralProcess, recorded: Recorded
) -> None:
    col = start_collector(central, 2)
    send_rank(col.address, central.token, 0, 10, 5)
    send_rank(col.address, central.token, 1, 7, 5, bye=False)
    assert col.finish({"exit_code": 1}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    info = recorded.ends[0]
    ranks = {r["rank"]: r for r in info["ranks"]}
    assert ranks[0]["status"] == "final"
    assert ranks[1]["status"] == "crashed" and "without BYE" in ranks[1]["detail"]
    assert (1, "crashed", ranks[1]["detail"]) in recorded.rank_ends
    assert_each_record_once(journal_lines(info["journal"]), {0: 11, 1: 7})


def test_interrupted_run_marks_unfinished_ranks_killed(
    central: CentralProcess, recorded: Recorded
) -> None:
    col = start_collector(central, 3)
    send_rank(col.address, central.token, 0, 3, 3)
    send_rank(col.address, central.token, 1, 3, 3, bye=False)
    assert col.finish({"exit_code": -2, "interrupted": True}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    statuses = [(r["status"], r["detail"]) for r in recorded.ends[0]["ranks"]]
    assert statuses[0] == ("final", "")
    assert statuses[1][0] == "killed" and "stopped by the user" in statuses[1][1]
    assert statuses[2][0] == "killed" and "never connected" in statuses[2][1]


def test_a_rank_with_a_wrong_token_is_refused_and_logged(
    central: CentralProcess, recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    col = start_collector(central, 1)
    with caplog.at_level(logging.WARNING):
        intruder = socket.create_connection(col.address)
        intruder.sendall(encode_frame(MsgType.HELLO, m.hello_rank(0, "guess", pid=1, host="x")))
        intruder.sendall(encode_frame(MsgType.RECORDS, {"batch": 0, "records": [state(0, 0)]}))
        reply = read_messages(intruder)
        send_rank(col.address, central.token, 0, 2, 2)
        assert col.finish({}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    assert reply and reply[0].type == MsgType.REFUSED and reply[0].body["reason"] == "wrong token"
    assert "wrong token" in caplog.text
    assert_each_record_once(journal_lines(recorded.ends[0]["journal"]), {0: 3})


@pytest.mark.parametrize("side", ["collector", "central"])
def test_a_refused_peer_that_sent_more_still_reads_why(central: CentralProcess, side: str
                                                       ) -> None:
    """A peer refused while more of its bytes are unread (a HELLO and then records)
    gets the REFUSED frame and an orderly end, not a reset that drops the frame."""
    if side == "collector":
        address = start_collector(central, 1).address
        hello = encode_frame(MsgType.HELLO, m.hello_rank(0, "guess", pid=1, host="x"))
    else:
        address = central.address
        hello = encode_frame(MsgType.HELLO,
                             m.hello_collector("c1", "run-x", "guess", pid=1, host="x"))
    peer = socket.create_connection(address)
    more = threading.Thread(target=_send_ignoring_errors, args=(peer, hello + b"\0" * 600_000))
    more.start()
    time.sleep(0.5)  # the server has refused and closed its side by now
    reply = read_messages(peer)
    more.join(10)
    assert [r.type for r in reply] == [MsgType.REFUSED]
    assert reply[0].body["reason"] == "wrong token"


def _send_ignoring_errors(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(data)


def test_a_collector_with_a_wrong_token_is_refused(central: CentralProcess) -> None:
    col = Collector(central.address, "not-the-token", "run-x").start()
    assert not col.wait_welcome(10)
    col.stop()
    assert col.refused == "wrong token"
    assert any("wrong token" in i for i in central.incidents)


def read_messages(sock: socket.socket) -> list[Message]:
    """Everything the peer sends until it closes."""
    sock.settimeout(10)
    dec = FrameDecoder()
    out: list[Message] = []
    while True:
        data = sock.recv(65536)
        dec.receive_data(data)
        while (ev := dec.next_event()) is not NEED_DATA and ev is not EOF:
            assert isinstance(ev, Message)
            out.append(ev)
        if not data:
            sock.close()
            return out


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GET / HTTP/1.0\r\n\r\n", "bad magic"),
        (b"MV\x01\x01\x7f\xff\xff\xff", "oversized"),
        (encode_frame(MsgType.HELLO, {"role": "collector"})[:10], "truncated"),
        (encode_frame(MsgType.RECORDS, {"batch": 0, "records": []}), "expected HELLO"),
    ],
)
def test_bad_input_is_logged_and_the_run_goes_on(
    central: CentralProcess, recorded: Recorded, data: bytes, reason: str
) -> None:
    bad = socket.create_connection(central.address)
    bad.sendall(data)
    bad.shutdown(socket.SHUT_WR)
    read_messages(bad)
    assert any(reason in i for i in central.incidents), central.incidents
    col = start_collector(central, 1)
    send_rank(col.address, central.token, 0, 5, 5)
    assert col.finish({}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    assert recorded.ends[0]["records"] == 6


def test_records_wait_for_the_header_of_rank_0(central: CentralProcess, recorded: Recorded) -> None:
    col = start_collector(central)  # mpvis run without -n: rank 0 says nprocs
    send_rank(col.address, central.token, 1, 4, 2)
    deadline = time.monotonic() + 5
    while col.unacked == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not recorded.starts  # held: no header yet
    r0 = RankClient(col.address, central.token, 0)
    r0.send_header(make_header(2, program="python ring.py"))
    r0.send_records([state(0, 0), {"rank": 0, "seq": 1, "kind": "final"}])
    r0.bye()
    assert col.finish({}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    lines = journal_lines(recorded.ends[0]["journal"])
    assert lines[0]["program"] == "python ring.py" and lines[0]["nprocs"] == 2
    assert_each_record_once(lines, {0: 2, 1: 5})


def test_a_dropped_connection_loses_and_duplicates_nothing(
    central: CentralProcess, recorded: Recorded
) -> None:
    proxy = Proxy(central.address)
    col = Collector(
        proxy.address,
        central.token,
        "run-1",
        header=make_header(3),
        batch_records=50,
        reconnect_max=0.1,
    ).start()
    clients = [RankClient(col.address, central.token, r) for r in range(3)]
    n = 0
    for round_ in range(8):
        for r, c in enumerate(clients):
            c.send_records([state(r, s) for s in range(n, n + 40)])
        n += 40
        if round_ % 2 == 0:
            wait_until(lambda n=n: len(recorded.records) >= 3 * n)  # type: ignore[misc]  # delivered, then cut
        accepted = proxy.accepted
        proxy.drop()  # on odd rounds data is in flight: the central may see a truncated frame
        wait_until(lambda a=accepted: proxy.accepted > a)  # type: ignore[misc]  # the collector came back
    for r, c in enumerate(clients):
        c.send_records([{"rank": r, "seq": n, "kind": "final"}])
        c.bye()
    assert col.finish({}, timeout=30)
    assert recorded.ended.wait(10)
    col.stop()
    proxy.close()
    info = recorded.ends[0]
    assert col.reconnects >= 8 and proxy.accepted >= 9
    assert_each_record_once(journal_lines(info["journal"]), {r: n + 1 for r in range(3)})
    assert info["records"] == len(recorded.records) == 3 * (n + 1)


class _StalledWriter:
    """An uplink whose ``drain()`` waits until the test lets it go."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.draining = asyncio.Event()
        self.release = asyncio.Event()

    def write(self, frame: bytes) -> None:
        self.frames.append(frame)

    async def drain(self) -> None:
        self.draining.set()
        await self.release.wait()


class _SilentReader:
    async def read(self, n: int) -> bytes:
        await asyncio.Event().wait()  # no ACK ever comes
        return b""


def test_an_envelope_sealed_while_the_uplink_drains_is_sent() -> None:
    """The uplink waits for room (a slow central process) while an envelope is
    sealed: it must still go out.  A lost wake-up once left the run's last
    envelopes unsent, and the run never ended."""

    async def scenario() -> list[int]:
        col = Collector(("127.0.0.1", 9), "token", "run-1", header=make_header(1))
        col._wake, col._room = asyncio.Event(), asyncio.Event()
        col._room.set()
        col._take([state(0, 0)])
        col._seal()
        writer = _StalledWriter()
        pump = asyncio.create_task(col._pump(_SilentReader(), writer))  # type: ignore[arg-type]
        await asyncio.wait_for(writer.draining.wait(), 5)
        col._take([state(0, 1)])
        col._seal()  # while drain() waits
        writer.release.set()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if len(writer.frames) == 3:
                break
        pump.cancel()
        batches = []
        for frame in writer.frames[1:]:  # after HELLO
            dec = FrameDecoder()
            dec.receive_data(frame)
            ev = dec.next_event()
            assert isinstance(ev, Message)
            batches.append(ev.body["batch"])
        return batches

    assert asyncio.run(scenario()) == [0, 1]


def test_the_central_process_drops_resent_batches(
    central: CentralProcess, recorded: Recorded
) -> None:
    hello = encode_frame(
        MsgType.HELLO, m.hello_collector("c1", "run-d", central.token, pid=1, host="h")
    )
    batches = [
        encode_frame(
            MsgType.RECORDS, m.envelope_body(0, [state(0, 0), state(0, 1)], header=make_header(1))
        ),
        encode_frame(MsgType.RECORDS, m.envelope_body(1, [state(0, 2)])),
    ]
    first = socket.create_connection(central.address)
    first.sendall(hello + b"".join(batches))
    first.shutdown(socket.SHUT_WR)
    acks = [x.body["batch"] for x in read_messages(first) if x.type == MsgType.ACK]
    assert acks == [0, 1]
    # The ACKs "were lost": the collector resends everything, then goes on.
    last = encode_frame(
        MsgType.RECORDS,
        m.envelope_body(2, [{"rank": 0, "seq": 3, "kind": "final"}], ends=[m.bye_body(0)], end={}),
    )
    second = socket.create_connection(central.address)
    second.sendall(hello + b"".join(batches) + last)
    assert recorded.ended.wait(10)
    second.shutdown(socket.SHUT_WR)
    replies = read_messages(second)
    assert [x.body["batch"] for x in replies if x.type == MsgType.ACK] == [1, 1, 2]
    assert any(x.type == MsgType.STATUS and x.body.get("stop") for x in replies)
    assert_each_record_once(journal_lines(recorded.ends[0]["journal"]), {0: 4})


def test_a_batch_out_of_order_closes_the_connection(central: CentralProcess) -> None:
    hello = encode_frame(
        MsgType.HELLO, m.hello_collector("c1", "run-o", central.token, pid=1, host="h")
    )
    sock = socket.create_connection(central.address)
    sock.sendall(hello + encode_frame(MsgType.RECORDS, m.envelope_body(3, [])))
    read_messages(sock)
    assert any("out of order" in i for i in central.incidents)


def test_a_second_run_is_refused_while_one_streams(central: CentralProcess) -> None:
    first = start_collector(central, 1)
    assert first.wait_welcome(10)
    second = Collector(central.address, central.token, "run-2").start()
    assert not second.wait_welcome(10)
    assert second.refused is not None and "busy" in second.refused
    first.stop()
    second.stop()
