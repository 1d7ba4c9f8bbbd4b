"""POEG counts on held-out real traces against the independent oracle.

Programs that played no part in building the POEG code are run under real
``mpiexec``, through both trace libraries (the mpi4py one and the C PMPI one,
whose records all carry ``call``).  Each trace's POEG (:func:`poeg_of`) must
equal the oracle's (``tests/analysis/poeg_oracle.py``: networkx, calls read
from the records), and its counts, the whole run's and each rank's, must be
those of a plain DP over every downset (no decomposition).  Figure 10's
program, traced on 3 to 6 ranks for 1 to 3 iterations, counts as the graph
built from the paper's pseudo-code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.analysis.poeg import poeg_of
from mpvis.analysis.poeg_decompose import decompose
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from tests.analysis.poeg_oracle import downset_count, fig10_order, trace_order
from tests.analysis.test_poeg import check_counts
from tests.instrument.test_trace_mpi import EXAMPLES, MPIEXEC, run_traced, validate

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _check_against_oracle(lines: list[Record]) -> None:
    header, records = lines[0], lines[1:]
    model = ModelManager(header)
    model.add_batch(records)
    model.finish()
    poeg = poeg_of(model)
    assert set(poeg.pairing) == {"call"}
    keys, preds = trace_order(header["nprocs"], records, calls=True)
    assert list(poeg.nodes) == keys
    assert list(poeg.preds) == preds
    check_counts(poeg, preds, downset_count)


@pytest.mark.parametrize(
    ("program", "nprocs", "args"),
    [
        ("neighbor_exchange.py", 3, ("1",)),
        ("neighbor_exchange.py", 4, ("1",)),
        ("nonblocking_race.py", 3, ()),
        ("order_harmless.py", 4, ()),
        ("false_race.py", 3, ()),
        ("ring.py", 3, ()),
    ],
)
def test_mpi4py_traces(tmp_path: Path, program: str, nprocs: int, args: tuple[str, ...]) -> None:
    path = EXAMPLES / program
    proc, lines = run_traced(path, nprocs, tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    validate(lines, path, causal_times=False)
    _check_against_oracle(lines)


@pytest.mark.parametrize("nprocs", [3, 4, 5, 6])
@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_figure_10_traced_matches_the_papers_graph(tmp_path: Path, nprocs: int,
                                                   iterations: int) -> None:
    """Figure 10's program traced for real: its count is that of the graph built
    from the paper's pseudo-code (no trace, no model), 3 to 6 ranks, 1 to 3 iterations."""
    path = EXAMPLES / "neighbor_exchange.py"
    proc, lines = run_traced(path, nprocs, tmp_path, str(iterations))
    assert proc.returncode == 0, proc.stderr
    model = ModelManager(lines[0])
    model.add_batch(lines[1:])
    model.finish()
    poeg = poeg_of(model)
    _, preds = fig10_order(nprocs, iterations)
    assert len(poeg.nodes) == len(preds)
    assert decompose(poeg).orderings == downset_count(preds)


@pytest.mark.parametrize(
    ("source", "nprocs"),
    [("stencil_sendrecv.c", 4), ("stencil_nonblocking.c", 4), ("master_worker.c", 3)],
)
def test_c_traces(tmp_path: Path, source: str, nprocs: int) -> None:
    build = subprocess.run(["bash", str(EXAMPLES / "c" / "build.sh"), str(tmp_path),
                            str(EXAMPLES / "c" / source)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert build.returncode == 0, build.stderr
    exe = tmp_path / Path(source).stem
    trace = tmp_path / "trace.jsonl"
    run = subprocess.run(
        ["timeout", "-k", "5", "120", sys.executable, "-m", "mpvis", "run", "-n", str(nprocs),
         "--out", str(trace), "--", str(exe)],
        capture_output=True, text=True, timeout=150, check=False, cwd=tmp_path,
        env={"PATH": f"{MPIEXEC.parent}:/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert run.returncode in (0, 1), run.stderr
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert all("call" in r for r in lines[1:] if r["kind"] not in ("state",))
    _check_against_oracle(lines)
