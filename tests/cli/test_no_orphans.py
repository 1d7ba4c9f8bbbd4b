"""No orphans, whatever dies (issue 15): ``mpvis run`` SIGKILLed leaves no
mpiexec, proxy or rank alive 10 s later; the ranks notice their collector is
gone, spill what it may not have received, and leave; ``mpvis recover`` merges
the spill files into the trace.

Processes of the run are found from ``/proc`` (descendants of ``mpvis run``
and every process naming the test's own program), snapshotted before the kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpvis.cli.run import EXIT_TRACE_INCOMPLETE
from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(180),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc"),
]

#: A ping-pong that never ends (records flow all the time).
FOREVER = """
import sys, time
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
i = 0
while True:
    if r == 0:
        comm.send(i, dest=1, tag=1)
        comm.recv(source=1, tag=2)
    else:
        comm.recv(source=0, tag=1)
        comm.send(i, dest=0, tag=2)
    i += 1
    if i == 200 and r == 0:
        print("RUNNING", flush=True)
    if i % 50 == 0:
        time.sleep(0.01)
"""
#: The limit of the issue: nothing of the run may be alive this long after the kill.
SURVIVAL_LIMIT = 10.0


def _stat(pid: int) -> tuple[int, str] | None:
    """``(ppid, state)`` of a process, ``None`` if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (x.decode(errors="replace").partition("=") for x in raw.split(b"\0") if x)
    return {k: v for k, _, v in pairs}


def run_processes(root: int, marker: str) -> set[int]:
    """Descendants of ``root`` and every process whose command line holds ``marker``."""
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    parent = {p: st[0] for p in pids if (st := _stat(p)) is not None}
    out = {p for p in pids if marker in _cmdline(p)}
    for p in parent:
        q = p
        while q > 1:
            if q == root:
                out.add(p)
                break
            q = parent.get(q, 0)
    out.discard(os.getpid())
    return out


def alive(pids: set[int]) -> set[int]:
    return {p for p in pids if (st := _stat(p)) is not None and st[1] not in ("Z", "X")}


