"""Precision and recall of mpvis on a labelled suite of C MPI programs.

Usage: ``python benchmarks/c_suite.py [--suite DIR] [--only SUBSTR ...]
[--timeout 60] [--stuck-after S] [--keep DIR] [--json FILE] [--mpicc PATH]``

Each program of the suite (default ``tests/c_suite``; ``examples/c`` works too)
states its label and its rank count in a comment::

    /* mpvis-label: race|deadlock|collective_mismatch|request_lifecycle|correct ; nprocs: 3 */

The script builds every program with the MPI compiler of this Python's
environment (the pip MPICH's ``mpicc``/``mpicxx``, else the first on PATH)
into a temporary directory, runs each one as the issue's judge does::

    mpvis run -n N --stop-on-deadlock --headless --out T -- ./prog
    mpvis check T --json

(each run bounded by ``--timeout`` seconds: then it is interrupted, the trace
kept, and any rank left behind killed by its pid), and reads the verdict from
the report alone:

* a race with verdict ``legitimate`` or ``unverified`` -> ``race``;
* a deadlock of kind ``collective`` -> ``collective_mismatch``, of any other
  kind (``p2p``, ``lock``, ``mixed``; proven or ``potential``) -> ``deadlock``;
* an error of kind ``collective_mismatch`` -> ``collective_mismatch``,
  ``request_leak`` -> ``request_lifecycle``, ``lost_message`` -> ``deadlock``
  (a send nobody receives is a deadlock of a synchronous run), any other kind
  -> its own name.

A program "is found" when the report names any bug. Printed: detection
precision and recall over all programs (a correct program with a finding is
a false alarm; a buggy one without is a miss), precision and recall per
category (a category counts as found when the report names it), and the
table of misses, wrong categories and false alarms. Programs that could not
be built or whose trace is missing or unreadable are listed and count as
"nothing found" (never silently dropped).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CATEGORIES = ("race", "deadlock", "collective_mismatch", "request_lifecycle")
LABELS = (*CATEGORIES, "correct")
SHOWN_VERDICTS = ("legitimate", "unverified")
ERROR_CATEGORY = {
    "collective_mismatch": "collective_mismatch",
    "request_leak": "request_lifecycle",
    "lost_message": "deadlock",
}
_LABEL_RE = re.compile(r"mpvis-label:\s*([a-z_]+)\s*;\s*nprocs:\s*(\d+)")
#: Seconds given to an interrupted ``mpvis run`` to write its trace.
INTERRUPT_GRACE = 15.0


class SuiteError(Exception):
    """A suite that cannot be run (no compiler, a program without its label)."""


@dataclass
class Program:
    """One labelled source file."""

    source: Path
    label: str
    nprocs: int

    @property
    def name(self) -> str:
        return self.source.stem


@dataclass
class Outcome:
    """What mpvis said about one program."""

    name: str
    label: str
    nprocs: int
    found: list[str] = field(default_factory=list)
    problem: str | None = None  # build failure, timeout, missing/unreadable trace
    run_exit: int | None = None
    seconds: float = 0.0
    summary: str = ""


def parse_label(source: Path) -> Program:
    """The program's label and rank count from its ``mpvis-label`` comment."""
    m = _LABEL_RE.search(source.read_text(errors="replace")[:4000])
    if m is None:
        raise SuiteError(f"{source}: no 'mpvis-label: LABEL ; nprocs: N' comment")
    label, nprocs = m.group(1), int(m.group(2))
    if label not in LABELS:
        raise SuiteError(f"{source}: label {label!r} is not one of {', '.join(LABELS)}")
    if nprocs < 1:
        raise SuiteError(f"{source}: nprocs must be at least 1")
    return Program(source, label, nprocs)


def discover(suite: Path, only: Sequence[str]) -> list[Program]:
    """The labelled programs (``*.c``, ``*.cpp``) of ``suite`` whose name contains
    one of ``only`` (all when empty), sorted by name."""
    if not suite.is_dir():
        raise SuiteError(f"no suite directory {suite}")
    sources = sorted(p for p in suite.iterdir() if p.suffix in (".c", ".cpp"))
    sources = [p for p in sources if not only or any(s in p.stem for s in only)]
    if not sources:
        raise SuiteError(f"no C or C++ program in {suite}" + (f" matching {only}" if only else ""))
    return [parse_label(p) for p in sources]


def find_compiler(name: str, explicit: str | None = None) -> str:
    """``explicit``, else ``name`` beside this Python (the pip MPICH), else on PATH."""
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise SuiteError(f"no {name}: install the mpich wheel into this environment "
                         "or put an MPI compiler on PATH")
    return found


