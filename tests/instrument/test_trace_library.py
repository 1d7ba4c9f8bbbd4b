"""The trace library without MPI: records, call sites, sinks, the flusher, ``state``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import mpvis.instrument as public
from mpvis.instrument.recorder import BLOCKING, BUF, CONT, PAIR, SYNC, Recorder, clean_state
from mpvis.instrument.transport import FileSink, Flusher, NullSink, SocketSink, open_sink
from mpvis.protocol.compact import CompactDecoder, compact_body
from mpvis.protocol.framing import EOF, NEED_DATA, FrameDecoder, Message, MsgType, encode_frame
from mpvis.protocol.records import check_record, make_header

HERE = Path(__file__).resolve()
LIBRARY_DIR = str(Path(public.__file__).resolve().parent) + "/"


def _recorder(rank: int = 1) -> Recorder:
    return Recorder(rank, (LIBRARY_DIR,))


def _drain(rec: Recorder, decoder: CompactDecoder | None = None) -> list[dict[str, Any]]:
    """Everything pending, expanded as the collector would."""
    records, error = (decoder or CompactDecoder(rec.rank)).decode(
        compact_body(0, *rec.drain(1 << 30))
    )
    assert error is None
    return records


# -- records -------------------------------------------------------------------------------

#: One call per record kind the recorder makes, with arguments drawn by Hypothesis.
_CALLS = st.one_of(
    st.tuples(st.just("send"), st.integers(0, 7), st.integers(0, 99), st.booleans(), st.booleans()),
    st.tuples(st.just("recv"), st.integers(-1, 7), st.integers(-1, 99), st.booleans()),
    st.tuples(
        st.just("consume"),
        st.integers(0, 7),
        st.integers(0, 99),
        st.one_of(st.none(), st.integers(0, 1000)),
    ),
    st.tuples(st.just("wait"), st.lists(st.integers(0, 1000), max_size=4)),
    st.tuples(
        st.just("coll"), st.sampled_from(["barrier", "bcast", "allreduce"]), st.integers(0, 7)
    ),
    st.tuples(
        st.just("state"),
        st.dictionaries(
            st.sampled_from(["x", "phase"]),
            st.one_of(
                st.integers(),
                st.text(max_size=5),
                st.floats(allow_nan=False),
                st.lists(st.integers()),
            ),
        ),
    ),
)


def _apply(rec: Recorder, call: tuple[Any, ...]) -> dict[str, Any]:
    """Make the recorder's call; return the fields the record must carry (an oracle)."""
    kind = call[0]
    if kind == "send":
        _, dest, tag, blocking, sync = call
        seq = rec.send(3, dest, tag, (BLOCKING if blocking else 0) | (SYNC if sync else 0))
        return {
            "dest": dest,
            "tag": tag,
            "blocking": blocking,
            "sync": sync,
            "comm": 3,
            **({} if blocking else {"req": seq}),
        }
    if kind == "recv":
        _, src, tag, blocking = call
        seq = rec.recv(0, src, tag, blocking)
        return {"src": src, "tag": tag, "blocking": blocking, **({} if blocking else {"req": seq})}
    if kind == "consume":
        _, src, tag, send_seq = call
        rec.consume(0, 0, src, tag, send_seq)
        return {"src": src, "tag": tag, **({} if send_seq is None else {"send": [src, send_seq]})}
    if kind == "wait":
        rec.wait(call[1])
        return {"reqs": call[1]}
    if kind == "coll":
        _, op, root = call
        rec.coll(0, op, {"root": root})
        return {"op": op, "root": root}
    rec.state(clean_state(call[1]))
    # lists, and integers beyond 64 bits (msgpack cannot carry them), become their repr
    return {
        "vars": {
            k: repr(v)
            if isinstance(v, list) or (type(v) is int and not -(2**63) <= v < 2**64)
            else v
            for k, v in call[1].items()
        }
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(_CALLS, max_size=25), st.integers(1, 30))
@example([("state", {"big": 2**64, "low": -(2**63) - 1, "edge": 2**64 - 1})], 1)  # beyond msgpack
def test_records_follow_the_spec_with_gapless_seq(calls: list[tuple[Any, ...]], cut: int) -> None:
    rec = _recorder(rank=2)
    expected = [_apply(rec, c) for c in calls]
    rec.final()
    # Drained in pieces of ``cut`` records, as the flusher bounds its frames.
    decoder = CompactDecoder(2)
    out: list[dict[str, Any]] = []
    while rec.pending():
        records, error = decoder.decode(msgpack_roundtrip(compact_body(0, *rec.drain(cut))))
        assert error is None
        out += records
    assert [r["seq"] for r in out] == list(range(len(calls) + 1))
    assert out[-1]["kind"] == "final" and "site" not in out[-1]
    for r, want in zip(out, expected, strict=False):
        check_record(r, nprocs=8)
        assert r["rank"] == 2
        assert r["kind"] in ("send", "recv", "consume", "wait", "coll", "state")
        assert {k: r[k] for k in want} == want
        assert r["site"].startswith(f"{HERE}:")  # the line in _apply that made the call
        json.dumps(r)  # plain JSON values only
    assert [r["t"] for r in out] == sorted(r["t"] for r in out)
    assert [r.get("call") for r in out] == _expected_calls([c[0] for c in calls] + ["final"])
    assert _drain(rec) == []


