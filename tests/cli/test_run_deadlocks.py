"""Deadlocks of real mpiexec runs, found by ``mpvis run`` while the run hangs.

Every deadlocking example is reported with the right kind, ranks and reason
and stopped (``--stop-on-deadlock``), the trace kept; correct programs are not
reported.  Collective mismatches are also caught by the ring check inside the
ranks, which aborts the job before it hangs; the trace written up to then
still proves the mismatch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(180),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def mpvis_run(tmp_path: Path, n: int, example: str, *args: str, ringcheck: bool = True
              ) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "run.jsonl"
    env = {"MPVIS_RINGCHECK": "1" if ringcheck else "0", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "mpvis", "run", "-n", str(n), "--out", str(out),
         "--headless", "--stuck-after", "1.5", "--stop-on-deadlock", "--",
         str(EXAMPLES / example), *args],
        capture_output=True, text=True, timeout=150, check=False, env=env)
    check = subprocess.run([sys.executable, "-m", "mpvis", "check", str(out), "--json"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert check.returncode in (0, 1), check.stderr
    return proc, json.loads(check.stdout)


@pytest.mark.parametrize(("example", "n", "ranks", "words"), [
    ("deadlock_recv_cycle.py", 2, [0, 1], "Wait-for cycle: 0 -> 1 -> 0"),
    ("deadlock_three_cycle.py", 3, [0, 1, 2], "Wait-for cycle"),
])
def test_p2p_deadlock_found_while_hanging(tmp_path: Path, example: str, n: int,
                                          ranks: list[int], words: str) -> None:
    proc, report = mpvis_run(tmp_path, n, example)
    assert proc.returncode == 1, proc.stderr
    assert "mpvis: deadlock (p2p" in proc.stderr and words in proc.stderr
    (dl,) = report["deadlocks"]
    assert dl["kind"] == "p2p" and sorted(dl["ranks"]) == ranks and words in dl["reason"]
    assert all(r["status"] == "suspended" for r in report["ranks"])


@pytest.mark.parametrize(("example", "n", "words"), [
    ("collective_order_mismatch.py", 4, "different collectives"),
    ("collective_root_mismatch.py", 4, "different root"),
    ("finish_while_barrier.py", 3, "has finished"),
])
@pytest.mark.parametrize("ringcheck", [True, False])
def test_collective_mismatch(tmp_path: Path, example: str, n: int, words: str,
                             ringcheck: bool) -> None:
    proc, report = mpvis_run(tmp_path, n, example, ringcheck=ringcheck)
    assert proc.returncode != 0
    # a mismatch MPI completed (e.g. with wrong data) is an error, not a deadlock
    found = report["deadlocks"] + report["errors"]
    kinds = {d["kind"].removesuffix("_mismatch") for d in found}
    reasons = " ".join(d["reason"] for d in found)
    if ringcheck and "finish" not in example:
        # the ranks' ring check aborted the job before it could hang
        assert "mpvis ringcheck: collective mismatch" in proc.stderr
    assert "collective" in kinds and words in reasons, (proc.stderr, report["deadlocks"])


@pytest.mark.parametrize(("example", "n", "args"), [
    ("ring.py", 4, ()),
    ("master_worker.py", 4, ()),
    ("long_running.py", 2, ("3",)),
])
def test_correct_programs_are_not_reported(tmp_path: Path, example: str, n: int,
                                           args: tuple[str, ...]) -> None:
    proc, report = mpvis_run(tmp_path, n, example, *args)
    assert "deadlock" not in proc.stderr.lower(), proc.stderr
    assert report["deadlocks"] == []
    assert all(r["status"] == "finished" for r in report["ranks"])