def start_run(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "forever.py").write_text(FOREVER)
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "no-window.json"),
               MPVIS_SPILL_DIR=str(tmp_path / "spill"))
    p = subprocess.Popen([sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", "t.jsonl",
                          *args, "--", "forever.py"], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()  # the program's first output: it runs, traced
    assert "RUNNING" in line, p.stderr.read() if p.poll() is not None and p.stderr else line
    return p


def test_sigkill_of_mpvis_run_leaves_no_process_and_spills(tmp_path: Path) -> None:
    p = start_run(tmp_path)
    time.sleep(1.0)  # let records flow for a while (the test does not depend on how many)
    procs = run_processes(p.pid, str(tmp_path / "forever.py"))
    assert len(procs) >= 3  # mpiexec and two ranks at least
    tokens = {_environ(pid).get("MPVIS_TOKEN") for pid in procs} - {None}
    assert tokens  # the ranks have it, in their environment only
    for pid in procs:
        assert not any(t in _cmdline(pid) for t in tokens if t), _cmdline(pid)
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + SURVIVAL_LIMIT
    while alive(procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive(procs)
    for pid in left:  # do not leave them behind for the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, {pid: _cmdline(pid) for pid in left}
    spills = sorted((tmp_path / "spill").glob("spill-*-rank-*.jsonl"))
    assert spills, f"no rank spilled its records: {p.stderr.read() if p.stderr else None}"
    for f in spills:
        lines = f.read_text().splitlines()
        assert json.loads(lines[0])["kind"] == "mpvis-spill" and len(lines) > 1
        seqs = [json.loads(x)["seq"] for x in lines[1:-1]]  # the last line may be cut
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # in order, no gap
    # mpvis recover puts them into the trace; the trace then opens
    trace = tmp_path / "t.jsonl"
    rec = mpvis_cli("recover", str(trace), "--spill-dir", str(tmp_path / "spill"))
    assert rec.returncode == 0 and "records recovered" in rec.stdout, rec.stderr
    assert spilled(tmp_path / "spill") <= keys(trace)  # every spilled record is in it now
    check = mpvis_cli("check", str(trace), "--json")
    assert check.returncode in (0, 1), check.stderr
    assert json.loads(check.stdout)["events"] == events(trace)


def keys(trace: Path) -> set[tuple[int, int]]:
    """``(rank, seq)`` of every record of a trace."""
    return {(r["rank"], r["seq"]) for r in map(json.loads, trace.read_text().splitlines()[1:])}


def spilled(directory: Path) -> set[tuple[int, int]]:
    """``(rank, seq)`` of every whole record in the spill files of ``directory``."""
    out = set()
    for f in directory.glob("spill-*.jsonl"):
        for line in f.read_text().splitlines()[1:]:
            try:
                r = json.loads(line)
            except ValueError:  # a cut last line
                continue
            out.add((r["rank"], r["seq"]))
    return out


def events(trace: Path) -> int:
    return sum(1 for x in trace.read_text().splitlines()[1:] if x.strip())


def mpvis_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mpvis", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_sigkill_of_a_separate_collector_makes_its_ranks_spill_and_leave(
        tmp_path: Path) -> None:
    """A machine's own ``mpvis collector`` (runs across machines) killed: its ranks
    notice the closed connection, spill and leave; mpiexec then ends."""
    from mpvis.collector.central import CentralProcess
    from mpvis.collector.mpiexec import launch, rank_command

    (tmp_path / "forever.py").write_text(FOREVER)
    central = CentralProcess(journal_dir=tmp_path).start()
    port = socket_port()
    env = dict(os.environ, MPVIS_TOKEN=central.token, MPVIS_RUN="R1",
               MPVIS_SPILL_DIR=str(tmp_path / "spill"),
               MPVIS_COLLECTOR=f"127.0.0.1:{port}")
    host, cport = central.address
    coll = subprocess.Popen([sys.executable, "-m", "mpvis", "collector", "--central",
                             f"{host}:{cport}", "--run", "R1", "--port", str(port)],
                            env=env, stderr=subprocess.PIPE, text=True)
    assert coll.stderr is not None
    assert "collector on" in coll.stderr.readline()
    mpiexec = find_mpiexec()
    assert mpiexec is not None
    ranks = launch(rank_command(mpiexec, 2, [], [str(tmp_path / "forever.py")]), env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                len(p.read_text().splitlines()) > 100 for p in tmp_path.glob("*.jsonl")):
            time.sleep(0.1)
        procs = run_processes(ranks.pid, str(tmp_path / "forever.py"))
        coll.send_signal(signal.SIGKILL)
        coll.wait()
        ranks.wait(timeout=SURVIVAL_LIMIT)  # mpiexec ends once its ranks left
        deadline = time.monotonic() + SURVIVAL_LIMIT
        while alive(procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(procs)
        spills = sorted((tmp_path / "spill").glob("spill-R1-rank-*.jsonl"))
        assert len(spills) == 2, spills
    finally:
        for p in (ranks, coll):
            if p.poll() is None:
                p.kill()
        central.stop()
    # what the dead collector held is in the spill files: recover merges it
    (trace,) = [p for p in tmp_path.glob("*.jsonl") if p.name != "forever.py"]
    rec = mpvis_cli("recover", str(tmp_path), "--spill-dir", str(tmp_path / "spill"))
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert spilled(tmp_path / "spill") <= keys(trace)
    check = mpvis_cli("check", str(trace), "--json")
    assert check.returncode in (0, 1), check.stderr


def socket_port() -> int:
    """A free loopback port."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: A ping-pong that lasts a few seconds, then ends.
FINITE = FOREVER.replace("while True:", "while i < 4000:")

WINDOW = """
import sys, time
from pathlib import Path
from mpvis.collector.central import CentralProcess
c = CentralProcess(journal_dir=sys.argv[1]).start()
c.advertise(Path(sys.argv[2]))
print("UP", flush=True)
time.sleep(600)
"""


def test_the_window_killed_mid_stream_is_an_incomplete_trace_not_a_hang(
        tmp_path: Path) -> None:
    """A window (its central process) SIGKILLed while a run streams to it: the
    run still ends, says how many records the window did not take and exits
    non-zero (it said "the trace is in the window", exit 0); nothing is left."""
    (tmp_path / "finite.py").write_text(FINITE)
    (tmp_path / "journals").mkdir()
    rendezvous = tmp_path / "window.json"
    window = subprocess.Popen([sys.executable, "-c", WINDOW, str(tmp_path / "journals"),
                               str(rendezvous)], stdout=subprocess.PIPE, text=True)
    assert window.stdout is not None and window.stdout.readline().strip() == "UP"
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(rendezvous))
    run = subprocess.Popen([sys.executable, "-m", "mpvis", "run", "-n", "2", "--",
                            "finite.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None
        assert "RUNNING" in run.stdout.readline()
        procs = run_processes(run.pid, str(tmp_path / "finite.py"))
        window.kill()
        window.wait()
        _, err = run.communicate(timeout=120)
        assert run.returncode == EXIT_TRACE_INCOMPLETE, err
        lost = int(err.split("the trace is incomplete: ")[1].split(" records lost")[0])
        assert lost > 0 and "the window did not take" in err
        deadline = time.monotonic() + SURVIVAL_LIMIT
        while alive(procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(procs)
    finally:
        for p in (run, window):
            if p.poll() is None:
                p.kill()
