"""A run across two machines, with two collectors on this one standing in for them.

MPVisualizer's design (section 2): each machine's ranks talk to their own
collector, every collector forwards to the one central process.  Here "host A"
is the collector of ``mpvis run`` (in this process) and "host B" is a real
``mpvis collector`` process, as an operator starts it on another machine
(docs/live-runs.md, "Runs across machines"); ranks 0-3 use A, ranks 4-7 use B,
all over real loopback sockets.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from mpvis.collector.central import CentralProcess
from mpvis.instrument.recorder import Drained
from mpvis.instrument.transport import SocketSink

from .conftest import Recorded, assert_each_record_once, journal_lines
from .test_compact_forwarding import _expected, _ring
from .test_live import send_rank, start_collector, wait_until

pytestmark = pytest.mark.timeout(90)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connectable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True


def _send_compact(address: tuple[str, int], token: str, rank: int, nprocs: int,
                  sent: list[list[Drained]]) -> None:
    """Rank ``rank`` of a ring, its C recorder's records shipped as ``COMPACT`` frames."""
    rec = _ring(rank, nprocs, 100)
    sink = SocketSink(f"{address[0]}:{address[1]}", token, rank)
    while rec.pending():
        sent[rank].append(rec.drain(61))
        sink.compact(sent[rank][-1])
    sink.bye("final", "")


@pytest.mark.slow
@pytest.mark.parametrize("wire", ["records", "compact"])
def test_two_collectors_feed_one_run(central: CentralProcess, recorded: Recorded,
                                     wire: str) -> None:
    """Ranks 0-3 through host A's collector, 4-7 through host B's: every record is
    journaled once, in order; as record dicts, or as the C recorder's ``COMPACT``
    batches that the central process checks and journals as columns (their rank
    connections are numbered by each collector alone: the same numbers from A and B)."""
    host_a = start_collector(central, 8, batch_records=50)
    port_b = _free_port()
    env = dict(os.environ, MPVIS_TOKEN=central.token or "")
    host_b = subprocess.Popen(
        [sys.executable, "-m", "mpvis", "collector", "--central",
         f"{central.address[0]}:{central.address[1]}", "--run", "run-1", "--port", str(port_b)],
        env=env, stderr=subprocess.PIPE, text=True)
    sent: list[list[Drained]] = [[] for _ in range(8)]
    try:
        wait_until(lambda: _connectable(port_b), timeout=30)
        ranks = [(r, host_a.address) for r in range(4)] + [
            (r, ("127.0.0.1", port_b)) for r in range(4, 8)]
        threads = [threading.Thread(target=send_rank, args=(addr, central.token, r, 300, 41))
                   if wire == "records" else
                   threading.Thread(target=_send_compact, args=(addr, central.token, r, 8, sent))
                   for r, addr in ranks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # host B's ranks have all said BYE through their collector before A ends the run
        wait_until(lambda: {r for r, _, _ in recorded.rank_ends} >= set(range(4, 8)), 30)
        assert host_a.finish({"exit_code": 0}, timeout=20)
        assert recorded.ended.wait(20)
        info = recorded.ends[0]
        lines = journal_lines(info["journal"])
        expected = [[{"rank": r, "seq": s} for s in range(301)] if wire == "records"
                    else _expected(r, sent[r]) for r in range(8)]
        assert info["records"] == sum(map(len, expected))
        assert [r["status"] for r in info["ranks"]] == ["final"] * 8
        assert_each_record_once(lines, {r: len(expected[r]) for r in range(8)})
        if wire == "compact":  # exactly the records of the batches, as columns journal them
            buffer_send = [0, next(x["seq"] for x in expected[0] if x.get("tag") == 7)]
            for r in range(8):  # (the buffer message's consume names its send: chansend)
                want = [{**{k: v for k, v in e.items() if k != "chan"}, "send": buffer_send}
                        if "chan" in e else e for e in expected[r]]
                assert [rec for rec in lines[1:] if rec["rank"] == r] == want
        # the remote collector learns that the run is over and exits by itself
        deadline = time.monotonic() + 20
        while host_b.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert host_b.returncode == 0, host_b.stderr.read() if host_b.stderr else ""
    finally:
        host_a.stop()
        if host_b.poll() is None:
            host_b.kill()
            host_b.wait()
