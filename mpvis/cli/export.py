"""``mpvis export TRACE --format otf2|perfetto|csv -o OUT``.

Writes a trace (JSON Lines or an OTF2 archive) for other tools: an OTF2
archive for Vampir and Score-P's tools (read back identically by mpvis), a
Chrome trace-event JSON file for ui.perfetto.dev (a track per rank, an arrow
per message, races and deadlocks marked), or CSV tables of events and
messages.  Exit 0 on success, 2 on an unreadable trace or an output that
cannot be written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.tracefile.export import FORMATS, export_trace
from mpvis.tracefile.otf2_export import Otf2ExportError
from mpvis.tracefile.otf2_names import Otf2Missing
from mpvis.tracefile.reader import TraceFileError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "export", help=COMMANDS["export"],
        description="Export a trace for other tools. Formats: "
                    + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()) + ".")
    p.add_argument("trace", type=Path, help="trace file (.jsonl[.gz|.zst]) or OTF2 anchor (.otf2)")
    p.add_argument("--format", "-f", required=True, choices=tuple(FORMATS), dest="fmt")
    p.add_argument("-o", "--out", type=Path, required=True, help="output (see the formats)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        written = export_trace(args.trace, args.fmt, args.out)
    except TraceFileError as exc:
        raise UserError(f"invalid trace: {exc}") from None
    except (Otf2ExportError, Otf2Missing) as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    for p in written:
        print(f"wrote {p}")
    return 0
