"""The C and C++ programs of ``examples/c`` under ``mpvis run`` with real mpiexec.

They are built with ``examples/c/build.sh`` and the pip MPICH's ``mpicc`` /
``mpicxx`` (skipped, with the reason, when there is no MPI compiler or it
cannot build a program here), run as the issue's judge runs a program
(``mpvis run -n N --stop-on-deadlock --out T -- ./prog``, through
:func:`benchmarks.c_suite.run_one`, bounded in time), and each report must
say what the program's header comment promises. A representative subset: one
program per kind of finding, and two correct ones (C and C++), 2 ranks except
the race (it needs two senders).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.c_suite import Program, SuiteError, find_compiler, parse_label, run_one
from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(240),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "c"
#: Seconds one run may take (the deadlocked ones are stopped within seconds).
RUN_TIMEOUT = 60.0
Report = dict[str, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every example built into a temporary directory by the build script."""
    try:
        mpicc, mpicxx = find_compiler("mpicc"), find_compiler("mpicxx")
    except SuiteError as exc:
        pytest.skip(str(exc))
    out = tmp_path_factory.mktemp("c-examples")
    probe = out / "probe.c"
    probe.write_text("#include <mpi.h>\nint main(void) { return MPI_VERSION > 0 ? 0 : 1; }\n")
    check = subprocess.run([mpicc, "-o", str(out / "probe"), str(probe)],
                           capture_output=True, text=True, check=False)
    if check.returncode != 0:
        pytest.skip(f"{mpicc} cannot build a C program here (no C compiler?): "
                    f"{check.stderr.strip()[-300:]}")
    env = dict(os.environ, MPICC=mpicc, MPICXX=mpicxx)
    subprocess.run(["bash", str(EXAMPLES / "build.sh"), str(out / "bin")], env=env,
                   check=True, capture_output=True, text=True)
    return out


def example(name: str) -> Program:
    source = next(p for p in EXAMPLES.iterdir() if p.stem == name and p.suffix in (".c", ".cpp"))
    return parse_label(source)


def report_of(built: Path, name: str, nprocs: int) -> Report:
    prog = example(name)
    prog.nprocs = nprocs
    outcome, report = run_one(prog, built / "bin" / name, built, RUN_TIMEOUT, stuck_after=1.0)
    assert report is not None, f"{name}: {outcome.problem}"
    assert outcome.problem is None, f"{name}: {outcome.problem}"
    return report


def shown_races(report: Report) -> list[dict[str, Any]]:
    return [r for r in report["races"] if r["verdict"] in ("legitimate", "unverified")]


def kinds(report: Report, key: str) -> list[str]:
    return [str(e["kind"]) for e in report.get(key, [])]


def race_on_rank0(r: Report) -> None:
    races = shown_races(r)
    assert races and all(e["rank"] == 0 for e in races), r["races"]
    assert any(e["method"] == "classifier" and e["verdict"] == "legitimate" for e in races)
    assert r["deadlocks"] == [] and r.get("errors", []) == []


def proven_p2p_deadlock(r: Report) -> None:
    assert [d for d in r["deadlocks"] if d["kind"] == "p2p" and not d.get("potential")
            and sorted(d["ranks"]) == [0, 1]], r["deadlocks"]
    assert shown_races(r) == []


def potential_send_cycle(r: Report) -> None:
    assert all(s["status"] == "finished" for s in r["ranks"]), r["ranks"]
    assert [d for d in r["deadlocks"] if d["kind"] == "p2p" and d.get("potential") is True
            and sorted(d["ranks"]) == [0, 1]], r["deadlocks"]


def error_of(kind: str) -> Callable[[Report], None]:
    def check(r: Report) -> None:
        assert kind in kinds(r, "errors"), r.get("errors")
        assert shown_races(r) == []
    return check


def clean(r: Report) -> None:
    assert shown_races(r) == [] and r["deadlocks"] == [] and r.get("errors", []) == [], r
    assert all(s["status"] == "finished" for s in r["ranks"]), r["ranks"]


CASES: list[tuple[str, int, Callable[[Report], None]]] = [
    ("race_any_source", 3, race_on_rank0),
    ("deadlock_recv_recv", 2, proven_p2p_deadlock),
    ("send_cycle_small", 2, potential_send_cycle),
    ("coll_root_mismatch", 2, error_of("collective_mismatch")),
    ("request_leak", 2, error_of("request_leak")),
    ("stencil_nonblocking", 2, clean),
    ("ring", 2, clean),
]


@pytest.mark.parametrize(("name", "nprocs", "expect"), CASES, ids=[c[0] for c in CASES])
def test_example_report(built: Path, name: str, nprocs: int,
                        expect: Callable[[Report], None]) -> None:
    expect(report_of(built, name, nprocs))


def test_every_example_is_labelled_and_built(built: Path) -> None:
    """Each source states its label and rank count, and the build script built it."""
    sources = [p for p in EXAMPLES.iterdir() if p.suffix in (".c", ".cpp")]
    assert len(sources) >= 16
    for src in sources:
        parse_label(src)
        assert (built / "bin" / src.stem).is_file(), src.name


def test_build_script_usage() -> None:
    """Without an output directory the build script says how to call it."""
    proc = subprocess.run(["bash", str(EXAMPLES / "build.sh")], capture_output=True, text=True,
                          check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "usage" in proc.stderr
