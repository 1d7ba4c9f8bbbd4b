"""One run of ``mpvis explore``: a recording or a replay in an order, time-bounded.

Each run is an ``mpvis run --record`` or ``mpvis replay --order`` child
process (the same commands a user types), headless, writing its trace to a
file and each rank's standard output to its own file (MPICH's
``-outfile-pattern``), so that the program's output is never mixed with
mpvis's report and ranks' lines never interleave.  A run that outlives its
time bound gets SIGTERM, which ``mpvis run`` answers by stopping the ranks
and keeping the trace; SIGKILL follows if it does not end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mpvis.analysis.run_outcome import Outcome, trace_outcome
from mpvis.cli.replay import rank_output_options
from mpvis.model.manager import ModelManager
from mpvis.tracefile.reader import TraceFileError, load_trace

__all__ = ["RunResult", "record_run", "replay_run"]

_STATUS = re.compile(r"mpiexec exited with status (\d+)")
#: Seconds a child gets to stop its ranks after SIGTERM.
STOP_GRACE = 15.0


@dataclass
class RunResult:
    """A finished run: its outcome (``None`` if no trace was written) and mpvis's words."""

    outcome: Outcome | None
    model: ModelManager | None  # the run's trace
    report: str  # what mpvis printed (stdout), not the program's output
    errors: str  # mpvis's stderr
    seconds: float
    timed_out: bool


def _mpvis(*args: str) -> list[str]:
    return [sys.executable, "-m", "mpvis", *args]


def record_run(workdir: Path, nprocs: int, program: list[str], timeout: float) -> RunResult:
    """``mpvis run --record workdir/record`` of ``program``: the reference run."""
    out = workdir / "recorded"
    cmd = _mpvis("run", "-n", str(nprocs), "--record", str(workdir / "record"), "--headless",
                 "--out", str(out.with_suffix(".jsonl")), *rank_output_options(out),
                 "--", *program)
    return _run(cmd, out, timeout)


def replay_run(record: Path, out: Path, nprocs: int, program: list[str], order: str | None,
               *, timeout: float, option: str = "--order") -> RunResult:
    """``mpvis replay RECORD [OPTION ORDER]`` (``--order`` or ``--anys``): trace
    ``out.jsonl``, outputs in ``out/``."""
    chosen = [] if order is None else [option, order]
    cmd = _mpvis("replay", str(record), *chosen, "-n", str(nprocs),
                 "--headless", "--out", str(out.with_suffix(".jsonl")),
                 "--rank-output", str(out), "--", *program)
    return _run(cmd, out, timeout)


def _run(cmd: list[str], out: Path, timeout: float) -> RunResult:
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    timed_out = False
    try:
        report, errors = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.send_signal(signal.SIGTERM)
        try:
            report, errors = proc.communicate(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            report, errors = proc.communicate()
    seconds = time.monotonic() - start
    code: int | None = None
    if not timed_out:
        found = _STATUS.findall(errors)
        code = int(found[-1]) if found else 0
    stdout = {}
    for f in sorted(out.glob("rank-*.out")) if out.is_dir() else ():
        stdout[int(f.stem.split("-")[1])] = f.read_text(encoding="utf-8", errors="replace")
    outcome = model = None
    trace = out.with_suffix(".jsonl")
    if trace.exists():
        try:
            model = load_trace(trace, parallel=False)
            outcome = trace_outcome(model, code, stdout)
        except (TraceFileError, OSError):
            outcome = model = None
    return RunResult(outcome, model, report, errors, seconds, timed_out)
