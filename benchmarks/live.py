"""Throughput of the live path (issue 16): records/s from 8 ranks through collector + central.

MPVisualizer's live path (section 2): ranks -> a collector on their machine ->
the central process, which journals every record before the model sees it.
Each of ``--senders`` processes records its events with the trace library's C
recorder (:mod:`mpvis.instrument.recorder`: a ring, each iteration a send to
the next rank, a blocking receive from the previous one and its consume naming
that send), drains them in batches of ``--batch`` and keeps the ``COMPACT``
frames it will send, so that building them is not timed.  Once every sender is
connected and ready, they all ship their frames over loopback sockets at once.

Three figures, measured in the same run, on the same frames:

* ``raw sockets``: the senders ship to a server that reads and discards the
  bytes (what loopback TCP and one asyncio reader can carry: the ceiling);
* ``decode only``: expanding every frame's records into trace records with
  :class:`~mpvis.protocol.compact.CompactDecoder` in one thread, no I/O (what
  one per-record Python pass costs);
* ``columns + JSON``: what the central process does with such a frame instead
  (:func:`~mpvis.protocol.compact_columns.compact_columns`: the records as
  columns, checked, then their journal lines), in one thread, no I/O;
* ``collector + central``: a real :class:`~mpvis.collector.collector.Collector`
  and a real :class:`~mpvis.collector.central.CentralProcess` in this process,
  as under ``mpvis run``, journal included (the model is not fed: the window
  does that on its own thread).  The rate is the records journaled divided by
  the time from the go signal to the last record journaled; every record sent
  must be journaled exactly once (checked on the journal, else exit 1).

Each rate is printed with its ratio to the raw socket rate, and the CPU time
of this process (the collector's and the central process's threads) per
record, then each of the two threads' own.  The load average is printed
before and after: on a shared 2-core machine the 8 senders and this process
compete for the cores.

    python benchmarks/live.py [--senders 8] [--records 100000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from overhead import ring_recorder  # benchmarks/overhead.py, next to this file

from mpvis.collector.central import CentralProcess
from mpvis.collector.collector import Collector
from mpvis.protocol.compact import CompactDecoder, compact_body
from mpvis.protocol.compact_columns import compact_columns
from mpvis.protocol.framing import MsgType, encode_frame, encode_frame_parts
from mpvis.protocol.records import make_header


def _frames(rank: int, nprocs: int, n: int, batch: int) -> list[tuple[bytes, dict[str, Any]]]:
    """``rank``'s ``n`` records (and its final) as COMPACT frames and their bodies."""
    rec = ring_recorder(rank, nprocs, n)
    out = []
    number = 0
    while rec.pending():
        body = compact_body(number, *rec.drain(batch))
        out.append((b"".join(encode_frame_parts(MsgType.COMPACT, body)), body))
        number += 1
    return out


def sender(  # noqa: PLR0917 - a multiprocessing target takes positional args
    address: tuple[str, int], token: str, rank: int, nprocs: int, n: int, batch: int,
    ready: Any, go: Any,
) -> None:
    """One rank: builds its frames, connects, says HELLO, waits for ``go``, ships, says BYE."""
    frames = [f for f, _ in _frames(rank, nprocs, n, batch)]
    sock = socket.create_connection(address, timeout=60)
    hello = {"role": "rank", "token": token, "rank": rank, "pid": os.getpid(),
             "host": socket.gethostname()}
    sock.sendall(encode_frame(MsgType.HELLO, hello))
    ready.wait()
    go.wait()
    for frame in frames:
        sock.sendall(frame)
    sock.sendall(encode_frame(MsgType.BYE, {"rank": rank, "status": "final", "detail": ""}))
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)  # until the other side closes
    sock.close()


def _spawn(address: tuple[str, int], token: str, args: argparse.Namespace
           ) -> tuple[list[Any], Any, Any]:
    ctx = mp.get_context("spawn")
    ready, go = ctx.Barrier(args.senders + 1), ctx.Event()
    procs = [ctx.Process(target=sender, args=(address, token, r, args.senders, args.records,
                                              args.batch, ready, go))
             for r in range(args.senders)]
    for p in procs:
        p.start()
    return procs, ready, go


class _Discard:
    """An asyncio server in a thread that reads and discards everything (the ceiling)."""

    def __init__(self) -> None:
        self.address: tuple[str, int] | None = None
        self.done = threading.Event()
        self.bytes = 0
        self.closed = 0
        self.last = 0.0
        self._started = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    def start(self, expected: int) -> None:
        self._expected = expected
        self._thread.start()
        self._started.wait(10)

    async def _main(self) -> None:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        sock = server.sockets[0].getsockname()
        self.address = (sock[0], sock[1])
        self._started.set()
        async with server:
            while not self.done.is_set():
                await asyncio.sleep(0.05)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1 << 18):
            self.bytes += len(data)
        self.last = time.perf_counter()
        writer.close()
        self.closed += 1
        if self.closed == self._expected:
            self.done.set()


def raw_sockets(args: argparse.Namespace) -> tuple[float, float]:
    """Seconds from go to the last byte read, and this process's CPU seconds."""
    sink = _Discard()
    sink.start(args.senders)
    assert sink.address is not None
    procs, ready, go = _spawn(sink.address, "t", args)
    ready.wait()
    time.sleep(0.2)
    t0, c0 = time.perf_counter(), time.process_time()
    go.set()
    sink.done.wait(600)
    elapsed, cpu = sink.last - t0, time.process_time() - c0
    for p in procs:
        p.join()
    return elapsed, cpu