def _expected_calls(kinds: list[str]) -> list[int | None]:
    """The recorder's call numbering, written plainly (recorder.py, "Call numbers"):
    send, recv, coll and final start a call; consume and wait continue the open one."""
    out: list[int | None] = []
    open_call: int | None = None
    next_call = 0
    for kind in kinds:
        if kind == "state":
            out.append(None)
            continue
        if kind not in ("consume", "wait") or open_call is None:
            open_call, next_call = next_call, next_call + 1
        out.append(open_call)
    return out


def test_calls_group_the_records_of_one_mpi_call() -> None:
    """A Sendrecv (CONT), a Startall (CONT), a completion after close_call, a collective."""
    rec = _recorder(rank=0)
    s = rec.send(0, 1, 0, BLOCKING | PAIR)  # Sendrecv: call 0
    r = rec.recv(0, 1, 0, BLOCKING | CONT)
    rec.consume(0, r, 1, 0, None)
    a = rec.recv(0, 2, 0, False)  # Startall of two requests: call 1
    b = rec.send(0, 2, 0, CONT)
    rec.close_call()  # Waitall: call 2
    rec.consume(0, a, 2, 0, None)
    rec.wait([a, b])
    rec.close_call()  # a Wait of a send: call 3
    rec.wait([s])
    rec.coll(0, "barrier", {})  # call 4
    rec.coll_exit(0, "barrier")
    rec.state({"x": 1})  # no call
    rec.recv(0, 1, 0, True)  # a later plain receive: call 5 (CONT not given)
    rec.final()  # call 6
    out = _drain(rec)
    assert [r.get("call") for r in out] == [0, 0, 0, 1, 1, 2, 2, 3, 4, 4, None, 5, 6]
    assert rec.call == 7


