"""The PMPI trace library on real compiled programs: ``mpvis run -- ./a.out`` with real mpiexec.

Programs are built with the pip MPICH's ``mpicc``; the library is built per MPI
into a cache (``MPVIS_CACHE``, one per test session here).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mpvis.cli.native import build_library, find_mpicc
from mpvis.collector.mpiexec import find_mpiexec
from mpvis.collector.symbolize import SiteSymbolizer
from tests.fixtures import shape_error

HERE = Path(__file__).resolve().parent
MPIEXEC = find_mpiexec()

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(180),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec"),
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler"),
]


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mpvis-cache")


@pytest.fixture(scope="session")
def mpicc() -> str:
    assert MPIEXEC is not None
    return find_mpicc(MPIEXEC)


def compile_c(mpicc: str, source: Path | str, out: Path, *flags: str) -> Path:
    if isinstance(source, str):
        src = out.with_suffix(".c")
        src.write_text(source)
        source = src
    subprocess.run([mpicc, *flags, str(source), "-o", str(out)], check=True)
    return out


def run(
    cwd: Path, cache: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPVIS_CACHE=str(cache),
               MPVIS_RENDEZVOUS=str(cwd / "no-window.json"))
    return subprocess.run(
        [sys.executable, "-m", "mpvis", "run", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )


def records(path: Path) -> list[dict[str, Any]]:
    """The trace's events, each checked to fit its kind's typed class (record_types)."""
    lines = path.read_text().splitlines()
    recs = [json.loads(line) for line in lines[1:]]
    assert [e for r in recs if (e := shape_error(r)) is not None][:3] == []
    return recs


def check_json(path: Path) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "mpvis", "check", str(path), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    return done.returncode, json.loads(done.stdout)


def test_every_wrapped_call_is_recorded_and_matches(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, HERE / "c" / "coverage.c", tmp_path / "coverage", "-g", "-O0")
    done = run(tmp_path, cache, "-n", "3", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 0, done.stderr
    assert "coverage done" in done.stdout
    recs = records(tmp_path / "t.jsonl")
    kinds = Counter(r["kind"] for r in recs)
    assert kinds["final"] == 3
    # every message's send, receive and consume, every collective's entry and exit
    assert kinds["send"] == kinds["recv"] == kinds["consume"]
    assert kinds["coll"] == kinds["coll_exit"]
    for r in recs:
        assert isinstance(r["call"], int)
        if r["kind"] != "final":
            assert r["site"].startswith(str(HERE / "c" / "coverage.c") + ":"), r
            assert r["func"] == "main"
    by_rank: dict[int, list[dict[str, Any]]] = {}
    for r in recs:
        by_rank.setdefault(r["rank"], []).append(r)
    for rank, rs in by_rank.items():
        assert [r["seq"] for r in rs] == list(range(len(rs))), rank
        tags = {r["tag"] for r in rs if r["kind"] == "send"}
        assert tags == set(range(1, 15)) - ({13} if rank != 2 else set()), rank
        modes = {r["tag"]: r.get("mode", "standard") for r in rs if r["kind"] == "send"}
        assert (modes[1], modes[2], modes[3], modes[4]) == (
            "standard", "buffered", "ready", "synchronous")
        # Sendrecv: a nonblocking send and receive of one call, completed together
        call = next(r["call"] for r in rs if r.get("tag") == 7)
        sr = [r for r in rs if r["call"] == call]
        assert [r["kind"] for r in sr] == ["send", "recv", "waiting", "consume", "wait"]
        # persistent requests: each Start is a nonblocking send or receive of its own
        assert sum(1 for r in rs if r["kind"] == "send" and r["tag"] == 12) == 2
        final = rs[-1]
        assert final["kind"] == "final" and final["requests"] == []
    colls = [r for r in recs if r["kind"] == "coll"]
    assert {r["op"] for r in colls} >= {"bcast", "allreduce", "reduce", "gather", "allgather",
                                        "alltoall", "scan", "exscan", "gatherv",
                                        "reduce_scatter", "barrier"}
    reduce0 = next(r for r in colls if r["op"] == "reduce")
    assert (reduce0["root"], reduce0["redop"], reduce0["dtype"], reduce0["bytes"]) == (
        1, "max", "int", 4)
    # the split's halves: the same id on every member, their world ranks as group
    groups = {r["comm"]: r["group"] for r in colls if "group" in r}
    assert sorted(sorted(g) for g in groups.values()) == [[0, 2], [1]]
    # a Probe(ANY)-less program: no receive was recorded as a wildcard
    assert not any(r["kind"] == "recv" and r["src"] == -1 for r in recs)
    code, report = check_json(tmp_path / "t.jsonl")
    assert code == 0, report
    assert report["races"] == [] and report["deadlocks"] == [] and report["errors"] == []


RACE = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Status st;
        for (int i = 0; i < 2; i++) {
            MPI_Probe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
            MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
"""


