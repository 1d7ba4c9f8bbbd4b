"""Record then replay real ``mpiexec`` runs of racing programs; flip a race.

The oracle is independent of the replay's own check: every run also writes
its full trace (``MPVIS_TRACE_DIR``), and a replay is identical when every
rank's ``consume`` records (receive, sender, send event) equal the recorded
run's, in order.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.cli.record_options import record_optimality
from mpvis.instrument.record_file import read_record

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "replay"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
REPLAYS = 20
RUN_TIMEOUT = 60.0

if not MPIEXEC.exists():  # pragma: no cover
    pytest.skip("no mpiexec next to this Python", allow_module_level=True)


def _descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (hydra starts the ranks in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    """End the launcher's process group and every rank under it: nothing outlives a test."""
    pids = _descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            return


def _run(
    program: str | Path, n: int, env: dict[str, str], *args: str, limit: float = RUN_TIMEOUT
) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MPVIS_")}
    full.update(env)
    full["PYTHONPATH"] = str(ROOT)
    cmd = [str(MPIEXEC), "-n", str(n), sys.executable, "-m", "mpvis.instrument.replay_launch"]
    # ``timeout`` still ends the run if this test process itself is killed.
    bound = ["timeout", "-k", "5", str(limit + 10)]
    proc = subprocess.Popen(
        [*bound, *cmd, str(EXAMPLES / program), *args],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        proc.communicate()
        pytest.fail(f"{program} did not finish in {limit} s (its ranks were killed)")
    except BaseException:
        _kill_tree(proc)
        raise
    assert proc.returncode == 0, err
    return out


def _consumes(trace_dir: Path, n: int) -> list[list[tuple[int, int, int, int]]]:
    """Per rank, the (recv, src, tag, send seq) of every consume, in order."""
    out = []
    for r in range(n):
        rows = []
        for line in (trace_dir / f"rank-{r}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("kind") == "consume":
                rows.append((rec["recv"], rec["src"], rec["tag"], rec["send"][1]))
        out.append(rows)
    return out


def _record(tmp: Path, program: str, n: int, *args: str) -> tuple[Path, list]:
    rec = tmp / "record"
    trace = tmp / "recorded-trace"
    _run(program, n, {"MPVIS_RECORD": str(rec), "MPVIS_TRACE_DIR": str(trace)}, *args)
    return rec, _consumes(trace, n)


def _replay(tmp: Path, rec: Path, program: str, n: int, i: int, *args: str, **extra: str):
    trace, verdicts = tmp / f"replay-{i}", tmp / f"verdict-{i}"
    env = {"MPVIS_REPLAY": str(rec), "MPVIS_REPLAY_OUT": str(verdicts)}
    env["MPVIS_TRACE_DIR"] = str(trace)
    env.update(extra)
    out = _run(program, n, env, *args)
    v = [json.loads((verdicts / f"rank-{r}.json").read_text()) for r in range(n)]
    return _consumes(trace, n), v, out


@pytest.mark.parametrize(
    ("program", "n", "args", "races"),
    [
        ("master_worker.py", 3, ("10",), True),
        ("wildcard_exchange.py", 3, ("2",), True),
        ("nonblocking.py", 3, (), True),
        ("race_free.py", 3, (), False),
    ],
)
def test_replays_are_identical_to_the_recording(
    tmp_path: Path, program: str, n: int, args: tuple[str, ...], races: bool
) -> None:
    rec, recorded = _record(tmp_path, program, n, *args)
    records = read_record(rec)
    assert (sum(len(r.races) for r in records) > 0) == races
    for i in range(REPLAYS):
        replayed, verdicts, _ = _replay(tmp_path, rec, program, n, i, *args)
        assert replayed == recorded, f"replay {i} differs"
        assert all(v["divergence"] is None for v in verdicts)
        assert all(v["forced_ok"] == v["forced"] for v in verdicts)


def test_race_free_program_records_nothing(tmp_path: Path) -> None:
    rec, _ = _record(tmp_path, "race_free.py", 4)
    records = read_record(rec)
    assert all(r.complete and not r.races and not r.anys for r in records)
    assert record_optimality(records).recorded == 0
    assert sum(r.consumes for r in records) == 20  # yet messages were consumed


def test_master_worker_records_a_fraction_of_the_messages(tmp_path: Path) -> None:
    rec, _ = _record(tmp_path, "master_worker.py", 4, "10")
    opt = record_optimality(read_record(rec))
    assert 0 < opt.recorded < opt.messages
    assert opt.lower_bound <= opt.recorded
    all_rec = tmp_path / "all"
    _run("master_worker.py", 4, {"MPVIS_RECORD": str(all_rec), "MPVIS_RECORD_ALL": "1"}, "10")
    everything = read_record(all_rec)
    consumes = sum(r.consumes for r in everything)
    assert sum(len(r.races) for r in everything) == consumes > opt.recorded


@pytest.mark.parametrize(
    ("program", "args"),
    [("master_worker.py", ("10",)), ("wildcard_exchange.py", ("2",)), ("nonblocking.py", ())],
)
def test_flip_gives_the_receive_the_other_racing_message(
    tmp_path: Path, program: str, args: tuple[str, ...]
) -> None:
    rec, recorded = _record(tmp_path, program, 4, *args)
    race = read_record(rec)[0].races[0]
    assert race.prev is not None
    earlier = race.prev[0]
    replayed, verdicts, _ = _replay(
        tmp_path, rec, program, 4, 0, *args, MPVIS_REPLAY_FLIP=f"0:{earlier}"
    )
    got = next(row for row in replayed[0] if row[0] == earlier)
    assert (got[1], got[3]) == (race.src, race.send)  # the other message
    was = next(row for row in recorded[0] if row[0] == earlier)
    assert (was[1], was[3]) == (race.prev[1], race.prev[2])
    # Everything rank 0 consumed before the flipped receive is as recorded.
    before = [row for row in recorded[0] if row[0] < earlier]
    assert replayed[0][: len(before)] == before
    assert verdicts[0]["free"] and verdicts[0]["divergence"] is None


def test_a_hung_run_leaves_no_rank_behind(tmp_path: Path) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text(
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.Get_rank() == 0:\n"
        "    MPI.COMM_WORLD.recv(source=MPI.ANY_SOURCE, tag=99)\n"
        "MPI.COMM_WORLD.Barrier()\n"
    )
    with pytest.raises(pytest.fail.Exception, match="did not finish"):
        _run(hang, 3, {}, limit=3)
    assert _running(str(hang)) == []


def _running(text: str) -> list[int]:
    """The live processes whose command line contains ``text``."""
    found = []
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if text.encode() in cmd.read_bytes():
                found.append(int(cmd.parent.name))
    return found
