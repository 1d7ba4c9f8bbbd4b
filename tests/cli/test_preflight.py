"""Bad usage fails fast and clearly, before mpiexec starts (issue 14, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mpvis(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "no-window.json"),
               MPVIS_CONFIG_DIR=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "mpvis", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def ok_program(tmp_path: Path) -> Path:
    prog = tmp_path / "ok.py"
    prog.write_text("raise SystemExit('this must never run')\n")
    return prog


@pytest.mark.slow
@pytest.mark.parametrize(
    ("out", "says"),
    [
        ("/proc/mpvis-no/run.jsonl", "directory /proc/mpvis-no does not exist"),
        ("/proc/run.jsonl", "cannot write there"),
        (".", "is a directory"),
    ],
)
def test_unwritable_out_is_named_before_the_run(
    tmp_path: Path, ok_program: Path, out: str, says: str
) -> None:
    p = _mpvis(tmp_path, "run", "-n", "2", "--out", out, "--", str(ok_program))
    assert p.returncode == 2, p.stderr
    assert f"--out {out}" in p.stderr and says in p.stderr
    assert "must never run" not in p.stderr + p.stdout  # mpiexec never started


@pytest.mark.slow
def test_missing_program_and_syntax_error(tmp_path: Path) -> None:
    p = _mpvis(tmp_path, "run", "-n", "2", "--", "absent.py")
    assert p.returncode == 2 and "no such program: absent.py" in p.stderr
    p = _mpvis(tmp_path, "run", "-n", "2", "--", "./a.out")
    assert p.returncode == 2 and "no such program: ./a.out" in p.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("from mpi4py import MPI\n\ndef f(:\n    pass\n")
    p = _mpvis(tmp_path, "run", "-n", "2", "--", str(bad))
    assert p.returncode == 2 and f"{bad}:3: syntax error" in p.stderr
    assert "Traceback" not in p.stderr
    assert not list(tmp_path.glob("mpvis-run-*.jsonl"))  # nothing was recorded


@pytest.mark.slow
def test_a_program_with_no_mpi_call_says_so(tmp_path: Path) -> None:
    prog = tmp_path / "plain.py"
    prog.write_text("print('no MPI here')\n")
    p = _mpvis(tmp_path, "run", "-n", "2", "--out", "t.jsonl", "--", str(prog), timeout=120)
    assert p.returncode == 0, p.stderr
    assert "the program made no MPI call" in p.stderr


@pytest.mark.slow
def test_a_failing_program_has_its_own_exit_code(tmp_path: Path) -> None:
    prog = tmp_path / "fails.py"
    prog.write_text("from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\nraise SystemExit(1)\n")
    p = _mpvis(tmp_path, "run", "-n", "2", "--out", "t.jsonl", "--", str(prog), timeout=120)
    assert p.returncode == 3, (p.returncode, p.stderr)  # not 1: "races found"
    assert "the program failed" in p.stderr


@pytest.mark.slow
def test_predicate_on_a_variable_never_recorded_says_so(tmp_path: Path) -> None:
    trace = ROOT / "sample_traces" / "deadlock_recv_recv.jsonl"
    p = _mpvis(tmp_path, "predicate", str(trace), "--define", "a=0:phse=='exchange'",
               "--conj", "a")
    assert p.returncode == 2
    assert "predicate a: rank 0 never records 'phse' (variables it records: phase)" in p.stderr
    p = _mpvis(tmp_path, "predicate", str(trace), "--define", "a=0:phase=='exchange'",
               "--conj", "a")
    assert p.returncode == 0, p.stderr
