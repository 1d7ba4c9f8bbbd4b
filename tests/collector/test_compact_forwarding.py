"""COMPACT batches travel from the ranks through the collector unexpanded and are
expanded once by the central process (issue 16: the live path's throughput).

Real parts: the C recorder makes the records, the trace library's socket sink
ships them, a real collector forwards them over loopback (through a proxy that
the tests cut) to a real central process.  The oracle is
:class:`~mpvis.protocol.compact.CompactDecoder` applied to the same batches
directly: the journal must hold exactly those records, each once.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mpvis.collector.central import CentralProcess
from mpvis.collector.collector import Collector
from mpvis.instrument.recorder import BLOCKING, BUF, Drained, Recorder
from mpvis.instrument.transport import SocketSink
from mpvis.protocol.codes import MVC_SEND, MVK_RECV_CONSUME, MVK_SEND
from mpvis.protocol.compact import RECORD, CompactDecoder, compact_body, needs_channels
from mpvis.protocol.compact_columns import CompactColumns
from mpvis.protocol.framing import MsgType, encode_frame
from mpvis.protocol.records import make_header

from .conftest import Proxy, Recorded, assert_each_record_once, journal_lines

pytestmark = pytest.mark.timeout(60)


def _ring(rank: int, nprocs: int, rounds: int) -> Recorder:
    """A rank of a ring: each round a send to the next rank, a blocking receive
    from the previous one and its consume (naming the send); rank 0 and 1 also
    exchange a buffer message (consumed by its channel ordinal), then a final."""
    rec = Recorder(rank, ("/nowhere/",))
    prev = (rank - 1) % nprocs
    for i in range(rounds):
        rec.send(0, (rank + 1) % nprocs, 1, BLOCKING)
        r = rec.recv(0, prev, 1, True)
        rec.consume(0, r, prev, 1, 3 * i)
        if i == rounds // 2 and rank == 0:
            rec.send(0, 1, 7, BLOCKING | BUF)
        if i == rounds // 2 and rank == 1:
            r = rec.recv(0, 0, 7, True)
            rec.consume_chan(0, r, 0, 7, True)
    rec.final()
    return rec


def _expected(rank: int, batches: list[Drained]) -> list[dict[str, Any]]:
    """The oracle: the batches expanded directly, as the journal must hold them
    (the channel consume names its send, ``buf`` is the resolver's to strip)."""
    dec = CompactDecoder(rank)
    out: list[dict[str, Any]] = []
    for i, b in enumerate(batches):
        recs, error = dec.decode(compact_body(i, *b))
        assert error is None
        out += recs
    for rec in out:
        rec.pop("buf", None)
    return out


def test_compact_batches_arrive_exactly_once_through_cut_connections(
    central: CentralProcess, recorded: Recorded
) -> None:
    nprocs, rounds = 4, 300
    proxy = Proxy(central.address)
    col = Collector(proxy.address, central.token, "run-1", header=make_header(nprocs),
                    batch_records=200, reconnect_max=0.1).start()
    recorders = [_ring(r, nprocs, rounds) for r in range(nprocs)]
    sinks = [SocketSink(f"{col.address[0]}:{col.address[1]}", central.token, r)
             for r in range(nprocs)]
    sent: list[list[Drained]] = [[] for _ in range(nprocs)]
    cuts = 0
    while any(rec.pending() for rec in recorders):
        for r, (rec, sink) in enumerate(zip(recorders, sinks, strict=True)):
            if rec.pending():
                batch = rec.drain(97)
                sent[r].append(batch)
                sink.compact(batch)
        if len(sent[0]) % 3 == 0:  # cut the uplink now and then, data in flight
            accepted = proxy.accepted
            proxy.drop()
            cuts += 1
            deadline = time.monotonic() + 20
            while proxy.accepted == accepted:
                assert time.monotonic() < deadline, "the collector did not reconnect"
                time.sleep(0.01)
    for sink in sinks:
        sink.bye("final", "")
    assert col.finish({"exit_code": 0}, timeout=30)
    assert recorded.ended.wait(10)
    col.stop()
    proxy.close()
    info = recorded.ends[0]
    lines = journal_lines(info["journal"])
    expected = [_expected(r, sent[r]) for r in range(nprocs)]
    assert cuts >= 3 and col.reconnects >= 1
    assert_each_record_once(lines, {r: len(expected[r]) for r in range(nprocs)})
    for r in range(nprocs):
        got = [rec for rec in lines[1:] if rec["rank"] == r]
        assert len(got) == len(expected[r])
        for g, e in zip(got, expected[r], strict=True):
            if "chan" in e:  # named by the central process (non-overtaking rule)
                e = {k: v for k, v in e.items() if k != "chan"}
                e["send"] = [0, next(x["seq"] for x in expected[0] if x.get("tag") == 7)]
            assert g == e
    assert info["records"] == len(recorded.records) == sum(map(len, expected))
    assert col.received == sum(map(len, expected))


def test_a_rank_switching_between_records_and_compact_keeps_its_order(
    central: CentralProcess, recorded: Recorded
) -> None:
    """A rank's RECORDS batch, then a COMPACT one, then RECORDS again: the
    collector seals between them, so the journal has them in seq order."""
    col = Collector(central.address, central.token, "run-1", header=make_header(1),
                    batch_records=10_000, flush_interval=5.0).start()
    sock = socket.create_connection(col.address)
    hello = {"role": "rank", "token": central.token, "rank": 0, "pid": 1, "host": "h"}
    sock.sendall(encode_frame(MsgType.HELLO, hello))
    states = [{"rank": 0, "seq": s, "kind": "state", "vars": {"i": s}} for s in range(10)]
    sock.sendall(encode_frame(MsgType.RECORDS, {"batch": 0, "records": states}))
    sends = b"".join(RECORD.pack(MVK_SEND, BLOCKING, 0, 0, s, 0.5, 0, 0, 3, 0, 0, s)
                     for s in range(10, 20))
    sock.sendall(encode_frame(MsgType.COMPACT, compact_body(0, sends, 1, [], 0, [])))
    final = [{"rank": 0, "seq": 20, "kind": "final"}]
    sock.sendall(encode_frame(MsgType.RECORDS, {"batch": 1, "records": final}))
    sock.sendall(encode_frame(MsgType.BYE, {"rank": 0, "status": "final", "detail": ""}))
    sock.close()
    assert col.finish({"exit_code": 0}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    lines = journal_lines(recorded.ends[0]["journal"])
    assert [r["seq"] for r in lines[1:]] == list(range(21))
    assert [r["kind"] for r in lines[11:21]] == ["send"] * 10
    assert recorded.ends[0]["rejected"] == 0


def test_needs_channels_reads_the_flags_of_every_record() -> None:
    """The resolver is skipped only for batches with no buffer send and no
    channel consume: checked against the decoded records (the oracle)."""
    for flags in (0, BLOCKING, BUF, BLOCKING | BUF):
        recs = b"".join(RECORD.pack(MVK_SEND, f, 0, 0, s, 0.0, 0, 0, 1, 0, 0, -1)
                        for s, f in enumerate([BLOCKING, flags, BLOCKING]))
        body = compact_body(0, recs, 1, [], 0, [])
        decoded, _ = CompactDecoder(0).decode(body)
        assert needs_channels(body) == any(r.get("buf") for r in decoded)


def test_the_journal_of_a_run_is_written_in_arrival_order(
    central: CentralProcess, recorded: Recorded
) -> None:
    """Journal lines keep the arrival order and the records' key order (what
    a reader of the JSON Lines file sees), through the batched writer."""
    col = Collector(central.address, central.token, "run-1", header=make_header(2)).start()
    rec = _ring(0, 2, 5)
    sink = SocketSink(f"{col.address[0]}:{col.address[1]}", central.token, 0)
    batch = rec.drain(1000)
    sink.compact(batch)
    sink.bye("final", "")
    assert col.finish({"exit_code": 0}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    text = Path(recorded.ends[0]["journal"]).read_text().splitlines()[1:]
    expected = _expected(0, [batch])
    assert [list(json.loads(t)) for t in text] == [list(e) for e in expected]
    assert [json.loads(t) for t in text] == expected


def test_a_collector_stops_with_a_reason_at_an_older_central_process() -> None:
    """A welcome without ``compact`` comes from a central process that would
    ignore forwarded COMPACT batches: the collector says so instead of losing them."""
    server = socket.create_server(("127.0.0.1", 0))
    welcomed = threading.Event()

    def old_central() -> None:
        conn, _ = server.accept()
        conn.recv(65536)  # its HELLO
        conn.sendall(encode_frame(MsgType.STATUS, {"welcome": True, "acked": -1}))
        welcomed.wait(10)
        conn.close()

    thread = threading.Thread(target=old_central, daemon=True)
    thread.start()
    col = Collector(server.getsockname(), "tok", "run-1", header=make_header(1)).start()
    try:
        assert not col.wait_welcome(10)
        assert col.refused is not None and "same mpvis version" in col.refused
        assert col.stopped_by_central.is_set()
    finally:
        welcomed.set()
        col.stop()
        thread.join(10)
        server.close()


def _rank_socket(col: Collector, token: str, rank: int) -> socket.socket:
    sock = socket.create_connection(col.address)
    hello = {"role": "rank", "token": token, "rank": rank, "pid": 1, "host": "h"}
    sock.sendall(encode_frame(MsgType.HELLO, hello))
    return sock


def _sends(seqs: range, dest: int = 1, site: int = 1) -> bytes:
    return b"".join(RECORD.pack(MVK_SEND, BLOCKING, 0, site, s, 0.25 * s, 0, dest, 3, 0, 0, s)
                    for s in seqs)


def _run_one_rank(central: CentralProcess, recorded: Recorded, bodies: list[dict[str, Any]],
                  nprocs: int = 2) -> list[str]:
    """Rank 0 ships ``bodies`` through a real collector; the journal's record lines."""
    col = Collector(central.address, central.token, "run-1", header=make_header(nprocs),
                    batch_records=10_000, flush_interval=5.0).start()
    sock = _rank_socket(col, central.token, 0)
    for body in bodies:
        sock.sendall(encode_frame(MsgType.COMPACT, body))
    sock.sendall(encode_frame(MsgType.BYE, {"rank": 0, "status": "final", "detail": ""}))
    sock.close()
    assert col.finish({"exit_code": 0}, timeout=20)
    assert recorded.ended.wait(10)
    col.stop()
    return Path(recorded.ends[0]["journal"]).read_text().splitlines(keepends=True)[1:]


def test_plain_compact_batches_are_journaled_from_columns(tmp_path: Path) -> None:
    """Batches of sends and merged receives are journaled as columns (the callback
    gets CompactColumns, no dicts made), byte for byte the dict path's lines."""
    parts: list[Any] = []
    recorded = Recorded()
    central = CentralProcess(journal_dir=tmp_path, on_records=parts.append,
                             on_run_end=recorded.end).start()
    merged = b"".join(RECORD.pack(MVK_RECV_CONSUME, BLOCKING | MVC_SEND, 0, 2, s, 1.5, 7 << 32,
                                  1, 3, (3 << 32) | 1, 5, s) for s in range(20, 40, 2))
    bodies = [compact_body(0, _sends(range(20)), 1, ["a.py:1", "a.py:2"], 0, []),
              compact_body(1, merged, 3, [], 0, [])]
    try:
        lines = _run_one_rank(central, recorded, bodies)
    finally:
        central.stop()
    assert parts and all(isinstance(p, CompactColumns) for p in parts)
    dec = CompactDecoder(0)
    expected = [r for b in bodies for r in dec.decode(b)[0]]
    assert "".join(lines).encode() == b"".join(
        orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in expected)
    assert recorded.ends[0]["records"] == 40 and recorded.ends[0]["rejected"] == 0


def test_a_bad_compact_record_is_refused_with_its_rule_and_the_rest_kept(
    central: CentralProcess, recorded: Recorded
) -> None:
    """A record breaking a rule (a dest beyond nprocs) in a compact batch: the
    records before it are journaled, it is refused naming the rule, and its
    rank's later records (from columns or not) leave a gap: refused, counted."""
    bad = _sends(range(10, 12)) + _sends(range(12, 13), dest=2) + _sends(range(13, 15))
    bodies = [compact_body(0, _sends(range(10)), 1, ["a.py:1"], 0, []),
              compact_body(1, bad, 2, [], 0, []),
              compact_body(2, _sends(range(15, 20)), 2, [], 0, [])]
    lines = _run_one_rank(central, recorded, bodies)
    assert [json.loads(x)["seq"] for x in lines] == list(range(12))
    info = recorded.ends[0]
    assert info["rejected"] == 8 and info["records"] == 12
    assert len(recorded.records) == 12
