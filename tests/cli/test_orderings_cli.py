"""``mpvis orderings``: section 7's counts from a trace file, readable and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.cli.main import main
from mpvis.collector.mpiexec import find_mpiexec
from mpvis.sim.neighbor_exchange import neighbor_exchange_trace


def _write(tmp_path: Path, nprocs: int, iterations: int, *, with_calls: bool = True) -> str:
    header, records = neighbor_exchange_trace(nprocs, iterations, with_calls=with_calls)
    path = tmp_path / "fig10.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))
    return str(path)


def test_json_reproduces_section7(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["orderings", _write(tmp_path, 3, 3), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["orderings"] == 653916
    assert out["after_process"] == 4**3 + 2
    assert out["after_subgroups"] == 2 * 2 * 3 + 2
    middle = out["ranks"][1]
    assert middle["orderings"] == 64
    assert [g["orderings"] for g in middle["subgroups"]] == [2] * 6
    assert middle["subgroups"][0]["events"] == [0, 2]  # the send and the consume of a Sendrecv


def test_big_counts_are_exact_integers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["orderings", _write(tmp_path, 6, 3, with_calls=False), "--json"]) == 0
    text = capsys.readouterr().out
    assert '"orderings": 1862610445146582197016908571072300287' in text


def test_readable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["orderings", _write(tmp_path, 3, 1)]) == 0
    out = capsys.readouterr().out
    assert "orderings of the run's POEG: 60" in out
    assert "rank 1: 4 events, 4 orderings, 2 subgroups" in out
    assert "after subgroup partitioning: 6" in out


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header"}\n')
    assert main(["orderings", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpvis: invalid trace:") and "Traceback" not in err
    assert main(["orderings", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["orderings", _write(tmp_path, 3, 1), "--limit", "0"]) == 2


@pytest.mark.mpi
@pytest.mark.timeout(120)
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
@pytest.mark.parametrize(("iterations", "expected"), [(1, 60), (2, 6268)])
def test_real_mpi4py_run_of_figure10(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     iterations: int, expected: int) -> None:
    """examples/neighbor_exchange.py traced by the mpi4py library: its Sendrecv halves
    are paired by the ``call`` of the send half, and section 7's counts come out."""
    trace = tmp_path / "ne.jsonl"
    example = Path(__file__).resolve().parents[2] / "examples" / "neighbor_exchange.py"
    done = subprocess.run(
        [sys.executable, "-m", "mpvis", "run", "-n", "3", "--headless", "--out", str(trace),
         "--", str(example), str(iterations)],
        capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    assert main(["orderings", str(trace), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["orderings"] == expected
    assert out["ranks"][1]["after_subgroups"] == 2 * 2 * iterations


def test_readable_output_of_huge_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["orderings", _write(tmp_path, 6, 3)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "orderings of the run's POEG: ~1.86e36 (37 digits, exact with --json)"
