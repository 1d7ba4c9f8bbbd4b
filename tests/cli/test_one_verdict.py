"""One verdict per trace (issue 14, item 7): the headless demo says what
``mpvis check`` says on the trace it wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _mpvis(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "window.json"),
               MPVIS_CONFIG_DIR=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "mpvis", *args], env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def _summary(text: str) -> str:
    return [ln for ln in text.splitlines() if ln.startswith("Summary:")][-1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "scenario",
    ["p2p_deadlock", "lock_cycle", "collective_mismatch", "lock_chain", "wildcard_race", "ring"],
)
def test_demo_and_check_agree(tmp_path: Path, scenario: str) -> None:
    out = tmp_path / f"{scenario}.jsonl"
    demo = _mpvis(tmp_path, "demo", scenario, "--headless", "--out", str(out))
    check = _mpvis(tmp_path, "check", str(out))
    assert _summary(demo.stdout) == _summary(check.stdout), (demo.stdout, check.stdout)
    assert demo.returncode == check.returncode, (demo.stdout, check.stdout)
    if "deadlock" in scenario or scenario == "collective_mismatch":
        assert demo.returncode == 1 and "No deadlocks found" not in demo.stdout


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.mpi
@pytest.mark.timeout(150)
@pytest.mark.parametrize("ringcheck", [True, False])
def test_a_collective_hang_gives_one_consistent_message(tmp_path: Path, ringcheck: bool) -> None:
    """finish_while_barrier: rank 2 finishes while 0 and 1 wait in a barrier.  With
    the ranks' ring check the job aborts by itself: no "press Ctrl-C"; without it
    the run hangs: one deadlock message naming every stuck rank, then the hint."""
    import signal

    env = {"MPVIS_RINGCHECK": "1" if ringcheck else "0", "PATH": "/usr/bin:/bin",
           "MPVIS_RENDEZVOUS": str(tmp_path / "w.json")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpvis", "run", "-n", "3", "--out", str(tmp_path / "t.jsonl"),
         "--stuck-after", "1.5", "--", str(EXAMPLES / "finish_while_barrier.py")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    if not ringcheck:  # read the terminal until the hint, then stop the hung run
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "press Ctrl-C" in line:
                break
        proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=90)
    err = "".join(lines) + rest
    told = [ln for ln in err.splitlines() if ln.startswith("mpvis: deadlock (")]
    if ringcheck:
        assert "press Ctrl-C" not in err, err  # the job ended by itself
        assert len(told) <= 1, err
    else:
        assert len(told) == 1 and "ranks 0, 1, 2" in told[0], err
        assert err.count("press Ctrl-C") == 1
