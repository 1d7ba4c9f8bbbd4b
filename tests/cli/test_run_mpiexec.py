"""``mpvis run`` with the real mpiexec (MPICH from the environment), 2 to 8 ranks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpvis.cli.run import split_run_args
from mpvis.collector.mpiexec import find_mpiexec
from tests.cli.test_no_orphans import alive, run_processes

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(120),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

GATHER = """
from mpi4py import MPI
comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
if r == 0:
    for _ in range(n - 1):
        comm.recv(source=MPI.ANY_SOURCE, tag=1)
else:
    comm.send(r, dest=0, tag=1)
comm.Barrier()
"""

KILLED = """
import os, signal, time
from mpi4py import MPI
comm = MPI.COMM_WORLD
if comm.Get_rank() == 1:
    comm.send(1, dest=0, tag=1)
    time.sleep(0.3)  # the in-rank flusher ships the send first
    os.kill(os.getpid(), signal.SIGKILL)
comm.recv(source=1, tag=1)
comm.recv(source=1, tag=2)
"""

HANG = """
from mpi4py import MPI
MPI.COMM_WORLD.recv(source=MPI.ANY_SOURCE, tag=5)
"""


def mpvis(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "no-window.json"))
    return subprocess.Popen(
        [sys.executable, "-m", "mpvis", "run", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def trace(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_split_run_args() -> None:
    assert split_run_args(["-n", "4", "-genv", "X", "1", "--", "p.py", "-n", "2"]) == (
        ["-n", "4"],
        ["-genv", "X", "1"],
        ["p.py", "-n", "2"],
    )
    assert split_run_args(["--out=t.jsonl", "p.py", "--out", "x"]) == (
        ["--out=t.jsonl"],
        [],
        ["p.py", "--out", "x"],
    )
    with pytest.raises(ValueError, match="before '--'"):
        split_run_args(["-ppn", "2", "p.py"])


@pytest.mark.parametrize("n", [2, 5, 8])
def test_a_run_records_every_rank_and_reports_the_race(tmp_path: Path, n: int) -> None:
    (tmp_path / "gather.py").write_text(GATHER)
    p = mpvis(tmp_path, "-n", str(n), "--out", "t.jsonl", "--", "gather.py")
    out, err = p.communicate(timeout=110)
    lines = trace(tmp_path / "t.jsonl")
    assert lines[0]["nprocs"] == n and lines[0]["program"] == "python gather.py"
    finals = {r["rank"] for r in lines[1:] if r["kind"] == "final"}
    assert finals == set(range(n)), err
    consumes = [r for r in lines[1:] if r["kind"] == "consume"]
    assert len(consumes) == n - 1
    if n > 2:  # two wildcard receives of rank 0 race
        assert p.returncode == 1 and "LEGITIMATE" in out
    else:
        assert p.returncode == 0 and "No races found" in out


def test_a_killed_rank_leaves_a_valid_trace_marked_dead(tmp_path: Path) -> None:
    (tmp_path / "killed.py").write_text(KILLED)
    p = mpvis(tmp_path, "-n", "2", "--out", "k.jsonl", "--", "killed.py")
    out, _ = p.communicate(timeout=110)
    assert p.returncode not in (0, 1)  # the program's failure
    lines = trace(tmp_path / "k.jsonl")
    rank1 = [r for r in lines[1:] if r["rank"] == 1]
    assert [r["kind"] for r in rank1] == ["send"]  # ends where it died
    assert "rank 1 dead" in out and "crashed" in out


def test_ctrl_c_stops_the_ranks_and_keeps_the_trace(tmp_path: Path) -> None:
    (tmp_path / "hang.py").write_text(HANG)
    p = mpvis(tmp_path, "-n", "2", "--out", "h.jsonl", "--", "hang.py")
    journal = tmp_path / "h.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        not journal.exists() or len(journal.read_text().splitlines()) < 3
    ):
        time.sleep(0.1)
    procs = run_processes(p.pid, str(tmp_path))  # this run's, not another test's hang.py
    assert len(procs) >= 3  # mpiexec and two ranks at least
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130
    lines = trace(journal)
    assert sorted(r["rank"] for r in lines[1:]) == [0, 1]
    assert "Deadlocks: 1" in out
    assert not alive(procs), procs


def test_a_running_window_gets_the_stream(tmp_path: Path) -> None:
    from mpvis.collector.central import CentralProcess

    got: list[dict] = []
    ends: list[dict] = []
    window = CentralProcess(
        journal_dir=tmp_path / "journals", on_records=got.extend, on_run_end=ends.append
    )
    (tmp_path / "journals").mkdir()
    window.start()
    window.advertise(tmp_path / "window.json")
    try:
        (tmp_path / "gather.py").write_text(GATHER)
        env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "window.json"))
        p = subprocess.run(
            [sys.executable, "-m", "mpvis", "run", "-n", "3", "--", "gather.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=110,
            check=False,
        )
        assert p.returncode == 0, p.stderr
        assert "streaming to the mpvis window" in p.stderr
        assert not list(tmp_path.glob("mpvis-run-*.jsonl"))  # nothing recorded headless
        deadline = time.monotonic() + 10
        while not ends and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ends and ends[0]["exit_code"] == 0
        assert {r["rank"] for r in got if r["kind"] == "final"} == {0, 1, 2}
        assert trace(Path(ends[0]["journal"]))[1:] == got
    finally:
        window.withdraw()
        window.stop()
