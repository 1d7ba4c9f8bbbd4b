"""``mpvis explore -n N [--max-runs K] [--json] [--stop-at-first] -- prog [args]``.

Ordering exploration after Schaeli et al.: run the program once, recording
its racing deliveries (``mpvis run --record``, Netzer and Miller); take the
racing receives of the record (wildcard receives and Waitany completions
whose match could have been another message); split each rank's racing
deliveries into subgroups (:mod:`mpvis.analysis.delivery_orders`: process
partitioning, then subgroup partitioning, section 3); replay each subgroup's
other orders on their own, the rest of the run as recorded
(``mpvis replay --order``), section 5's subset of orders first; compare each
replay's outcome with the recording (:mod:`mpvis.analysis.run_outcome`) and
report every order that changes it, with the command that replays it.

It prints how many runs an exhaustive search of every combination would
need, how many the decomposition needs, and how many it made (the recording
included), with a line of progress per run on stderr.  ``--from-record DIR
--trace TRACE`` explores a run recorded before (the reference is then an
exact replay of it) and ``--receive RANK:SEQ`` only the subgroup of that
receive (what the window's *Explore its orderings* runs).  ``--max-runs`` and
``--time-limit`` bound the search; ``--stop-at-first`` ends it at the first
difference.  ``--json`` prints ``{"runs", "orderings_total",
"orderings_after_decomposition", "runs_needed", "complete", "groups",
"differences": [{"order", "replay", "what": [...], "trace"}], "unrealised",
"unforceable"}``.
Exit status: 1 when an order changes the outcome, 0 when none does, 2 on
error (the program cannot be recorded, bad options).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpvis.analysis.delivery_orders import (
    DeliveryGroup,
    candidate_orders,
    completion_groups,
    delivery_groups,
)
from mpvis.analysis.run_outcome import Outcome, differences
from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.cli.explore_runs import RunResult, record_run, replay_run
from mpvis.cli.program_args import after_dashdash, take_program
from mpvis.instrument.record_file import ReplayRecordError, read_record
from mpvis.tracefile.reader import TraceFileError, load_trace

__all__ = ["register"]

#: Seconds the first run (recording, or reference replay) may take by default.
FIRST_TIMEOUT = 120.0
#: Default bound of a replay: this many times the first run's duration, at least MIN_TIMEOUT.
REPLAY_FACTOR = 5.0
MIN_TIMEOUT = 15.0


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "explore",
        help=COMMANDS["explore"],
        description="Record a run, then replay the alternative delivery orders of its racing "
        "receives, subgroup by subgroup (Schaeli et al.), and report every order that changes "
        "the outcome (output, exit status, messages, final state).",
        usage="mpvis explore -n N [--max-runs K] [--json] [--stop-at-first] -- prog.py [args]",
    )
    p.add_argument("-n", "-np", type=int, dest="nprocs", metavar="N", required=True,
                   help="number of ranks")
    p.add_argument("--max-runs", type=int, default=64, metavar="K",
                   help="runs at most, the recording included (default %(default)s)")
    p.add_argument("--time-limit", type=float, default=600.0, metavar="S",
                   help="stop starting runs after S seconds (default %(default)s)")
    p.add_argument("--run-timeout", type=float, default=None, metavar="S",
                   help=f"stop a run after S seconds (default: the recording {FIRST_TIMEOUT:g} "
                   f"s, each replay {REPLAY_FACTOR:g} times the recording's duration, at least "
                   f"{MIN_TIMEOUT:g} s)")
    p.add_argument("--stop-at-first", action="store_true", help="stop at the first difference")
    p.add_argument("--workdir", type=Path, metavar="DIR",
                   help="keep the record, traces and outputs here (default: a temporary "
                   "directory, kept only when a difference is found)")
    p.add_argument("--from-record", type=Path, metavar="DIR",
                   help="explore a run recorded before (mpvis run --record DIR; give its "
                   "trace with --trace): the reference is an exact replay of it")
    p.add_argument("--trace", type=Path, metavar="TRACE", help="with --from-record: its trace")
    p.add_argument("--receive", metavar="RANK:SEQ",
                   help="only the subgroup of this racing receive")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, program=[])
    take_program(p, after_dashdash)


@dataclass
class Report:
    """What ``mpvis explore`` found (see the module docstring)."""

    groups: list[DeliveryGroup]
    runs: int = 1
    complete: bool = True
    stopped: str | None = None
    differences: list[dict[str, Any]] = field(default_factory=list)
    unrealised: list[dict[str, Any]] = field(default_factory=list)
    #: recorded races on communicators other than COMM_WORLD (the replay cannot force them)
    unforceable: int = 0

    @property
    def orderings_total(self) -> int:
        total = 1
        for g in self.groups:
            total *= g.orderings
        return total

    @property
    def orderings_after_decomposition(self) -> int:
        return sum(g.orderings for g in self.groups)

    @property
    def runs_needed(self) -> int:
        """The recording plus every subgroup's other orders, one subgroup at a time."""
        return 1 + sum(g.orderings - 1 for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "orderings_total": self.orderings_total,
            "orderings_after_decomposition": self.orderings_after_decomposition,
            "runs_needed": self.runs_needed,
            "complete": self.complete,
            "stopped": self.stopped,
            "groups": [{"rank": g.rank, "kind": g.kind,
                        "receives": [d.recv for d in g.deliveries],
                        "orderings": g.orderings} for g in self.groups],
            "differences": self.differences,
            "unrealised": self.unrealised,
            "unforceable": self.unforceable,
        }


