"""``mpvis open TRACE``: browse a saved trace post-mortem in the window.

Large files load in the background with a progress bar that can be
cancelled; a file that breaks the trace format shows the reader's message
(file, line, rule).  While the window is open, ``mpvis run`` and ``mpvis demo``
in a terminal stream into it.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.display import require_display
from mpvis.cli.errors import UserError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "open",
        help=COMMANDS["open"],
        description="Open the window on a trace file (.jsonl, .jsonl.gz, .jsonl.zst).",
    )
    p.add_argument("trace", type=Path, nargs="?", help="trace file (none: an empty window)")
    p.set_defaults(func=open_trace)


def open_trace(args: argparse.Namespace) -> int:
    """Run ``mpvis open`` with parsed ``args``; returns the window's exit status."""
    if args.trace is not None and not args.trace.is_file():
        raise UserError(f"no such trace file: {args.trace}")
    require_display()
    try:
        app = importlib.import_module("mpvis.gui.app")  # Qt only behind this line
    except ImportError as exc:
        raise UserError(f"the window is not available ({exc})") from None
    return int(app.run_open_window(args.trace))
