"""RingChecker under real mpiexec: mismatches are reported and the job aborts instead of hanging."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROGRAM = Path(__file__).parent / "ring_programs" / "collectives.py"


def run(nprocs: int, scenario: str) -> subprocess.CompletedProcess[str]:
    """Run the ring program under mpiexec, bounded by ``timeout`` (124 means it hung)."""
    mpiexec = BIN / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec in the venv")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        "timeout",
        "-k",
        "5",
        "60",
        str(mpiexec),
        "-n",
        str(nprocs),
        sys.executable,
        str(PROGRAM),
        scenario,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=90, check=False)


def test_matching_collectives_pass_oversubscribed() -> None:
    proc = run(8, "ok")
    assert proc.returncode == 0, proc.stderr
    assert "ok 8" in proc.stdout
    assert "mismatch" not in proc.stderr


def test_order_mismatch_aborts_naming_ranks_operations_and_sites() -> None:
    proc = run(4, "order")
    assert proc.returncode not in (0, 124), "the job must abort, not finish or hang"
    assert "different operation" in proc.stderr
    assert "rank 1 calls bcast(root=0, count=1, dtype=int) at prog:2b" in proc.stderr
    assert "barrier() at prog:2 as collective #2" in proc.stderr


def test_root_mismatch_in_an_8_rank_run_is_caught_before_hanging() -> None:
    proc = run(8, "root")
    assert proc.returncode not in (0, 124)
    assert "different root" in proc.stderr
    assert "rank 5 calls bcast(root=1" in proc.stderr


def test_rank_finishing_while_others_wait_in_a_barrier() -> None:
    proc = run(3, "finished")
    assert proc.returncode not in (0, 124)
    assert "rank 2 has finished (MPI_Finalize) after 1 collective(s)" in proc.stderr


def test_without_abort_the_mismatch_is_raised_after_the_hook() -> None:
    proc = run(2, "raise")
    assert proc.returncode == 3
    assert "hook on rank" in proc.stdout
    assert "caught on rank" in proc.stdout
    assert "different operation" in proc.stdout
