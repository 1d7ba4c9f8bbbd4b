"""Sustained throughput of the live path: records per second from 8 senders.

MPVisualizer's live path (section 2): ranks → a collector on their machine →
the central process, which journals every record before the model sees it.
This script runs the collector and a central process in this process, as
``mpvis run`` does, and 8 sender processes that stream records as traced ranks
do: with ``--wire compact`` (the default) each sender records its events with
the trace library's C recorder and ships them as ``COMPACT`` frames through
its socket sink (``mpvis.instrument.transport.SocketSink``, batches of 1000),
which the collector forwards and the central process expands; with
``--wire records`` it sends record dicts
(``mpvis.collector.client.RankClient``).  The events are a ring: each
iteration a send to the next rank, a blocking receive from the previous one
and its consume, naming that rank's send.
It reports records per second from the first record sent to the last record
journaled (and acknowledged), over the whole run.  Target: >= 100,000 records/s.

The model is not fed here (the window does that on its own thread); the
ping-pong overhead of the instrumentation is in ``overhead_pingpong.py``.

Usage: python benchmarks/overhead.py [--senders 8] [--records 100000] [--wire compact|records]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import threading
import time
from typing import TYPE_CHECKING

from mpvis.collector.central import CentralProcess
from mpvis.collector.client import RankClient
from mpvis.collector.collector import Collector
from mpvis.protocol.records import make_header

if TYPE_CHECKING:
    from mpvis.instrument.recorder import Recorder


def sender(  # noqa: PLR0917 - a multiprocessing target takes positional args
    address: tuple[str, int], token: str, rank: int, nprocs: int, n: int, batch: int, go: object
) -> None:
    """One fake rank: sends ``n`` records (sends, receives, consumes) then BYE."""
    recs = []
    for seq in range(n):
        if seq % 2 == 0:
            recs.append(
                {
                    "rank": rank,
                    "seq": seq,
                    "kind": "send",
                    "dest": (rank + 1) % nprocs,
                    "tag": 1,
                    "blocking": True,
                    "sync": False,
                    "t": seq * 1e-6,
                    "site": "ring.py:12",
                    "comm": 0,
                }
            )
        else:
            recs.append(
                {
                    "rank": rank,
                    "seq": seq,
                    "kind": "state",
                    "vars": {"i": seq},
                    "t": seq * 1e-6,
                    "site": "ring.py:13",
                }
            )
    recs.append({"rank": rank, "seq": n, "kind": "final"})
    client = RankClient(address, token, rank)
    go.wait()  # type: ignore[attr-defined]
    for i in range(0, len(recs), batch):
        client.send_records(recs[i : i + batch])
    client.bye()


def ring_recorder(rank: int, nprocs: int, n: int) -> Recorder:
    """A C recorder holding ``rank``'s ``n`` events of the ring (and its final):
    each iteration a send to the next rank, a blocking receive from the previous
    one and its consume, then sends up to ``n`` (also used by ``live.py``)."""
    from mpvis.instrument.recorder import BLOCKING, Recorder

    rec = Recorder(rank, ("/nowhere/",))
    prev = (rank - 1) % nprocs
    for i in range(n // 3):
        rec.send(0, (rank + 1) % nprocs, 1, BLOCKING)
        r = rec.recv(0, prev, 1, True)
        rec.consume(0, r, prev, 1, 3 * i)
    while rec.seq < n:
        rec.send(0, (rank + 1) % nprocs, 2, BLOCKING)
    rec.final()
    return rec


def sender_compact(  # noqa: PLR0917 - a multiprocessing target takes positional args
    address: tuple[str, int], token: str, rank: int, nprocs: int, n: int, batch: int, go: object
) -> None:
    """One fake rank on the real path: ``n`` events in C records, shipped as COMPACT frames."""
    from mpvis.instrument.transport import SocketSink

    rec = ring_recorder(rank, nprocs, n)
    sink = SocketSink(f"{address[0]}:{address[1]}", token, rank)
    go.wait()  # type: ignore[attr-defined]
    while rec.pending():
        sink.compact(rec.drain(batch))
    sink.bye("final", "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--records", type=int, default=100_000, help="records per sender")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--wire", choices=("compact", "records"), default="compact")
    args = ap.parse_args()
    target = sender_compact if args.wire == "compact" else sender
    ended = threading.Event()
    infos: list[dict] = []

    def on_end(info: dict) -> None:
        infos.append(info)
        ended.set()

    with tempfile.TemporaryDirectory() as tmp:
        central = CentralProcess(journal_dir=tmp, on_run_end=on_end).start()
        collector = Collector(
            central.address, central.token, "bench", header=make_header(args.senders)
        ).start()
        ctx = mp.get_context("spawn")
        go = ctx.Event()
        procs = [
            ctx.Process(
                target=target,
                args=(
                    collector.address,
                    central.token,
                    r,
                    args.senders,
                    args.records,
                    args.batch,
                    go,
                ),
            )
            for r in range(args.senders)
        ]
        for p in procs:
            p.start()
        time.sleep(1.0)  # let every sender connect and build its records
        t0 = time.perf_counter()
        c0 = time.process_time()
        go.set()
        for p in procs:
            p.join()
        collector.finish({"exit_code": 0}, timeout=600)
        ended.wait(600)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        collector.stop()
        central.stop()
    total = infos[0]["records"]
    expected = args.senders * (args.records + 1)
    print(
        f"wire: {args.wire}; senders: {args.senders}, records journaled: {total}"
        f" (expected {expected})"
    )
    print(f"elapsed: {elapsed:.2f} s, sustained: {total / elapsed:,.0f} records/s (target 100,000)")
    # On a shared machine the wall-clock rate depends on the load; the CPU time of
    # this process (collector + central process threads) does not.
    print(f"collector + central CPU: {cpu:.2f} s, {total / cpu:,.0f} records per CPU-second")


if __name__ == "__main__":
    main()
