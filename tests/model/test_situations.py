"""Every situation of Table 1 and every consumption case, table-driven.

The expected verdicts are written out by hand from the paper's Table 1
comments (section 3.1) and the spec's verdict order, for the construction of
sample_traces/generate.py: the first receive consumes rank 0's message (tag 1),
the second rank 2's (tag 1); the ``pid2`` variants make rank 2 the origin of
both; the sends are concurrent, so every two-origin race is legitimate.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.analysis.report import build_report
from mpvis.model.manager import ModelManager
from mpvis.tracefile.reader import iter_records, load_trace, read_header
from tests.model.random_traces import interleave

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
NO_RACE = {1, 2, 5, 6, 9, 10, 13, 14}
CASES = ("RCRC", "RCR_", "R_RC", "R_R_")

# file stem -> list of (situation, verdict) the classifier must report
EXPECTED: dict[str, list[tuple[int, str]]] = {}
for n in range(1, 17):
    for case in CASES:
        EXPECTED[f"s{n:02d}_{case}"] = []
for n in (4, 8, 12, 16, 3, 11):  # potential whatever was consumed
    EXPECTED[f"s{n:02d}_RCRC"] = [(n, "legitimate")]
    for case in ("RCR_", "R_RC", "R_R_"):
        EXPECTED[f"s{n:02d}_{case}"] = [(n, "unverified")]
# 7 and 15: only when both consumed with the same tag (and, for 7, when the
# first message came from pid2)
EXPECTED["s07_RCRC"] = [(7, "legitimate")]
EXPECTED["s15_RCRC"] = [(15, "legitimate")]
EXPECTED["s07_RCRC_pid2"] = [(7, "spurious")]
EXPECTED["s07_RCR__pid2"] = [(7, "unverified")]
EXPECTED["s03_RCRC_tagsdiffer"] = []
EXPECTED["s11_RCRC_tagsdiffer"] = []


def test_every_sample_has_an_expectation() -> None:
    stems = {p.stem for p in (SAMPLES / "situations").glob("*.jsonl")}
    assert stems == set(EXPECTED)
    for n in NO_RACE:
        assert all(EXPECTED[f"s{n:02d}_{c}"] == [] for c in CASES)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_situation(stem: str) -> None:
    m = load_trace(SAMPLES / "situations" / f"{stem}.jsonl")
    got = [(r["situation"], r["verdict"]) for r in build_report(m)["races"]]
    assert got == EXPECTED[stem]
    for r in build_report(m)["races"]:
        assert r["method"] == "classifier" and r["scope"] == "adjacent"
        assert r["rank"] == 1 and r["recvs"] in ([0, 2], [0, 1])


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_situation_any_arrival_order(stem: str) -> None:
    """Reversing and shuffling the interleaving of ranks changes nothing."""
    path = SAMPLES / "situations" / f"{stem}.jsonl"
    header = read_header(path)
    recs = [r for _, r in iter_records(path)]
    want = build_report(load_trace(path))
    rng = random.Random(stem)
    for _ in range(5):
        m = ModelManager(header)
        for rec in interleave(recs, rng):
            m.add(rec)
        m.finish()
        assert build_report(m) == want


def test_spec_example_situation_16() -> None:
    m = load_trace(SAMPLES / "situations" / "s16_RCRC.jsonl")
    (race,) = build_report(m)["races"]
    assert race["messages"] == [[0, 0], [2, 0]]
    assert race["verdict"] == "legitimate"


def test_false_spurious_ring_master_worker() -> None:
    def verdicts(name: str) -> list[str]:
        return [r["verdict"] for r in build_report(load_trace(SAMPLES / name))["races"]]

    assert verdicts("false_race.jsonl") == ["false"]
    assert verdicts("spurious_race.jsonl") == ["spurious"]
    assert verdicts("ring.jsonl") == []
    mw = verdicts("master_worker.jsonl")
    assert mw.count("legitimate") >= 5 and "false" in mw


@pytest.mark.slow
def test_check_cli_exit_codes_and_json(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mpvis", "check", *args],
                              capture_output=True, text=True, timeout=60, check=False)

    race = run(str(SAMPLES / "situations" / "s16_RCRC.jsonl"), "--json")
    assert race.returncode == 1
    rep = json.loads(race.stdout)
    assert rep["nprocs"] == 3 and rep["deadlocks"] == []
    classifier = [r for r in rep["races"] if r["method"] == "classifier"]
    exact = [r for r in rep["races"] if r["method"] == "exact"]
    assert [(r["scope"], r["rank"], r["recvs"], r["situation"], r["messages"], r["verdict"])
            for r in classifier] == [("adjacent", 1, [0, 2], 16, [[0, 0], [2, 0]], "legitimate")]
    assert classifier[0]["confirmed"] is True
    assert [{k: v for k, v in r.items() if k != "group"} for r in exact] == [
        {"method": "exact", "rank": 1, "recvs": [0], "messages": [[0, 0], [2, 0]],
         "verdict": "legitimate"}]  # "group": the race's site-pair group (optional field)
    assert all(isinstance(r["group"], int) for r in rep["races"])
    clean = run(str(SAMPLES / "ring.jsonl"))
    assert clean.returncode == 0 and "No races found" in clean.stdout
    text = run(str(SAMPLES / "situations" / "s16_RCRC.jsonl"))
    assert "situation 16" in text.stdout and "situation16.py:20" in text.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"header","format":"mpvis-trace","version":1,"nprocs":2}\n{"rank":0\n')
    broken = run(str(bad))
    assert broken.returncode == 2
    assert f"{bad}:2" in broken.stderr and "Traceback" not in broken.stderr
