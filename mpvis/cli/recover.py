"""``mpvis recover PATH [--spill-dir DIR]``: merge ranks' spill files into a trace.

Ranks whose collector or central process died write what it may not have
received to spill files (``spill-<run>-rank-<r>.jsonl``, see
:mod:`mpvis.tracefile.spill`).  PATH is a trace file, or a directory: then
every trace in it whose header names a run with spill files there.  Exit
codes: 0 every spilled record is in the trace now, 1 some could not be merged
(records were lost between the trace and a spill), 2 unreadable input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.collector.symbolize import SiteSymbolizer
from mpvis.tracefile.reader import TraceFileError, read_header
from mpvis.tracefile.spill import merge_spills, spill_files

_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "recover", help=COMMANDS["recover"],
        description="Merge the spill files that ranks write when their collector or "
                    "central process dies into the run's trace.")
    p.add_argument("path", type=Path, help="the trace, or a directory of traces")
    p.add_argument("--spill-dir", type=Path, default=None,
                   help="where the spill files are (default: beside the trace)")
    p.set_defaults(func=run)


def _traces(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir()
                      if p.name.endswith(_SUFFIXES) and not p.name.startswith("spill-"))
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    return [path]


def run(args: argparse.Namespace) -> int:
    code, merged = 0, 0
    symbolize = SiteSymbolizer()  # compiled programs' spills name sites raw
    for trace in _traces(args.path):
        try:
            header = read_header(trace)
            run_id = header.get("run") if isinstance(header.get("run"), str) else None
            if args.path.is_dir() and run_id is None:
                continue
            spills = spill_files(args.spill_dir or trace.parent, run_id)
            if not spills:
                continue
            result = merge_spills(trace, spills, symbolize.name_record)
        except TraceFileError as exc:
            raise UserError(f"cannot recover: {exc}") from None
        merged += 1
        print(f"{trace}: {result.summary()}")
        if result.unmergeable:
            code = 1
    if not merged:
        raise UserError(f"no spill files for {args.path}")
    return code