def test_a_thread_continues_its_own_call_while_another_records() -> None:
    """Records of one call come from one thread; another thread's calls may fall between
    them (the first is blocked in MPI): each continues its own thread's call."""
    rec = _recorder(rank=0)
    posted, sent = threading.Event(), threading.Event()
    seqs: dict[str, int] = {}

    def receiver() -> None:
        seqs["recv"] = rec.recv(0, 1, 0, True)
        posted.set()
        assert sent.wait(10)
        seqs["consume"] = rec.consume(0, seqs["recv"], 1, 0, None)

    def sender() -> None:
        assert posted.wait(10)
        seqs["send"] = rec.send(0, 1, 0, BLOCKING)
        seqs["coll"] = rec.coll(0, "barrier", {})
        sent.set()

    threads = [threading.Thread(target=receiver), threading.Thread(target=sender)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    out = {r["seq"]: r for r in _drain(rec)}
    assert out[seqs["consume"]]["call"] == out[seqs["recv"]]["call"]
    assert len({out[seqs[k]]["call"] for k in ("recv", "send", "coll")}) == 3
    # a second recorder in the same thread has its own numbering
    other = _recorder(rank=1)
    other.consume(0, 0, 1, 0, None)
    assert [r["call"] for r in _drain(other)] == [0]


def msgpack_roundtrip(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the collector decodes it from a frame."""
    dec = FrameDecoder()
    dec.receive_data(encode_frame(MsgType.COMPACT, body))
    msg = dec.next_event()
    assert isinstance(msg, Message)
    return msg.body


def test_unwrap_and_channel_consumes() -> None:
    rec = _recorder(rank=0)
    r = rec.recv(0, -1, -1, True)
    assert rec.unwrap(0, r, (7, "obj"), 3, 5) == "obj"
    rec.consume_chan(0, r, 3, 5, True)
    rec.consume_chan(0, r, 3, 5, False)  # counted, not recorded
    rec.consume_chan(0, r, 3, 5, True)
    rec.consume_chan(0, r, 3, 6, True)  # another channel
    rec.send(0, 3, 5, BLOCKING | BUF)
    out = _drain(rec)
    assert out[1]["send"] == [3, 7] and "chan" not in out[1]
    assert [c.get("chan") for c in out[2:6]] == [0, None, 2, 0]
    assert all("send" not in c for c in out[2:6])
    assert out[6]["buf"] is True
    with pytest.raises(TypeError, match="piggyback"):
        rec.unwrap(0, r, "not a piggybacked message", 3, 5)
    with pytest.raises(TypeError, match="piggyback"):
        rec.unwrap(0, r, (7, 3, 5, "the old four-item form"), 3, 5)


def test_site_is_the_first_frame_outside_the_library() -> None:
    rec = _recorder()
    here = rec.site()  # this test is outside the library
    assert here == f"{HERE}:{_line_of('here = rec.site()  # this test is outside the library')}"
    # Called through the public ``state`` (a library frame), it still names this line.
    public._recorder[0] = rec
    try:
        public.state(x=1, phase="update")
        line = _line_of('public.state(x=1, phase="update")')
    finally:
        public._recorder[0] = None
    (r,) = _drain(rec)
    assert r["kind"] == "state" and r["vars"] == {"x": 1, "phase": "update"}
    assert r["site"] == f"{HERE}:{line}"


def _line_of(text: str) -> int:
    lines = HERE.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == text)


def test_state_outside_mpvis_does_nothing() -> None:
    assert public._recorder[0] is None
    public.state(x=3)  # must not raise


# -- sinks and flusher ---------------------------------------------------------------------


def test_file_sink_writes_a_catenable_trace(tmp_path: Path) -> None:
    sinks = [FileSink(tmp_path, r) for r in (0, 1)]
    sinks[0].header(make_header(2))
    for r, sink in enumerate(sinks):
        rec = _recorder(rank=r)
        rec.send(0, 1 - r, 5, BLOCKING)
        rec.final()
        sink.compact(rec.drain(100))
        sink.bye("final", "")
    lines = [
        json.loads(x)
        for r in (0, 1)
        for x in (tmp_path / f"rank-{r}.jsonl").read_text().splitlines()
    ]
    assert lines[0]["kind"] == "header"
    assert [(x["rank"], x["kind"]) for x in lines[1:]] == [
        (0, "send"),
        (0, "final"),
        (1, "send"),
        (1, "final"),
    ]


def test_open_sink_follows_the_environment(tmp_path: Path) -> None:
    assert isinstance(open_sink(0, {}), NullSink)
    sink = open_sink(3, {"MPVIS_TRACE_DIR": str(tmp_path)})
    assert isinstance(sink, FileSink)
    sink.bye("final", "")
    assert (tmp_path / "rank-3.jsonl").exists()
    with socket.socket() as s:  # a port nobody listens on: untraced, not fatal
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert isinstance(open_sink(0, {"MPVIS_COLLECTOR": f"127.0.0.1:{port}"}), NullSink)


class _Collector:
    """A one-connection server that decodes every frame it receives."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.messages: list[Message] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        dec = FrameDecoder()
        with conn:
            while True:
                data = conn.recv(65536)
                dec.receive_data(data)
                while (ev := dec.next_event()) not in (NEED_DATA, EOF):
                    assert isinstance(ev, Message)
                    self.messages.append(ev)
                if not data:
                    return


def test_socket_sink_and_flusher_speak_the_wire_protocol() -> None:
    coll = _Collector()
    sink = SocketSink(coll.address, "secret", 0)
    sink.header(make_header(1, program="p"))
    rec = _recorder(rank=0)
    flusher = Flusher(rec, sink, quiet=0.002, longest=0.005)
    for i in range(5):
        rec.send(0, 0, i, BLOCKING)
    rec.final()
    flusher.close("final")
    coll.thread.join(timeout=10)
    types = [m.type for m in coll.messages]
    assert types[:2] == [MsgType.HELLO, MsgType.HEADER] and types[-1] == MsgType.BYE
    assert coll.messages[0].body["role"] == "rank" and coll.messages[0].body["token"] == "secret"
    batches = [m.body for m in coll.messages if m.type == MsgType.COMPACT]
    assert [b["batch"] for b in batches] == list(range(len(batches)))
    decoder = CompactDecoder(0)
    recs = [r for b in batches for r in decoder.decode(b)[0]]
    assert [r["seq"] for r in recs] == list(range(6))
    assert coll.messages[-1].body == {"rank": 0, "status": "final", "detail": ""}


def _shipped(path: Path, record: Callable[[], object] | None = None, lines: int = 1) -> bool:
    """Whether ``path`` gets ``lines`` lines within 10 s (calling ``record`` every millisecond)."""
    for _ in range(10_000):
        if path.exists() and len(path.read_text().splitlines()) >= lines:
            return True
        if record is not None:
            record()
        time.sleep(0.001)
    return False


def test_flusher_ships_a_quiet_ranks_records_without_being_asked(tmp_path: Path) -> None:
    """A rank blocked in MPI holds no GIL and records nothing: the thread alone
    must deliver its records, after the quiet delay (the longest is far off)."""
    rec = _recorder(rank=0)
    flusher = Flusher(rec, FileSink(tmp_path, 0), quiet=0.002, longest=1000.0)
    rec.recv(0, -1, -1, True)
    assert _shipped(tmp_path / "rank-0.jsonl")
    flusher.close("final")
    assert json.loads((tmp_path / "rank-0.jsonl").read_text().splitlines()[0])["kind"] == "recv"


def test_flusher_ships_a_busy_ranks_records_at_the_latest_after_the_longest_delay(
    tmp_path: Path,
) -> None:
    rec = _recorder(rank=0)
    flusher = Flusher(rec, FileSink(tmp_path, 0), quiet=1000.0, longest=0.01)
    assert _shipped(tmp_path / "rank-0.jsonl", lambda: rec.send(0, 1, 0, BLOCKING))
    flusher.close("final")


def test_closing_the_flusher_does_not_wait_for_a_due_flush(tmp_path: Path) -> None:
    rec = _recorder(rank=0)
    flusher = Flusher(rec, FileSink(tmp_path, 0), quiet=1000.0, longest=1000.0)
    rec.send(0, 1, 0, BLOCKING)
    flusher.close("final")
    assert not flusher._thread.is_alive()  # woken, not timed out
    assert [
        json.loads(x)["kind"] for x in (tmp_path / "rank-0.jsonl").read_text().splitlines()
    ] == ["send"]


_BUFFERS = [
    ("bytearray(8)", (8, "uint8")),
    ("array('d', [1.0, 2.0])", (2, "double")),
    ("[array('i', [1, 2, 3]), MPI.INT]", (3, "int")),
    ("[bytearray(16), 2, MPI.DOUBLE]", (2, "double")),
    ("MPI.IN_PLACE", None),
]


def test_buffer_info_and_redop_names() -> None:
    # In a subprocess: importing mpi4py.MPI initialises MPI, which pytest must not do.
    specs = ", ".join(spec for spec, _ in _BUFFERS)
    code = (
        "from array import array; from mpi4py import MPI; "
        "from mpvis.instrument.traced_coll import buffer_info, redop_name; "
        f"print(repr([buffer_info(s) for s in [{specs}]])); "
        "print(redop_name(MPI.SUM), redop_name(MPI.MAX), redop_name(len))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=HERE.parents[2],
    ).stdout.splitlines()
    assert out[0] == repr([expected for _, expected in _BUFFERS])
    assert out[1] == "sum max user"


def test_a_paused_flusher_ships_first_then_waits_for_the_end_of_the_pause(tmp_path: Path) -> None:
    rec = _recorder(rank=0)
    path = tmp_path / "rank-0.jsonl"
    flusher = Flusher(rec, FileSink(tmp_path, 0), quiet=0.001, longest=0.002)
    rec.send(0, 1, 0, BLOCKING)
    with flusher.paused():
        assert len(path.read_text().splitlines()) == 1  # shipped before the pause began
        rec.send(0, 1, 1, BLOCKING)
        time.sleep(0.05)  # many quiet delays: nothing moves while paused
        assert len(path.read_text().splitlines()) == 1 and rec.pending() == 1
    assert _shipped(path, lines=2)
    flusher.close("final")
