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

from .conftest import Recorded, assert_each_record_once, journal_lines
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


@pytest.mark.slow
def test_two_collectors_feed_one_run(central: CentralProcess, recorded: Recorded) -> None:
    host_a = start_collector(central, 8, batch_records=50)
    port_b = _free_port()
    env = dict(os.environ, MPVIS_TOKEN=central.token or "")
    host_b = subprocess.Popen(
        [sys.executable, "-m", "mpvis", "collector", "--central",
         f"{central.address[0]}:{central.address[1]}", "--run", "run-1", "--port", str(port_b)],
        env=env, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: _connectable(port_b), timeout=30)
        ranks = [(r, host_a.address) for r in range(4)] + [
            (r, ("127.0.0.1", port_b)) for r in range(4, 8)]
        threads = [threading.Thread(target=send_rank, args=(addr, central.token, r, 300, 41))
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
        assert info["records"] == 8 * 301
        assert [r["status"] for r in info["ranks"]] == ["final"] * 8
        assert_each_record_once(journal_lines(info["journal"]), {r: 301 for r in range(8)})
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
