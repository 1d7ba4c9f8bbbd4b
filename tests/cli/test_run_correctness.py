"""Correctness checks on real mpi4py runs under ``mpvis run`` (real mpiexec).

A correct halo exchange and master-worker run gives no finding; a send/send
exchange of small messages finishes but is a deadlock if sends are not
buffered; the same exchange of 1 MiB messages hangs and is stopped as a
proven deadlock; a reduction-op mismatch, a lost message and an Isend never
waited are reported as errors although the run finishes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(180),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

CORRECT = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
left = r - 1 if r > 0 else MPI.PROC_NULL
right = r + 1 if r < n - 1 else MPI.PROC_NULL
u = np.full(4096, float(r))
halo = np.zeros(1)
for step in range(3):
    comm.Sendrecv(u[-1:], dest=right, sendtag=1, recvbuf=halo, source=left, recvtag=1)
    comm.Sendrecv(u[:1], dest=left, sendtag=2, recvbuf=halo, source=right, recvtag=2)
    got = comm.sendrecv(step, dest=right, sendtag=3, source=left, recvtag=3)
    bufs = [np.zeros(2048) for _ in range(2)]
    reqs = [comm.Irecv(bufs[0], source=left, tag=4), comm.Irecv(bufs[1], source=right, tag=5),
            comm.Isend(u[:2048], dest=left, tag=5), comm.Isend(u[-2048:], dest=right, tag=4)]
    MPI.Request.Waitall(reqs)
total = np.zeros(1)
comm.Allreduce(np.array([float(r)]), total, op=MPI.SUM)
if r == 0:
    for w in range(1, n):
        comm.send(("task", w), dest=w, tag=10)
    for _ in range(1, n):
        st = MPI.Status()
        comm.recv(source=MPI.ANY_SOURCE, tag=11, status=st)
else:
    task = comm.recv(source=0, tag=10)
    comm.send(task, dest=0, tag=11)
comm.Barrier()
"""

UNSAFE_SMALL = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r = comm.Get_rank()
a, b = np.zeros(2), np.zeros(2)
comm.Send(a, dest=1 - r, tag=0)
comm.Recv(b, source=1 - r, tag=0)
"""

HANG_LARGE = UNSAFE_SMALL.replace("np.zeros(2)", "np.zeros(1 << 17)")

ERRORS = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r = comm.Get_rank()
out = np.zeros(1)
comm.Allreduce(np.ones(1), out, op=MPI.SUM if r == 0 else MPI.MAX)
if r == 0:
    comm.send("never read", dest=1, tag=99)
    req = comm.isend("read, never waited", dest=1, tag=5)
if r == 1:
    comm.recv(source=0, tag=5)
comm.Barrier()
"""


def run(tmp_path: Path, n: int, source: str) -> tuple[subprocess.CompletedProcess[str],
                                                         dict[str, Any]]:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    out = tmp_path / "run.jsonl"
    env = {"MPVIS_RINGCHECK": "0", "PATH": "/usr/bin:/bin",
           "MPVIS_RENDEZVOUS": str(tmp_path / "no-window.json")}
    proc = subprocess.run(
        [sys.executable, "-m", "mpvis", "run", "-n", str(n), "--out", str(out), "--headless",
         "--stuck-after", "1.5", "--stop-on-deadlock", "--", str(prog)],
        capture_output=True, text=True, timeout=150, check=False, env=env)
    check = subprocess.run([sys.executable, "-m", "mpvis", "check", str(out), "--json"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert check.returncode in (0, 1), check.stderr
    return proc, json.loads(check.stdout)


def test_correct_program_has_no_finding(tmp_path: Path) -> None:
    proc, rep = run(tmp_path, 4, CORRECT)
    assert "deadlock" not in proc.stderr.lower(), proc.stderr
    # (the master's wildcard receives race, as they should: races are not checked here)
    assert rep["deadlocks"] == [] and rep["errors"] == [], (rep["deadlocks"], rep["errors"])
    assert all(r["status"] == "finished" for r in rep["ranks"])


def test_small_send_cycle_finishes_but_is_a_potential_deadlock(tmp_path: Path) -> None:
    proc, rep = run(tmp_path, 2, UNSAFE_SMALL)
    assert proc.returncode == 1, proc.stderr
    assert "deadlock if sends are not buffered" in proc.stdout.lower()
    (d,) = rep["deadlocks"]
    assert d["potential"] is True and d["ranks"] == [0, 1] and d["sends"] == ["0:0", "1:0"]
    assert "prog.py:7" in d["reason"]
    assert rep["errors"] == []


def test_large_send_cycle_hangs_and_is_proven(tmp_path: Path) -> None:
    proc, rep = run(tmp_path, 2, HANG_LARGE)
    assert "mpvis: deadlock (p2p" in proc.stderr, proc.stderr
    (d,) = rep["deadlocks"]
    assert d["kind"] == "p2p" and not d.get("potential") and d["cycle"] == [0, 1, 0]
    assert rep["errors"] == []  # the run was stopped: its unreceived messages are no finding


def test_errors_of_a_run_that_finishes(tmp_path: Path) -> None:
    proc, rep = run(tmp_path, 2, ERRORS)
    assert proc.returncode == 1, proc.stderr
    kinds = sorted(e["kind"] for e in rep["errors"])
    assert kinds == ["collective_mismatch", "lost_message", "request_leak"], rep["errors"]
    lost = next(e for e in rep["errors"] if e["kind"] == "lost_message")
    assert lost["ranks"] == [0, 1] and lost["site"].endswith("prog.py:9")
    mismatch = next(e for e in rep["errors"] if e["kind"] == "collective_mismatch")
    assert "redop" in mismatch["reason"]
    assert rep["deadlocks"] == []
