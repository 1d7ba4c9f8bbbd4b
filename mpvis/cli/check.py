"""``mpvis check TRACE [--json] [--summary] [--suppress FILE] [--nonadjacent] [--all-conflicts]``.

Races (the 16-case classifier, and the exact test of Cypher and Leu) and
deadlocks of a saved trace.  Races are also grouped by site pair (the JSON's
``groups``; ``--summary`` prints only the groups).  Races marked *intended*
in the window (the program's settings file) or listed in ``--suppress FILE``
are flagged ``suppressed`` and neither shown nor counted.  Exit codes (spec):
0 no unsuppressed race and no deadlock, 1 some found, 2 unreadable input or
bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mpvis.analysis.race_suppress import (
    SuppressFileError,
    load_intended,
    mark_suppressed,
    settings_path,
)
from mpvis.analysis.report import exit_code, iter_report_json, legend_examples, report_lines
from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.model.heap import trim_freed_memory
from mpvis.scene.vocabulary import legend_lines
from mpvis.tracefile import check_cache
from mpvis.tracefile.reader import TraceFileError, iter_records, load_trace, read_header

if TYPE_CHECKING:
    from mpvis.analysis.pipeline import Analyses


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check", help=COMMANDS["check"],
        description="Check a saved trace for message races and deadlocks.")
    p.add_argument("trace", help="trace file (.jsonl, .jsonl.gz or .jsonl.zst)")
    p.add_argument("--json", action="store_true", help="print the JSON report of the spec")
    p.add_argument("--summary", action="store_true",
                   help="print the races grouped by site pair, not each race")
    p.add_argument("--suppress", type=Path, action="append", default=[], metavar="FILE",
                   help="races to treat as intended: a window settings file (JSON with "
                        "'intended') or one race identity per line; repeatable")
    p.add_argument("--no-settings", action="store_true",
                   help="ignore the races marked intended in the window for this program")
    p.add_argument("--nonadjacent", action="store_true",
                   help="also pair every recv(-1,-1) with its non-adjacent later receives")
    p.add_argument("--all-conflicts", action="store_true",
                   help="list every conflicting (match, send) pair of the exact test "
                        "(an off-line pass over the whole trace)")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the cache of what a check of this trace "
                        "found (~/.cache/mpvis/checks; traces of 4 MB and more)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    options: dict[str, object] = {"nonadjacent": args.nonadjacent,
                                  "all_conflicts": args.all_conflicts}
    cached = None if args.no_cache else check_cache.load(args.trace, options)
    if cached is None:
        report, groups = _analyse(args)
        _let_model_go()
        if not args.no_cache:
            check_cache.save(args.trace, options, report, groups)
    else:
        report, groups = cached
    try:
        header = read_header(args.trace)
    except TraceFileError as exc:
        raise UserError(f"invalid trace: {exc}") from None
    intended = _intended(args, header)
    if intended:  # none: nothing to mark (a pass over every entry on 1M events)
        mark_suppressed(report["races"], intended)
    check_cache.apply_marks(report["races"], groups)
    report["groups"] = groups
    _print(report, args)
    return exit_code(report)


def _analyse(args: argparse.Namespace) -> check_cache.Cached:
    """The report of the trace before suppression marks (its races a table, with
    each row's site-pair group) and the groups (unmarked:
    :func:`check_cache.apply_marks` counts the marks).  The analyses are
    imported here: a check served by the cache runs none (issue 16)."""
    from mpvis.analysis.exact_offline import all_conflicts
    from mpvis.analysis.pipeline import Analyses
    from mpvis.analysis.race_groups import group_table, model_event_sites, program_dir

    analyses: Analyses | None = None
    try:
        analyses = Analyses.for_header(read_header(args.trace))
        load_trace(args.trace, model=analyses.model)
        conflicts = None
        if args.all_conflicts:
            conflicts = all_conflicts((rec for _, rec in iter_records(args.trace)),
                                      analyses.model.nprocs)
    except TraceFileError as exc:
        if analyses is None or not (exc.truncated and exc.model is analyses.model):
            raise UserError(f"invalid trace: {exc}") from None
        # An interrupted run's compressed trace: report what was read, then fail.
        _print(analyses.report(nonadjacent=args.nonadjacent), args)
        raise UserError(f"incomplete trace, the report above covers the events before "
                        f"the cut only: {exc}") from None
    report = analyses.report(nonadjacent=args.nonadjacent, conflicts=conflicts, columns=True,
                             release=True)
    groups = group_table(report["races"], event_sites=model_event_sites(analyses.model),
                         base=program_dir(read_header(args.trace)))
    return report, groups


def _let_model_go() -> None:
    """Let the model go once its report is made: it is held in reference cycles
    (the model's parts and analyzers point at each other), which only the cycle
    collector frees, and the heap's free space is returned, so that what the
    analyses freed does not stay resident while the report is printed (the text
    report's peak on the 1M-event trace)."""
    import gc

    gc.collect()
    trim_freed_memory()


def _print(report: Any, args: argparse.Namespace) -> None:
    if args.json:  # streamed: a big report's entries a chunk at a time
        binary = getattr(sys.stdout, "buffer", None)  # a redirected stdout may be text only
        sys.stdout.flush()
        for data in iter_report_json(report):
            if binary is None:
                sys.stdout.write(data.decode())
            else:
                binary.write(data)
        if binary is not None:
            binary.flush()
    else:
        _write_lines(report_lines(report, source=args.trace, summary=args.summary))
        legend = legend_lines(legend_examples(report))
        if legend:
            print("\n".join(legend))


def _write_lines(lines: Iterable[str], batch: int = 1 << 20) -> None:
    """Print ``lines`` about ``batch`` characters at a time (``print`` of each,
    without the cost; a line may be many joined by newlines)."""
    part: list[str] = []
    size = 0
    for line in lines:
        part.append(line)
        size += len(line)
        if size >= batch:
            sys.stdout.write("\n".join(part) + "\n")
            part.clear()
            size = 0
    if part:
        sys.stdout.write("\n".join(part) + "\n")


def _intended(args: argparse.Namespace, header: dict[str, Any]) -> set[str]:
    """Race identities marked intended: the window's settings for this program
    (unless ``--no-settings``) and every ``--suppress`` file."""
    out: set[str] = set()
    own = settings_path(header)
    if not args.no_settings and own.is_file():
        try:
            out |= load_intended(own)
        except SuppressFileError as exc:
            print(f"mpvis: warning: ignoring the window's settings: {exc}", file=sys.stderr)
    for path in args.suppress:
        try:
            out |= load_intended(path)
        except SuppressFileError as exc:
            raise UserError(f"--suppress: {exc}") from None
    return out