def build(program: Program, outdir: Path, mpicc: str, mpicxx: str) -> tuple[Path, str | None]:
    """Compile ``program`` with ``-g``; the executable and the compiler's error, if any."""
    exe = outdir / program.name
    compiler = mpicxx if program.source.suffix == ".cpp" else mpicc
    proc = subprocess.run([compiler, "-g", "-O0", "-o", str(exe), str(program.source)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return exe, f"build failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}"
    return exe, None


def categories(report: dict[str, Any]) -> list[str]:
    """The bug categories a ``mpvis check --json`` report names (module docstring)."""
    found: set[str] = set()
    if any(r.get("verdict") in SHOWN_VERDICTS for r in report.get("races", [])):
        found.add("race")
    for d in report.get("deadlocks", []):
        found.add("collective_mismatch" if d.get("kind") == "collective" else "deadlock")
    for e in report.get("errors", []):
        kind = str(e.get("kind", "error"))
        found.add(ERROR_CATEGORY.get(kind, kind))
    return sorted(found)


def _leftover_ranks(exe_dir: Path) -> list[int]:
    """Pids of processes running an executable of ``exe_dir`` (ranks we started)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            target = os.readlink(entry / "exe")
        except OSError:
            continue
        if Path(target).parent == exe_dir:
            pids.append(int(entry.name))
    return pids


def _kill_leftovers(exe_dir: Path) -> int:
    killed = 0
    for pid in _leftover_ranks(exe_dir):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


def run_one(program: Program, exe: Path, workdir: Path, timeout: float,
            stuck_after: float | None) -> tuple[Outcome, dict[str, Any] | None]:
    """Run ``exe`` under ``mpvis run`` then ``mpvis check --json``: the outcome,
    and the report (``None`` when there is no readable trace)."""
    out = Outcome(program.name, program.label, program.nprocs)
    trace = workdir / f"{program.name}.jsonl"
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(workdir / "no-window.json"))
    cmd = [sys.executable, "-m", "mpvis", "run", "-n", str(program.nprocs),
           "--stop-on-deadlock", "--headless", "--out", str(trace)]
    if stuck_after is not None:
        cmd += ["--stuck-after", str(stuck_after)]
    cmd += ["--", str(exe)]
    start = time.monotonic()
    with open(workdir / f"{program.name}.run.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out.run_exit = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            out.problem = f"timeout after {timeout:g} s"
            os.killpg(proc.pid, signal.SIGINT)  # like Ctrl-C: the trace is kept
            try:
                out.run_exit = proc.wait(timeout=INTERRUPT_GRACE)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out.run_exit = proc.wait()
    if _kill_leftovers(exe.parent.resolve()):
        out.problem = (out.problem + "; " if out.problem else "") + "ranks left behind, killed"
    out.seconds = time.monotonic() - start
    if not trace.is_file():
        out.problem = (out.problem + "; " if out.problem else "") + "no trace written"
        return out, None
    check = subprocess.run([sys.executable, "-m", "mpvis", "check", str(trace), "--json"],
                           capture_output=True, text=True, env=env, check=False)
    if check.returncode not in (0, 1):
        err = check.stderr.strip().splitlines()[-1:] or [f"exit {check.returncode}"]
        out.problem = (out.problem + "; " if out.problem else "") + f"check failed: {err[0]}"
        return out, None
    try:
        report = json.loads(check.stdout)
    except ValueError:
        out.problem = (out.problem + "; " if out.problem else "") + "check printed no JSON report"
        return out, None
    out.found = categories(report)
    out.summary = (f"{len(report.get('races', []))} race entries, "
                   f"{len(report.get('deadlocks', []))} deadlocks, "
                   f"{len(report.get('errors', []))} errors")
    return out, report


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def scores(outcomes: Iterable[Outcome]) -> dict[str, dict[str, Any]]:
    """Detection scores over all programs (``overall``), per category, and the
    share of buggy programs reported in their own category (``category_hit``)."""
    outs = list(outcomes)
    buggy = [o for o in outs if o.label != "correct"]
    tp = sum(1 for o in buggy if o.found)
    fp = sum(1 for o in outs if o.label == "correct" and o.found)
    fn = len(buggy) - tp
    res: dict[str, dict[str, Any]] = {
        "overall": {"tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp),
                    "recall": _ratio(tp, tp + fn)},
        "category_hit": {"hits": sum(1 for o in buggy if o.label in o.found),
                         "of": len(buggy),
                         "rate": _ratio(sum(1 for o in buggy if o.label in o.found),
                                        len(buggy))},
    }
    for c in CATEGORIES:
        ctp = sum(1 for o in outs if o.label == c and c in o.found)
        cfn = sum(1 for o in outs if o.label == c and c not in o.found)
        cfp = sum(1 for o in outs if o.label != c and c in o.found)
        res[c] = {"tp": ctp, "fp": cfp, "fn": cfn, "precision": _ratio(ctp, ctp + cfp),
                  "recall": _ratio(ctp, ctp + cfn)}
    return res


def format_results(outcomes: Sequence[Outcome], sc: dict[str, dict[str, Any]]) -> str:
    """The printed summary: scores, then misses, wrong categories, false alarms, problems."""
    lines = [f"{len(outcomes)} programs: "
             + ", ".join(f"{sum(1 for o in outcomes if o.label == lab)} {lab}" for lab in LABELS)]
    o = sc["overall"]
    lines.append(f"bug found (any category): precision {_fmt(o['precision'])}  "
                 f"recall {_fmt(o['recall'])}  (tp {o['tp']}, fp {o['fp']}, fn {o['fn']})")
    h = sc["category_hit"]
    lines.append(f"buggy programs reported in their own category: {h['hits']}/{h['of']}"
                 f" ({_fmt(h['rate'])})")
    lines.append(f"{'category':<22}{'precision':>10}{'recall':>8}{'tp':>5}{'fp':>5}{'fn':>5}")
    for c in CATEGORIES:
        s = sc[c]
        lines.append(f"{c:<22}{_fmt(s['precision']):>10}{_fmt(s['recall']):>8}"
                     f"{s['tp']:>5}{s['fp']:>5}{s['fn']:>5}")

    def table(title: str, rows: list[Outcome]) -> None:
        lines.append(f"{title}: {len(rows)}")
        for r in rows:
            found = ", ".join(r.found) or "nothing"
            extra = f"  [{r.problem}]" if r.problem else ""
            lines.append(f"  {r.name:<34} n={r.nprocs} label {r.label:<20} found {found}{extra}")

    table("misses (bug, nothing found)", [r for r in outcomes
                                          if r.label != "correct" and not r.found])
    table("wrong category (bug found, not its own)",
          [r for r in outcomes if r.label != "correct" and r.found and r.label not in r.found])
    table("false alarms (correct program, something found)",
          [r for r in outcomes if r.label == "correct" and r.found])
    table("runs with problems", [r for r in outcomes if r.problem])
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=ROOT / "tests" / "c_suite")
    ap.add_argument("--only", nargs="*", default=[], metavar="SUBSTR",
                    help="run only the programs whose name contains one of these")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds per program before the run is interrupted (default 60)")
    ap.add_argument("--stuck-after", type=float, default=None,
                    help="passed to mpvis run (default: mpvis run's own)")
    ap.add_argument("--keep", type=Path, help="build and run here instead of a temporary "
                    "directory, and keep the executables, traces and logs")
    ap.add_argument("--json", type=Path, help="also write the outcomes and scores here")
    ap.add_argument("--mpicc", help="C MPI compiler (default: the venv's mpicc, else PATH)")
    ap.add_argument("--mpicxx", help="C++ MPI compiler (default: the venv's mpicxx, else PATH)")
    args = ap.parse_args(argv)
    try:
        programs = discover(args.suite, args.only)
        mpicc = find_compiler("mpicc", args.mpicc)
        mpicxx = find_compiler("mpicxx", args.mpicxx)
    except SuiteError as exc:
        print(f"c_suite: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mpvis-c-suite-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        bindir = work / "bin"
        bindir.mkdir(parents=True, exist_ok=True)
        outcomes = []
        for i, prog in enumerate(programs, 1):
            exe, problem = build(prog, bindir, mpicc, mpicxx)
            if problem:
                out = Outcome(prog.name, prog.label, prog.nprocs, problem=problem)
            else:
                out, _ = run_one(prog, exe, work, args.timeout, args.stuck_after)
            outcomes.append(out)
            print(f"[{i}/{len(programs)}] {prog.name}: label {prog.label}, found "
                  f"{', '.join(out.found) or 'nothing'} ({out.seconds:.1f} s)"
                  + (f" [{out.problem}]" if out.problem else ""), flush=True)
    sc = scores(outcomes)
    print(format_results(outcomes, sc))
    if args.json:
        args.json.write_text(json.dumps({"outcomes": [asdict(o) for o in outcomes],
                                         "scores": sc}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