def _progress(text: str) -> None:
    print(f"explore: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if not args.program:
        raise UserError("no program given: mpvis explore -n N -- prog.py [args]")
    if args.nprocs < 1 or args.max_runs < 1 or args.time_limit <= 0 or (
            args.run_timeout is not None and args.run_timeout <= 0):
        raise UserError("-n and --max-runs must be at least 1, the time bounds positive")
    if (args.from_record is None) != (args.trace is None):
        raise UserError("--from-record and --trace go together")
    keep = args.workdir is not None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mpvis-explore-"))
    workdir.mkdir(parents=True, exist_ok=True)
    args.record_dir = (args.from_record or workdir / "record").resolve()
    try:
        report, reference = _record(workdir, args)
    except UserError:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    if args.receive:
        report.groups = _only(report.groups, args.receive)
    _search(workdir, args, report, reference)
    if report.differences or keep:
        _progress(f"record, traces and outputs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        json.dump(report.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_report(report))
    return 1 if report.differences else 0


def _record(workdir: Path, args: argparse.Namespace) -> tuple[Report, Outcome]:
    """The reference run (recorded now, or an exact replay of ``--from-record``), its
    outcome and the subgroups of its racing deliveries."""
    if args.from_record is None:
        _progress(f"run 1: recording {shlex.join(args.program)} on {args.nprocs} ranks")
        rec = record_run(workdir, args.nprocs, args.program, args.run_timeout or FIRST_TIMEOUT)
        trace = workdir / "recorded.jsonl"
    else:
        _progress(f"run 1: replaying the record {args.from_record} as it was")
        rec = replay_run(args.record_dir, workdir / "reference", args.nprocs, args.program,
                         None, timeout=args.run_timeout or FIRST_TIMEOUT)
        trace = args.trace
    if rec.timed_out or rec.outcome is None:
        why = "it did not end in time" if rec.timed_out else _last_line(rec.errors)
        raise UserError(f"the program could not be recorded: {why}")
    if args.run_timeout is None:  # a replay that takes far longer than the recording waits
        args.run_timeout = max(MIN_TIMEOUT, REPLAY_FACTOR * rec.seconds)
    try:
        records = read_record(args.record_dir)
        model = load_trace(trace, parallel=False)
    except (ReplayRecordError, TraceFileError, OSError) as exc:
        raise UserError(f"the recording is unusable: {exc}") from None
    if len(records) != args.nprocs or model.nprocs != args.nprocs:
        raise UserError(f"the record has {len(records)} ranks, not {args.nprocs}")
    racing: dict[int, set[int]] = {}
    for r in records:
        for e in r.races:
            if e.comm == 0:
                racing.setdefault(r.rank, set()).add(e.recv)
                if e.prev is not None:
                    racing[r.rank].add(e.prev[0])
    groups = delivery_groups(model, racing)
    groups += completion_groups(model, {r.rank: r.anys for r in records if r.anys})
    report = Report(groups)
    report.unforceable = sum(1 for r in records for e in r.races if e.comm != 0)
    _progress(f"run 1 done ({rec.seconds:.1f} s): {len(groups)} subgroups of racing deliveries; "
              f"exhaustive search {report.orderings_total:,} runs, after decomposition "
              f"{report.runs_needed:,}")
    return report, rec.outcome


def _only(groups: list[DeliveryGroup], text: str) -> list[DeliveryGroup]:
    """The subgroup holding receive ``RANK:SEQ``; :class:`UserError` if none does."""
    rank, colon, seq = text.partition(":")
    if not (colon and rank.isdigit() and seq.isdigit()):
        raise UserError(f"--receive {text!r} is not RANK:SEQ")
    mine = [g for g in groups if g.rank == int(rank)
            and any(d.recv == int(seq) for d in g.deliveries)]
    if not mine:
        raise UserError(f"receive {text} is in no subgroup of racing deliveries "
                        "(not racing, or its subgroup admits a single order)")
    return mine


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "no trace was written"


def _search(workdir: Path, args: argparse.Namespace, report: Report, reference: Outcome) -> None:
    started = time.monotonic()
    budget = min(args.max_runs, report.runs_needed)
    plans = [candidate_orders(g) for g in report.groups]
    for gi, (group, orders) in enumerate(zip(report.groups, plans, strict=True)):
        for order in orders:
            if report.runs >= args.max_runs:
                report.complete, report.stopped = False, f"--max-runs {args.max_runs}"
                return
            if time.monotonic() - started > args.time_limit:
                report.complete, report.stopped = False, f"--time-limit {args.time_limit:g}"
                return
            spec = group.order_spec(order)
            report.runs += 1
            out = workdir / f"run-{report.runs}"
            result = replay_run(args.record_dir, out, args.nprocs, args.program, spec,
                                timeout=args.run_timeout, option=group.option)
            missed = _missed(group, order, result)
            if missed:
                report.unrealised.append({"order": spec, "why": [missed]})
                verdict = "not realised (the replay could not force it)"
            else:
                verdict = _judge(report, result, reference, spec, option=group.option,
                                 trace=out.with_suffix(".jsonl"), args=args)
            elapsed = time.monotonic() - started
            _progress(f"{_bar(report.runs, budget)} run {report.runs}/{budget}: subgroup "
                      f"{gi + 1} (rank {group.rank}) order {spec}: {verdict} "
                      f"({result.seconds:.1f} s; {elapsed:.0f}/{args.time_limit:g} s)")
            if verdict == "DIFFERENT" and args.stop_at_first:
                report.complete, report.stopped = False, "--stop-at-first"
                return


def _bar(done: int, total: int, width: int = 20) -> str:
    """``[#####---------------]``: ``done`` runs of ``total``."""
    full = width * min(done, total) // max(total, 1)
    return "[" + "#" * full + "-" * (width - full) + "]"


def _missed(group: DeliveryGroup, order: tuple[int, ...], result: RunResult) -> str | None:
    """For a completion order: the first Waitany that did not see the message meant."""
    m = result.model
    if group.kind != "anys" or m is None:
        return None
    for d, i in zip(group.deliveries, order, strict=True):
        want = group.deliveries[i].message
        got = m.partner(group.rank, d.recv) if d.recv < m.count(group.rank) else None
        if got != want:
            return (f"the Waitany at {group.rank}:{d.recv} completed {got} instead of {want}")
    return None


def _judge(report: Report, result: RunResult, reference: Outcome, spec: str, *,
           option: str, trace: Path, args: argparse.Namespace) -> str:
    command = shlex.join(["mpvis", "replay", str(args.record_dir), option, spec,
                          "-n", str(args.nprocs), "--", *args.program])
    if "diverged:" in result.report:
        why = [x.strip() for x in result.report.splitlines() if "diverged:" in x]
        report.unrealised.append({"order": spec, "why": why})
        return "not realised (the replay could not force it)"
    if result.outcome is None:
        what = ["no trace was written: " + _last_line(result.errors)]
    else:
        what = differences(reference, result.outcome)
    if not what:
        return "same outcome"
    report.differences.append({"order": spec, "replay": command, "what": what,
                               "trace": str(trace)})
    return "DIFFERENT"


def format_report(report: Report) -> str:
    """The readable report ``mpvis explore`` prints without ``--json``."""
    lines = [f"racing deliveries: {len(report.groups)} subgroups"]
    for g in report.groups:
        what = "Waitany calls at" if g.kind == "anys" else "receives"
        recvs = ", ".join(str(d.recv) for d in g.deliveries)
        lines.append(f"  rank {g.rank}, {what} {recvs}: {g.orderings:,} orders")
    lines.append(f"an exhaustive search needs {report.orderings_total:,} runs; after "
                 f"decomposition {report.runs_needed:,} (orderings summed over subgroups: "
                 f"{report.orderings_after_decomposition:,})")
    done = "every order tested" if report.complete else f"stopped by {report.stopped}"
    lines.append(f"runs made: {report.runs} (the recording included); {done}")
    if report.unforceable:
        lines.append(f"  {report.unforceable} recorded races on communicators other than "
                     "COMM_WORLD were not explored (the replay cannot force them)")
    for u in report.unrealised:
        lines.append(f"  order {u['order']} could not be forced: {'; '.join(u['why'])}")
    if not report.differences:
        lines.append("no order changed the outcome")
    for d in report.differences:
        lines.append(f"order {d['order']} changes the outcome:")
        lines += [f"    {w}" for w in d["what"]]
        lines.append(f"  replay it: {d['replay']}")
    return "\n".join(lines)
