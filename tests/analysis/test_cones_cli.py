"""``mpvis cone`` and ``mpvis predicate`` on trace files: JSON, text, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpvis.analysis.cones import cone_of
from mpvis.analysis.predicates import PredicateEvaluator, detect_conjunctive, parse_definition
from mpvis.cli.main import main
from mpvis.sim.api import simulate
from tests.fixtures import model_of


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    header, records = simulate("master_worker", 0)
    path = tmp_path / "mw.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cone_json(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "cone", str(trace), "3:12", "--json")
    assert code == 0
    got = json.loads(out)
    header, records = simulate("master_worker", 0)
    assert got == cone_of(model_of(header, records), 3, 12).to_json()
    assert got["event"] == [3, 12] and got["frontier"][3] == 12


def test_cone_text(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "cone", str(trace), "0:5")
    assert code == 0
    assert "Causality cone of event 0:5" in out
    assert "rank 7:" in out


@pytest.mark.parametrize("event", ["3", "a:1", "1:-2", "3:99999", "42:0", "1:2:3"])
def test_cone_bad_event(trace: Path, capsys: pytest.CaptureFixture[str], event: str) -> None:
    code, out, err = run(capsys, "cone", str(trace), event)
    assert code == 2 and out == ""
    assert err.startswith("mpvis: ") and err.count("\n") == 1


def test_cone_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"header"}\n')
    assert run(capsys, "cone", str(bad), "0:0")[0] == 2
    assert run(capsys, "cone", str(tmp_path / "missing.jsonl"), "0:0")[0] == 2


def test_predicate_conj_json(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "predicate",
        str(trace),
        "--define",
        "a=0:done >= 2",
        "--define",
        'b=3:phase == "idle"',
        "--conj",
        "a,b",
        "--json",
    )
    header, records = simulate("master_worker", 0)
    m = model_of(header, records)
    want = detect_conjunctive(
        PredicateEvaluator(m),
        [parse_definition("a=0:done >= 2"), parse_definition('b=3:phase == "idle"')],
    )
    assert code == 0
    assert json.loads(out) == {"holds": True, "cut": list(want or ())}


def test_predicate_never_holds(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "predicate", str(trace), "--define", "a=0:done > 1000", "--json")
    assert code == 1
    assert json.loads(out) == {"holds": False, "cut": None}
    code, out, _ = run(capsys, "predicate", str(trace), "--define", "a=0:done > 1000")
    assert code == 1 and "No consistent cut" in out


def test_predicate_disj(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "predicate",
        str(trace),
        "--define",
        "a=0:done >= 2",
        "--define",
        "b=3:kind == 'recv'",
        "--disj",
        "a,b",
        "--json",
    )
    got = json.loads(out)
    assert code == 0 and got["holds"]
    assert got["cut"] == got["minimal"][0]["cut"]
    assert got["predicate"] == got["minimal"][0]["predicate"]
    assert {m["predicate"] for m in got["minimal"]} <= {"a", "b"}
    code, out, _ = run(
        capsys,
        "predicate",
        str(trace),
        "--define",
        "a=0:done >= 2",
        "--define",
        "b=3:kind == 'recv'",
        "--disj",
        "a,b",
    )
    assert code == 0 and "Disjunction a or b" in out and "(b true)" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--define", "a=0:x >"], "column"),
        (["--define", "a=0:x", "--define", "a=1:y"], "defined twice"),
        (["--define", "a=0:x", "--conj", "a,z"], "undefined predicate"),
        (["--define", "a=99:x"], "not in the run"),
        (["--define", "nonsense"], "NAME=RANK:EXPR"),
    ],
)
def test_predicate_errors(
    trace: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, "predicate", str(trace), *args)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1
