"""No orphans and nothing lost for compiled programs (issue 15): the PMPI trace
library follows the mpi4py path's rule (docs/reliability.md).

A C ping-pong runs under real ``mpiexec`` with the library preloaded; its
collector is SIGKILLed (with ``mpvis run``, or a separate ``mpvis collector``).
Every process of the run must be gone 10 s later, the ranks must have spilled
what their collector may not have had, and ``mpvis recover`` must merge the
spill files so that each rank's records are exactly the first records of a
clean run of the same program (every field but the time).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mpvis.cli.native import build_library, rank_command
from mpvis.collector.mpiexec import launch
from tests.cli.test_no_orphans import (
    SURVIVAL_LIMIT,
    alive,
    keys,
    mpvis_cli,
    run_processes,
    socket_port,
    spilled,
)
from tests.instrument.test_pmpi import MPIEXEC, cache, compile_c, mpicc, records

__all__ = ["cache", "mpicc"]  # the session's library cache and mpicc (fixtures)

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(240),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec"),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc"),
]

#: A ping-pong of argv[1] rounds (forever without it); every round writes the
#: same records, so a run's records are a prefix of any longer run's.
PINGPONG = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, x = 0;
    long n = argc > 1 ? atol(argv[1]) : -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (long i = 0; n < 0 || i < n; i++) {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&x, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        }
        if (i == 200 && rank == 0) { printf("RUNNING\n"); fflush(stdout); }
        if (i % 50 == 0) usleep(10000);
    }
    MPI_Finalize();
    return 0;
}
"""


def _env(tmp_path: Path, cache: Path) -> dict[str, str]:
    return dict(os.environ, MPVIS_CACHE=str(cache),
                MPVIS_RENDEZVOUS=str(tmp_path / "no-window.json"),
                MPVIS_SPILL_DIR=str(tmp_path / "spill"))