def _time_frames(args: argparse.Namespace, per_frame: Callable[[CompactDecoder, bytes], int]
                 ) -> tuple[float, int]:
    """CPU seconds to run ``per_frame`` (which returns its record count) over every
    frame of the run, rank by rank with one decoder each, in one thread."""
    bodies = [[b for _, b in _frames(r, args.senders, args.records, args.batch)]
              for r in range(args.senders)]
    t0 = time.process_time()
    n = 0
    for rank, frames in enumerate(bodies):
        dec = CompactDecoder(rank)
        for body in frames:
            n += per_frame(dec, body)
    return time.process_time() - t0, n


def decode_only(args: argparse.Namespace) -> tuple[float, int]:
    """Seconds to expand every frame of the run into records."""
    return _time_frames(args, lambda dec, body: len(dec.decode(body)[0]))


def columns_only(args: argparse.Namespace) -> tuple[float, int]:
    """Seconds to check every frame of the run as columns and write its journal lines."""
    def per_frame(dec: CompactDecoder, body: bytes) -> int:
        cols = compact_columns(dec, body, args.senders)
        assert cols is not None, "a ring's frame is taken whole"
        cols.jsonl()
        return len(cols)
    return _time_frames(args, per_frame)


#: The loop threads of the live path (:class:`~mpvis.collector.loopthread.LoopThread` names).
THREADS = ("mpvis-central", "mpvis-collector")


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of each live-path thread of this process, by name."""
    return {t.name: time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            for t in threading.enumerate() if t.name in THREADS and t.ident is not None}


def live(args: argparse.Namespace, tmp: Path
         ) -> tuple[float, float, dict[str, Any], dict[str, float]]:
    """Seconds from go to the last record journaled, CPU seconds (the process's and
    each loop thread's), the run's end info."""
    ended = threading.Event()
    infos: list[dict[str, Any]] = []
    last = [0.0]

    def on_records(_: list[Any]) -> None:
        last[0] = time.perf_counter()

    def on_end(info: dict[str, Any]) -> None:
        infos.append(info)
        ended.set()

    central = CentralProcess(journal_dir=tmp, on_records=on_records, on_run_end=on_end).start()
    collector = Collector(central.address, central.token, "bench",
                          header=make_header(args.senders)).start()
    try:
        procs, ready, go = _spawn(collector.address, central.token, args)
        ready.wait()
        time.sleep(0.2)
        t0, c0, threads0 = time.perf_counter(), time.process_time(), thread_cpu()
        go.set()
        for p in procs:
            p.join()
        collector.finish({"exit_code": 0}, timeout=600)
        ended.wait(600)
        cpu = time.process_time() - c0
        threads = {name: c - threads0[name] for name, c in thread_cpu().items()}
    finally:
        collector.stop()
        central.stop()
    return last[0] - t0, cpu, infos[0], threads


def exactly_once(journal: Path, senders: int, per_rank: int) -> str | None:
    """Why the journal is not every record once, in order (``None``: it is)."""
    seqs: dict[int, list[int]] = {r: [] for r in range(senders)}
    with open(journal, "rb") as f:
        next(f)
        for line in f:
            rec = orjson.loads(line)
            seqs[rec["rank"]].append(rec["seq"])
    for rank, got in seqs.items():
        if got != list(range(per_rank)):
            return f"rank {rank}: {len(got)} records, expected seq 0..{per_rank - 1} once each"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--records", type=int, default=100_000, help="records per sender")
    ap.add_argument("--batch", type=int, default=1000, help="records per COMPACT frame")
    args = ap.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores); {args.senders} senders x {args.records:,} records, "
          f"COMPACT frames of {args.batch}", flush=True)
    total = args.senders * (args.records + 1)

    def line(what: str, seconds: float, base: float, cpu: float | None = None) -> None:
        text = (f"  {what:<22} {seconds:7.2f} s  {total / seconds:>11,.0f} records/s  "
                f"{base / seconds:5.2f}x raw")
        if cpu is not None:
            text += f"  CPU {cpu:6.2f} s = {cpu / total * 1e6:5.2f} us/record"
        print(text, flush=True)

    raw, raw_cpu = raw_sockets(args)
    line("raw sockets", raw, raw, raw_cpu)
    dec, n = decode_only(args)
    assert n == total, (n, total)
    line("decode only (CPU)", dec, raw, dec)
    cols, n = columns_only(args)
    assert n == total, (n, total)
    line("columns + JSON (CPU)", cols, raw, cols)
    with tempfile.TemporaryDirectory() as tmp:
        elapsed, cpu, info, threads = live(args, Path(tmp))
        line("collector + central", elapsed, raw, cpu)
        print("    of which " + ", ".join(f"{name.removeprefix('mpvis-')} {c / total * 1e6:.2f}"
                                         for name, c in sorted(threads.items()))
              + " us/record (thread CPU)", flush=True)
        why = exactly_once(Path(info["journal"]), args.senders, args.records + 1)
    print(f"  journaled {info['records']:,} of {total:,} records; "
          f"{'each exactly once' if why is None else why}")
    print(f"load average now {os.getloadavg()[0]:.2f}", flush=True)
    return 0 if why is None and info["records"] == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
