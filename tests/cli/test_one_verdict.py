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