def test_a_receive_after_a_wildcard_probe_races_like_a_wildcard_receive(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, RACE, tmp_path / "race", "-g")
    done = run(tmp_path, cache, "-n", "3", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 1, done.stderr  # races found
    recvs = [r for r in records(tmp_path / "t.jsonl") if r["kind"] == "recv"]
    assert [(r["src"], r["probed"]) for r in recvs] == [(-1, True), (-1, True)]
    code, report = check_json(tmp_path / "t.jsonl")
    assert code == 1
    exact = [r for r in report["races"] if r["method"] == "exact"]
    assert exact and exact[0]["rank"] == 0


LEAK = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, x = 0, y;
    MPI_Request q, p;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Send_init(&x, 1, MPI_INT, 1 - rank, 3, MPI_COMM_WORLD, &p);   /* never started */
    if (rank == 0) MPI_Isend(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &q); /* never waited */
    else MPI_Recv(&y, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


def test_requests_left_at_finalize_are_reported(tmp_path: Path, cache: Path, mpicc: str) -> None:
    exe = compile_c(mpicc, LEAK, tmp_path / "leak", "-g")
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 1, done.stderr
    finals = {r["rank"]: r for r in records(tmp_path / "t.jsonl") if r["kind"] == "final"}
    left0 = {(q["call"], q["state"], q["started"]) for q in finals[0]["requests"]}
    assert left0 == {("MPI_Isend", "active", True), ("MPI_Send_init", "inactive", False)}
    assert [q["call"] for q in finals[1]["requests"]] == ["MPI_Send_init"]
    assert all(q["site"].startswith(str(tmp_path / "leak.c") + ":") for q in finals[0]["requests"])
    _, report = check_json(tmp_path / "t.jsonl")
    assert {e["kind"] for e in report["errors"]} == {"request_leak"}


WAITALL_DEADLOCK = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, x[2];
    MPI_Request q[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Irecv(&x[0], 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(&x[1], 1, MPI_INT, 1 - rank, 1, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Finalize();
    return 0;
}
"""


def test_a_deadlock_in_waitall_is_proven_live_and_stopped(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, WAITALL_DEADLOCK, tmp_path / "dl", "-g")
    done = run(tmp_path, cache, "-n", "2", "--stop-on-deadlock", "--stuck-after", "1",
               "--out", "t.jsonl", "--", str(exe))
    assert "stopping the deadlocked ranks" in done.stderr
    assert done.returncode == 1
    waiting = [r for r in records(tmp_path / "t.jsonl") if r["kind"] == "waiting"]
    assert sorted((r["rank"], r["reqs"]) for r in waiting) == [(0, [0, 1]), (1, [0, 1])]
    _, report = check_json(tmp_path / "t.jsonl")
    assert [(d["kind"], d["ranks"]) for d in report["deadlocks"]] == [("p2p", [0, 1])]


def test_a_program_built_for_another_mpi_is_refused_before_it_runs(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    abi = Path(mpicc).with_name("mpicc_abi")
    if not abi.is_file():
        pytest.skip("this MPICH has no standard-ABI compiler wrapper")
    exe = compile_c(str(abi), WAITALL_DEADLOCK, tmp_path / "abi")
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 2
    assert "is linked with libmpi_abi" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t.jsonl").exists()
    plain = subprocess.run(["cc", "-x", "c", "-", "-o", str(tmp_path / "plain")],
                           input="int main(void){return 0;}", text=True, check=True)
    assert plain.returncode == 0
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(tmp_path / "plain"))
    assert done.returncode == 2 and "not dynamically linked with an MPI" in done.stderr


def test_the_library_is_built_once_per_mpi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mpicc: str
) -> None:
    monkeypatch.setenv("MPVIS_CACHE", str(tmp_path))
    first = build_library(mpicc, quiet=True)
    mtime = first.path.stat().st_mtime_ns
    again = build_library(mpicc, quiet=True)
    assert again.path == first.path and again.path.stat().st_mtime_ns == mtime
    assert first.mpi_soname == "libmpi.so.12"
    assert first.path.is_relative_to(tmp_path / "pmpi")


def test_sites_without_debug_information_are_function_and_offset(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, LEAK, tmp_path / "nodebug", "-O1", "-rdynamic")
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 1, done.stderr
    sends = [r for r in records(tmp_path / "t.jsonl") if r["kind"] == "send"]
    assert sends and all(r["site"].startswith("main+0x") for r in sends)
    assert SiteSymbolizer()("not a raw site") == ("not a raw site", None)


LOOP = r"""
#include <mpi.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (;;) {
        MPI_Sendrecv_replace(&x, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        usleep(1000);
    }
}
"""


def _alive(exe: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", str(exe)], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def test_killing_mpvis_run_leaves_no_rank_behind(tmp_path: Path, cache: Path, mpicc: str) -> None:
    exe = compile_c(mpicc, LOOP, tmp_path / "forever", "-g")
    env = dict(os.environ, MPVIS_CACHE=str(cache), MPVIS_RENDEZVOUS=str(tmp_path / "none.json"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpvis", "run", "-n", "3", "--out", "t.jsonl", "--", str(exe)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_alive(exe)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_alive(exe)) >= 3, "the ranks never started"
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(exe) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive(exe) == [], "ranks survived their collector"
        assert proc.stderr is not None
    finally:
        for pid in _alive(exe):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


ORDER = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, v[2] = {0, 0}, idx;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Status st;
        MPI_Recv(&v[0], 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
        printf("first %d\n", st.MPI_SOURCE);
        MPI_Recv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
        MPI_Request q[2];
        MPI_Irecv(&v[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(&v[1], 1, MPI_INT, 2, 1, MPI_COMM_WORLD, &q[1]);
        MPI_Waitany(2, q, &idx, MPI_STATUS_IGNORE);
        printf("waitany %d\n", idx);
        MPI_Wait(&q[1 - idx], MPI_STATUS_IGNORE);
    } else if (rank <= 2) {
        MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        MPI_Send(&rank, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
"""


def _mpvis(cwd: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPVIS_CACHE=str(cache), MPVIS_RENDEZVOUS=str(cwd / "none.json"))
    return subprocess.run([sys.executable, "-m", "mpvis", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_record_replay_and_flip_of_a_compiled_program(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, ORDER, tmp_path / "order", "-g")
    done = _mpvis(tmp_path, cache, "run", "-n", "3", "--record", "rec", "--", str(exe))
    assert done.returncode == 1, done.stderr  # the race is reported
    assert "recorded" in done.stdout
    first = next(line for line in done.stdout.splitlines() if line.startswith("first"))
    picked = next(line for line in done.stdout.splitlines() if line.startswith("waitany"))
    lines = [json.loads(x) for x in (tmp_path / "rec" / "rank-0.jsonl").read_text().splitlines()]
    races = [x for x in lines if x["kind"] == "race"]
    assert len(races) == 1 and races[0]["prev"] is not None
    assert any(x["kind"] == "any" for x in lines)
    for _ in range(2):  # replay: the same deliveries, and the same Waitany choice
        again = _mpvis(tmp_path, cache, "replay", "rec", "--", str(exe))
        assert again.returncode == 0, again.stdout + again.stderr
        assert "replay identical to the recording on every rank" in again.stdout
        assert first in again.stdout and picked in again.stdout
    flipped = _mpvis(tmp_path, cache, "replay", "rec", "--flip", f"0:{races[0]['prev'][0]}",
                     "--", str(exe))
    assert flipped.returncode == 0, flipped.stdout + flipped.stderr
    other = "first 2" if first == "first 1" else "first 1"
    assert other in flipped.stdout
    assert "flipped run beside the recording: 1 of 3 ranks differ" in flipped.stdout


THREADS = r"""
#include <mpi.h>
#include <pthread.h>
static int rank;
static void *work(void *arg) {
    int t = (int)(long)arg, x = 0, y;
    for (int i = 0; i < 500; i++) {
        MPI_Request q[2];
        MPI_Isend(&x, 1, MPI_INT, 1 - rank, t, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(&y, 1, MPI_INT, 1 - rank, t, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
    return NULL;
}
int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_t th[3];
    for (long i = 0; i < 3; i++) pthread_create(&th[i], NULL, work, (void *)i);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    MPI_Finalize();
    return 0;
}
"""


def test_threads_calling_mpi_at_once_lose_no_record(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    """MPI_THREAD_MULTIPLE: three threads per rank post and complete at the same time
    (MPICH gives sends completed at once one shared handle: each thread's call
    must take its own entry)."""
    exe = compile_c(mpicc, THREADS, tmp_path / "threads", "-g", "-pthread")
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode in (0, 1), done.stderr
    assert "refused" not in done.stderr
    recs = records(tmp_path / "t.jsonl")
    kinds = Counter(r["kind"] for r in recs)
    assert kinds["send"] == kinds["recv"] == kinds["consume"] == 2 * 3 * 500
    _, report = check_json(tmp_path / "t.jsonl")
    # Every message matched, nothing left open.  (The zero-buffer analysis reads a
    # rank's records as one sequence of calls; the threads' interleaving can make
    # it report a potential cycle: a documented limit, not asserted either way.)
    assert report["errors"] == []
    assert all(d.get("potential") for d in report["deadlocks"])


STATE = r"""
#include <mpi.h>
#include "mpvis.h"
int main(int argc, char **argv) {
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 3; i++) {
        x += rank + 1;
        MPVIS_STATE_INT("x", x);
        MPVIS_STATE_STR("phase", i == 2 ? "done" : "work");
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    MPVIS_STATE_DOUBLE("y", 0.5);
    MPI_Finalize();
    return 0;
}
"""


def test_program_variables_from_c_feed_predicates(tmp_path: Path, cache: Path, mpicc: str) -> None:
    include = Path(__file__).resolve().parents[2] / "mpvis" / "instrument" / "pmpi" / "include"
    exe = compile_c(mpicc, STATE, tmp_path / "state", "-g", f"-I{include}")
    plain = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False)
    assert plain.returncode == 0, plain.stderr  # the header's calls do nothing without mpvis
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 0, done.stderr
    states = [r for r in records(tmp_path / "t.jsonl") if r["kind"] == "state"]
    assert [r["vars"] for r in states if r["rank"] == 1] == [
        {"x": 2}, {"phase": "work"}, {"x": 4}, {"phase": "work"}, {"x": 6},
        {"phase": "done"}, {"y": 0.5}]
    assert all("call" not in r and r["site"].startswith(str(tmp_path / "state.c:"))
               for r in states)
    pred = _mpvis(tmp_path, cache, "predicate", "t.jsonl", "--define", "a=0:x>=2",
                  "--define", 'b=1:phase == "done"', "--conj", "a,b", "--json")
    assert pred.returncode == 0, pred.stderr
    assert json.loads(pred.stdout)["holds"] is True


CYCLE = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, x = 1, y;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Send(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);   /* buffered eagerly by MPICH */
    MPI_Recv(&y, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
"""


def test_sync_sends_turn_an_unsafe_cycle_into_a_proven_deadlock(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, CYCLE, tmp_path / "cycle", "-g")
    done = run(tmp_path, cache, "-n", "2", "--out", "plain.jsonl", "--", str(exe))
    assert done.returncode == 1  # finished, reported as a deadlock if sends are not buffered
    _, report = check_json(tmp_path / "plain.jsonl")
    assert [d.get("potential") for d in report["deadlocks"]] == [True]
    done = run(tmp_path, cache, "-n", "2", "--sync-sends", "--stop-on-deadlock",
               "--stuck-after", "1", "--out", "sync.jsonl", "--", str(exe))
    assert "stopping the deadlocked ranks" in done.stderr
    sends = [r for r in records(tmp_path / "sync.jsonl") if r["kind"] == "send"]
    assert [(r["sync"], r.get("mode", "standard")) for r in sends] == [(True, "standard")] * 2
    _, report = check_json(tmp_path / "sync.jsonl")
    assert [(d["kind"], d.get("potential", False)) for d in report["deadlocks"]] == [
        ("p2p", False)]


FREED = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, x = 0, y;
    MPI_Request q;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Isend(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &q);
        MPI_Request_free(&q);   /* legal: the send completes on its own */
    } else {
        MPI_Recv(&y, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


def test_a_freed_request_is_no_leak(tmp_path: Path, cache: Path, mpicc: str) -> None:
    exe = compile_c(mpicc, FREED, tmp_path / "freed", "-g")
    done = run(tmp_path, cache, "-n", "2", "--out", "t.jsonl", "--", str(exe))
    assert done.returncode == 0, done.stdout + done.stderr
    finals = [r for r in records(tmp_path / "t.jsonl") if r["kind"] == "final"]
    assert [r["requests"] for r in finals] == [[], []]


POLLING = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, x, flag = 0;
    MPI_Request q;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Irecv(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, &q);  /* nobody sends */
    while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
"""


def test_ranks_polling_forever_are_a_proven_deadlock(
    tmp_path: Path, cache: Path, mpicc: str
) -> None:
    exe = compile_c(mpicc, POLLING, tmp_path / "poll", "-g")
    done = run(tmp_path, cache, "-n", "2", "--stop-on-deadlock", "--stuck-after", "1",
               "--out", "t.jsonl", "--", str(exe))
    assert "stopping the deadlocked ranks" in done.stderr
    waiting = [r for r in records(tmp_path / "t.jsonl") if r["kind"] == "waiting"]
    assert sorted(r["rank"] for r in waiting) == [0, 1]
