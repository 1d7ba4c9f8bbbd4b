"""``mpvis check``: groups, --summary, intended races honoured (issue 14, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.analysis.race_suppress import settings_path
from mpvis.tracefile.reader import read_header

ROOT = Path(__file__).resolve().parents[2]
FARM = ROOT / "sample_traces" / "master_worker.jsonl"
IDENT = "rank 0 comm 0 master_worker.py:34 / master_worker.py:34"


def _check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPVIS_CONFIG_DIR=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "mpvis", "check", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_json_has_groups_and_summary_prints_them(tmp_path: Path) -> None:
    rep = json.loads(_check(tmp_path, str(FARM), "--json").stdout)
    classifier = [g for g in rep["groups"] if g["method"] == "classifier"]
    assert [(g["sites"], g["count"]) for g in classifier] == [
        (["master_worker.py:34", "master_worker.py:34"], 11)]
    assert sum(g["count"] for g in rep["groups"]) == len(rep["races"])
    proc = _check(tmp_path, str(FARM), "--summary")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert "Races by site pair: 1 group" in lines
    assert any(ln.strip().startswith("9 x master_worker.py:34  /  master_worker.py:34")
               for ln in lines)
    assert not any(ln.strip().startswith("rank 0: recv") for ln in lines)  # no race by race
    # the terms the report uses, in words
    assert ("  situation 16: recv(ANY_SOURCE, ANY_TAG), then recv(ANY_SOURCE, ANY_TAG) on the "
            "same rank (a race whenever two messages could reach the first receive)") in lines
    assert "  RCRC: both receives consumed a message" in lines
    assert any(ln.startswith("  LEGITIMATE: a real race") for ln in lines)


@pytest.mark.slow
def test_suppress_file_and_window_settings_decide_the_exit_code(tmp_path: Path) -> None:
    sup = tmp_path / "intended.txt"
    sup.write_text(IDENT + "\n")
    proc = _check(tmp_path, str(FARM), "--suppress", str(sup))
    assert proc.returncode == 0, proc.stdout
    assert "9 races marked intended" in proc.stdout or "races marked intended" in proc.stdout
    assert "Summary: 0 races" in proc.stdout
    # the window's "Intended" file for this program counts as well
    own = settings_path(read_header(FARM), tmp_path / "config")
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({"program": "master_worker.py", "intended": [IDENT]}))
    assert _check(tmp_path, str(FARM)).returncode == 0
    assert _check(tmp_path, str(FARM), "--no-settings").returncode == 1
    rep = json.loads(_check(tmp_path, str(FARM), "--json").stdout)
    assert all(e.get("suppressed") for e in rep["races"] if e["method"] == "classifier"
               and e["verdict"] == "legitimate")


@pytest.mark.slow
def test_unreadable_suppress_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = _check(tmp_path, str(FARM), "--suppress", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "--suppress: cannot read" in proc.stderr
    assert "Traceback" not in proc.stderr
