"""``mpvis check TRACE [--json] [--nonadjacent]``: races and deadlocks of a saved trace.

Exit codes (spec): 0 no race and no deadlock, 1 some found, 2 unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpvis.analysis.report import build_report, exit_code, format_report
from mpvis.cli.errors import UserError
from mpvis.tracefile.reader import TraceFileError, load_trace


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check", help="report the races and deadlocks of a saved trace",
        description="Check a saved trace for message races and deadlocks.")
    p.add_argument("trace", help="trace file (.jsonl, .jsonl.gz or .jsonl.zst)")
    p.add_argument("--json", action="store_true", help="print the JSON report of the spec")
    p.add_argument("--nonadjacent", action="store_true",
                   help="also pair every recv(-1,-1) with its non-adjacent later receives")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        m = load_trace(args.trace)
    except TraceFileError as exc:
        raise UserError(f"invalid trace: {exc}") from None
    report = build_report(m, nonadjacent=args.nonadjacent)
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_report(report, source=args.trace))
    return exit_code(report)
