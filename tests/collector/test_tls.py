"""TLS on the links of a run across machines (issue 15): the central process
serves the run's self-signed certificate, a collector checks its pinned
fingerprint; a wrong pin or a plain-text client gets nothing through."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpvis.collector.central import CentralProcess
from mpvis.collector.collector import Collector
from mpvis.collector.tls import server_context
from mpvis.protocol import messages as m
from mpvis.protocol.framing import MsgType, encode_frame
from mpvis.protocol.records import make_header

from .conftest import Recorded, assert_each_record_once, journal_lines
from .test_live import send_rank

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")


@pytest.fixture
def tls_central(tmp_path: Path, recorded: Recorded) -> Iterator[tuple[CentralProcess, str]]:
    ctx, pin = server_context()
    c = CentralProcess(journal_dir=tmp_path, on_records=recorded.records.extend,
                       on_run_end=recorded.end, hello_timeout=2.0, tls=ctx).start()
    yield c, pin
    c.stop()


def test_records_cross_a_pinned_tls_link(tls_central: tuple[CentralProcess, str],
                                         recorded: Recorded) -> None:
    central, pin = tls_central
    assert pin.startswith("sha256:") and len(pin) == 7 + 64
    col = Collector(central.address, central.token, "run-t", header=make_header(2),
                    tls_pin=pin).start()
    try:
        assert col.wait_welcome(10)
        for r in (0, 1):
            send_rank(col.address, central.token, r, 300, 50)
        assert col.finish({"exit_code": 0}, timeout=20)
        assert recorded.ended.wait(10)
    finally:
        col.stop()
    assert_each_record_once(journal_lines(recorded.ends[0]["journal"]), {0: 301, 1: 301})


def test_a_wrong_pin_is_refused_before_anything_is_sent(
        tls_central: tuple[CentralProcess, str]) -> None:
    central, _ = tls_central
    wrong = "sha256:" + ("0" * 64)
    col = Collector(central.address, central.token, "run-w", header=make_header(1),
                    tls_pin=wrong).start()
    try:
        assert col.stopped_by_central.wait(10)
        assert col.refused is not None and "not the pinned" in col.refused
        assert not col.welcomed.is_set()
    finally:
        col.stop()


def test_a_plain_text_client_gets_nothing_through(tls_central: tuple[CentralProcess, str],
                                                  recorded: Recorded) -> None:
    central, _ = tls_central
    sock = socket.create_connection(central.address)
    sock.sendall(encode_frame(MsgType.HELLO, m.hello_collector(
        "c1", "run-p", central.token, pid=1, host="h")))
    sock.settimeout(10)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
    assert not recorded.records  # its HELLO was never read as one


@pytest.mark.mpi
@pytest.mark.timeout(180)
def test_mpvis_run_listen_beyond_loopback_uses_tls(tmp_path: Path) -> None:
    """``mpvis run --listen 0.0.0.0:P``: the run goes through its own TLS link, and
    the command printed for the other machines carries the pin (and the token) in
    its environment."""
    import os
    import subprocess
    import sys

    from mpvis.collector.mpiexec import find_mpiexec

    if find_mpiexec() is None:
        pytest.skip("no mpiexec")
    (tmp_path / "g.py").write_text(
        "from mpi4py import MPI\nc = MPI.COMM_WORLD\nc.allreduce(c.Get_rank())\n")
    with socket.socket() as s1, socket.socket() as s2:  # two free ports
        s1.bind(("127.0.0.1", 0))
        s2.bind(("127.0.0.1", 0))
        port, cport = s1.getsockname()[1], s2.getsockname()[1]
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "no-window.json"))
    done = subprocess.run([sys.executable, "-m", "mpvis", "run", "--listen", f"0.0.0.0:{port}",
                           "--collector-port", str(cport), "-n", "2", "--out", "t.jsonl",
                           "--", "g.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=150, check=False)
    assert done.returncode == 0, done.stderr
    cmd = next(x for x in done.stderr.splitlines() if "mpvis collector" in x).split()
    assert cmd[0].startswith("MPVIS_TOKEN=") and cmd[1].startswith("MPVIS_TLS_PIN=sha256:")
    assert len(journal_lines(tmp_path / "t.jsonl")) == 1 + 6