def _wait_gone(procs: set[int]) -> None:
    """Every process of ``procs`` is gone within :data:`SURVIVAL_LIMIT` (killed after)."""
    deadline = time.monotonic() + SURVIVAL_LIMIT
    while alive(procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive(procs)
    for pid in left:  # do not leave them behind for the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, left


def _check_spills(directory: Path, nranks: int) -> None:
    """One spill file per rank, in the spill format, records in seq order with raw sites."""
    files = sorted(directory.glob("spill-*-rank-*.jsonl"))
    assert len(files) == nranks, files
    for f in files:
        lines = f.read_text().splitlines()
        meta = json.loads(lines[0])
        assert meta["kind"] == "mpvis-spill" and meta["version"] == 1, meta
        assert f.name.endswith(f"-rank-{meta['rank']}.jsonl") and meta["reason"]
        recs = [json.loads(x) for x in lines[1:-1]]  # the last line may be cut
        assert recs and {r["rank"] for r in recs} == {meta["rank"]}
        seqs = [r["seq"] for r in recs]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert all(r["site"].startswith("@") for r in recs), recs[0]  # named at the merge


def _recover_and_compare(tmp_path: Path, cache: Path, exe: Path, trace: Path) -> None:
    """``mpvis recover`` merges every spilled record; the trace is then, rank by
    rank, the beginning of a clean run's, sites named as the collector names them."""
    rec = mpvis_cli("recover", str(trace), "--spill-dir", str(tmp_path / "spill"))
    assert rec.returncode == 0 and "records recovered" in rec.stdout, rec.stdout + rec.stderr
    assert spilled(tmp_path / "spill") <= keys(trace)
    _compare_with_clean_run(tmp_path, cache, exe, trace)


def _compare_with_clean_run(tmp_path: Path, cache: Path, exe: Path, trace: Path) -> None:
    """Rank by rank, ``trace`` holds the first records of a clean run, no gap."""
    got = _by_rank(records(trace))
    rounds = max(sum(r["kind"] == "send" for r in rs) for rs in got.values()) + 2
    clean_dir = tmp_path / "clean"
    clean_dir.mkdir()
    done = subprocess.run([sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", "c.jsonl",
                           "--", str(exe), str(rounds)], cwd=clean_dir,
                          env=_env(clean_dir, cache), capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    want = _by_rank(records(clean_dir / "c.jsonl"))
    for rank, rs in got.items():
        assert [r["seq"] for r in rs] == list(range(len(rs))), rank  # no gap, no duplicate
        assert len(rs) < len(want[rank])
        assert [_untimed(r) for r in rs] == [_untimed(r) for r in want[rank][:len(rs)]], rank


def _by_rank(recs: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(recs, key=lambda r: (r["rank"], r["seq"])):
        out.setdefault(r["rank"], []).append(r)
    return out


def _untimed(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if k != "t"}


def test_sigkill_of_mpvis_run_makes_c_ranks_spill_and_leave(
        tmp_path: Path, cache: Path, mpicc: str) -> None:
    """``mpvis run`` (its collector and central process) SIGKILLed mid-run."""
    exe = compile_c(mpicc, PINGPONG, tmp_path / "pingpong", "-g")
    p = subprocess.Popen([sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", "t.jsonl",
                          "--", str(exe)], cwd=tmp_path, env=_env(tmp_path, cache),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:  # (the library may be built first)
            if "RUNNING" in line:
                break
        else:
            pytest.fail(f"the program never ran: {p.stderr.read() if p.stderr else ''}")
        time.sleep(1.0)  # records flow for a while (the test does not depend on how many)
        procs = run_processes(p.pid, str(exe))
        assert len(procs) >= 3  # mpiexec and two ranks at least
        p.send_signal(signal.SIGKILL)
        p.wait()
        _wait_gone(procs)
    finally:
        if p.poll() is None:
            p.kill()
    _check_spills(tmp_path / "spill", 2)
    _recover_and_compare(tmp_path, cache, exe, tmp_path / "t.jsonl")


def test_sigkill_of_a_separate_collector_makes_c_ranks_spill_and_leave(
        tmp_path: Path, cache: Path, mpicc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine's own ``mpvis collector`` SIGKILLed; the central process lives on."""
    from mpvis.collector.central import CentralProcess

    assert MPIEXEC is not None
    exe = compile_c(mpicc, PINGPONG, tmp_path / "pingpong", "-g")
    monkeypatch.setenv("MPVIS_CACHE", str(cache))
    lib = build_library(mpicc, quiet=True)
    central = CentralProcess(journal_dir=tmp_path).start()
    port = socket_port()
    env = dict(_env(tmp_path, cache), MPVIS_TOKEN=central.token, MPVIS_RUN="C1",
               MPVIS_COLLECTOR=f"127.0.0.1:{port}")
    host, cport = central.address
    log = tmp_path / "collector.err"  # kept whole: says why if the ranks never reach it
    with open(log, "w") as err:
        coll = subprocess.Popen([sys.executable, "-m", "mpvis", "collector", "--central",
                                 f"{host}:{cport}", "--run", "C1", "--port", str(port)],
                                env=env, stderr=err, text=True)
    ranks = None
    try:
        deadline = time.monotonic() + 60
        while "collector on" not in log.read_text() and coll.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        ranks = launch(rank_command(MPIEXEC, 2, [], lib, [str(exe)]), env)
        deadline = time.monotonic() + 60
        while not any(len(p.read_text().splitlines()) > 1000 for p in tmp_path.glob("*.jsonl")):
            assert time.monotonic() < deadline and coll.poll() is None, log.read_text()
            time.sleep(0.1)
        procs = run_processes(ranks.pid, str(exe))
        coll.send_signal(signal.SIGKILL)
        coll.wait()
        ranks.wait(timeout=SURVIVAL_LIMIT)  # mpiexec ends once its ranks left
        _wait_gone(procs)
    finally:
        for p in (ranks, coll):
            if p is not None and p.poll() is None:
                p.kill()
        central.stop()
    _check_spills(tmp_path / "spill", 2)
    (trace,) = list(tmp_path.glob("*.jsonl"))
    _recover_and_compare(tmp_path, cache, exe, trace)


def test_ctrl_c_makes_c_ranks_ship_everything_and_say_why(
        tmp_path: Path, cache: Path, mpicc: str) -> None:
    """SIGINT (Ctrl-C) with the collector alive: the ranks ship what they have
    (as an mpi4py rank's KeyboardInterrupt does), say why and leave; nothing is
    spilled or left behind, and each rank's records are the beginning of a clean
    run's.  (That every send a peer consumed is there depends on each rank
    getting the CPU within the linger: see docs/reliability.md.)"""
    exe = compile_c(mpicc, PINGPONG, tmp_path / "pingpong", "-g")
    p = subprocess.Popen([sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", "t.jsonl",
                          "--", str(exe)], cwd=tmp_path, env=_env(tmp_path, cache),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if "RUNNING" in line:
                break
        procs = run_processes(p.pid, str(exe))
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "interrupted: stopping the ranks" in err, err
    assert not list((tmp_path / "spill").glob("spill-*"))
    _wait_gone(procs)
    _compare_with_clean_run(tmp_path, cache, exe, tmp_path / "t.jsonl")


#: Rank 1 keeps its records (its library ships only every 1000 s), sends one
#: message, waits for rank 0's acknowledgement and, 3 s later (rank 0 is blocked:
#: its library ships within 5 ms of going quiet), is SIGKILLed with the send's
#: record unshipped.  Rank 0 then waits for a message that never comes.
KILLED_AFTER_SEND = r"""
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, x = 7;
    const char *pmi = getenv("PMI_RANK");
    if (pmi && strcmp(pmi, "1") == 0) {
        setenv("MPVIS_FLUSH_QUIET_MS", "1000000", 1);
        setenv("MPVIS_FLUSH_MS", "1000000", 1);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Recv(&x, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sleep(3);
        raise(SIGKILL);
    }
    MPI_Recv(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&x, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
    MPI_Recv(&x, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
"""


def test_trace_of_a_c_rank_killed_after_a_send_opens(
        tmp_path: Path, cache: Path, mpicc: str) -> None:
    """Issue 15, item 2, on a real C run: C consumes carry no ``send``, so the
    killed sender's unshipped send can only be matched by channel, and there is
    none.  The trace opens; the consume is kept as a message from a lost send of
    rank 1, which is reported dead with what it lost."""
    exe = compile_c(mpicc, KILLED_AFTER_SEND, tmp_path / "killed", "-g")
    done = subprocess.run([sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", "k.jsonl",
                           "--", str(exe)], cwd=tmp_path, env=_env(tmp_path, cache),
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode not in (0, 1), done.stdout + done.stderr  # the program's failure
    recs = records(tmp_path / "k.jsonl")
    consumes = [r for r in recs if r["kind"] == "consume"]
    assert [(c["rank"], c["src"], c["tag"]) for c in consumes if c["rank"] == 0] == [(0, 1, 1)]
    assert "send" not in consumes[0]
    check = mpvis_cli("check", str(tmp_path / "k.jsonl"), "--json")
    assert check.returncode in (0, 1), check.stdout + check.stderr  # opened, not refused
    rank1 = json.loads(check.stdout)["ranks"][1]
    assert not any(r["rank"] == 1 for r in recs)  # its records never left it
    assert rank1["status"] == "dead", rank1
    assert "lost sends, 1 matched by channel, seq unknown" in rank1["detail"], rank1
