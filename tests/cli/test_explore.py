"""``mpvis explore`` on real mpi4py programs (MPICH): a hidden ordering bug, harmless races."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpvis.cli.main import main
from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(240),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _explore(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    code = main(["explore", *args])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_finds_the_order_that_the_natural_schedule_hides(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, err = _explore(capsys, "-n", "3", "--json", "--workdir", str(tmp_path),
                                 "--", str(EXAMPLES / "order_bug.py"))
    assert code == 1
    assert report["orderings_total"] == 2 and report["runs"] == 2 and report["complete"]
    (diff,) = report["differences"]
    assert diff["order"] == "0:0=2:0,2=1:0"
    assert diff["what"] == ["rank 0 printed 'folded: 21' instead of 'folded: 12'"]
    assert "--order 0:0=2:0,2=1:0" in diff["replay"]
    assert "run 2/2" in err and "DIFFERENT" in err
    # the replay command given reproduces the wrong result
    code = main(["replay", str(tmp_path / "record"), "--order", diff["order"], "-n", "3",
                 "--no-stream", "--rank-output", str(tmp_path / "again"), "--",
                 str(EXAMPLES / "order_bug.py")])
    assert code == 0
    assert (tmp_path / "again" / "rank-0.out").read_text() == "folded: 21\n"


def test_stop_at_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = _explore(capsys, "-n", "4", "--json", "--stop-at-first",
                               "--workdir", str(tmp_path), "--", str(EXAMPLES / "order_bug.py"))
    assert code == 1
    assert report["runs"] == 2 and not report["complete"]
    assert report["stopped"] == "--stop-at-first" and len(report["differences"]) == 1
    assert report["orderings_total"] == 6


def test_harmless_races_report_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = _explore(capsys, "-n", "3", "--json", "--",
                               str(EXAMPLES / "order_harmless.py"))
    assert code == 0
    assert report["differences"] == [] and report["unrealised"] == []
    assert report["runs"] == report["runs_needed"] == 2 and report["complete"]


def test_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "-n", "2"]) == 2
    assert "no program given" in capsys.readouterr().err
    assert main(["explore", "-n", "2", "--max-runs", "0", "--", "x.py"]) == 2
    missing = tmp_path / "missing.py"
    assert main(["explore", "-n", "2", "--run-timeout", "60", "--", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "the program could not be recorded" in err and "Traceback" not in err


def test_from_an_earlier_recording_one_receive(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """What the window runs: the subgroup of one racing receive of a recorded run."""
    import subprocess
    import sys

    program = str(EXAMPLES / "order_bug.py")
    trace, record = tmp_path / "run.jsonl", tmp_path / "rec"
    subprocess.run([sys.executable, "-m", "mpvis", "run", "-n", "3", "--headless", "--out",
                    str(trace), "--record", str(record), "--", program],
                   capture_output=True, timeout=120, check=False)
    code, report, err = _explore(capsys, "-n", "3", "--json", "--from-record", str(record),
                                 "--trace", str(trace), "--receive", "0:2",
                                 "--workdir", str(tmp_path / "w"), "--", program)
    assert code == 1 and "replaying the record" in err
    (diff,) = report["differences"]
    assert Path(diff["trace"]).exists() and str(record) in diff["replay"]
    assert main(["explore", "-n", "3", "--from-record", str(record), "--", program]) == 2
    assert "go together" in capsys.readouterr().err


def test_finds_the_waitany_completion_order_that_hides_a_bug(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = _explore(capsys, "-n", "4", "--json", "--workdir", str(tmp_path), "--",
                               str(EXAMPLES / "waitany_bug.py"))
    assert code == 1
    (group,) = report["groups"]
    assert group["kind"] == "anys" and group["orderings"] == 2
    (diff,) = report["differences"]
    assert diff["what"] == ["rank 0 printed 'folded: 213' instead of 'folded: 123'"]
    assert "--anys 0:" in diff["replay"]


DUP_RACE = """
from mpi4py import MPI
comm = MPI.COMM_WORLD.Dup()
rank, size = comm.Get_rank(), comm.Get_size()
if rank == 0:
    print(sum(comm.recv(source=MPI.ANY_SOURCE, tag=1) for _ in range(size - 1)))
else:
    comm.send(rank, dest=0, tag=1)
"""


def test_races_on_other_communicators_are_counted_not_explored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "dup_race.py"
    program.write_text(DUP_RACE)
    code, report, _ = _explore(capsys, "-n", "3", "--json", "--", str(program))
    assert code == 0
    assert report["groups"] == [] and report["runs"] == 1
    assert report["unforceable"] >= 1


def test_replay_anys_reorders_completions(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    program = str(EXAMPLES / "waitany_bug.py")
    record = tmp_path / "rec"
    subprocess.run([sys.executable, "-m", "mpvis", "run", "-n", "4", "--record", str(record),
                    "--no-stream", "--", program], capture_output=True, timeout=120, check=False)
    code = main(["replay", str(record), "--anys", "0:3=1,5=0", "-n", "4", "--no-stream",
                 "--rank-output", str(tmp_path / "out"), "--", program])
    out = capsys.readouterr().out
    assert code == 0 and "run with the Waitany completions reordered" in out
    assert (tmp_path / "out" / "rank-0.out").read_text() == "folded: 213\n"
    assert main(["replay", str(record), "--anys", "0:4=1", "-n", "4", "--", program]) == 2
    assert "not a recorded Waitany of rank 0" in capsys.readouterr().err
    assert main(["replay", str(record), "--anys", "0:3=1", "--flip", "0:3", "--", program]) == 2
