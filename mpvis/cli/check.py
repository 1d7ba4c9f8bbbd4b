"""``mpvis check TRACE [--json] [--nonadjacent] [--all-conflicts]``.

Races (the 16-case classifier, and the exact test of Cypher and Leu) and
deadlocks of a saved trace.  Exit codes (spec): 0 no race and no deadlock,
1 some found, 2 unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpvis.analysis.exact_offline import all_conflicts
from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.report import exit_code, format_report
from mpvis.cli.errors import UserError
from mpvis.tracefile.reader import TraceFileError, iter_records, load_trace, read_header


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check", help="report the races and deadlocks of a saved trace",
        description="Check a saved trace for message races and deadlocks.")
    p.add_argument("trace", help="trace file (.jsonl, .jsonl.gz or .jsonl.zst)")
    p.add_argument("--json", action="store_true", help="print the JSON report of the spec")
    p.add_argument("--nonadjacent", action="store_true",
                   help="also pair every recv(-1,-1) with its non-adjacent later receives")
    p.add_argument("--all-conflicts", action="store_true",
                   help="list every conflicting (match, send) pair of the exact test "
                        "(an off-line pass over the whole trace)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        analyses = Analyses.for_header(read_header(args.trace))
        load_trace(args.trace, model=analyses.model)
        conflicts = None
        if args.all_conflicts:
            conflicts = all_conflicts((rec for _, rec in iter_records(args.trace)),
                                      analyses.model.nprocs)
    except TraceFileError as exc:
        raise UserError(f"invalid trace: {exc}") from None
    report = analyses.report(nonadjacent=args.nonadjacent, conflicts=conflicts)
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_report(report, source=args.trace))
    return exit_code(report)
