"""``mpvis cone TRACE RANK:SEQ [--json]``: the causality cone of one event.

Prints the spec's object (``trace-format.md``, "Cones and predicates")
``{"event": [RANK, SEQ], "frontier": [...], "size": N, "future_size": M}``
with ``--json``, else a readable summary: the frontier (last event of the
cone on each rank) and the first event of the future cone on each rank.
Exit codes: 0 done, 2 unreadable trace or unknown event.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpvis.analysis.cones import Cone, cone_of
from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.model.manager import ModelManager
from mpvis.tracefile.reader import TraceFileError, load_trace


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cone",
        help=COMMANDS["cone"],
        description="Show the causality cone (causal history) of an event, its frontier, "
        "and the events it happened before.",
    )
    p.add_argument("trace", help="trace file (.jsonl, .jsonl.gz or .jsonl.zst)")
    p.add_argument("event", metavar="RANK:SEQ", help="the event, e.g. 2:17")
    p.add_argument("--json", action="store_true", help="print the JSON object of the spec")
    p.set_defaults(func=run)


def parse_event(text: str) -> tuple[int, int]:
    """``RANK:SEQ`` as two non-negative integers; raises :class:`UserError`."""
    rank, colon, seq = text.partition(":")
    if not (colon and rank.strip().isdecimal() and seq.strip().isdecimal()):
        raise UserError(f"event {text!r} is not RANK:SEQ (two non-negative integers)")
    return int(rank), int(seq)


def load(path: str) -> ModelManager:
    """The trace's model, or a :class:`UserError` naming the broken rule."""
    try:
        return load_trace(path)
    except TraceFileError as exc:
        raise UserError(f"invalid trace: {exc}") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    rank, seq = parse_event(args.event)
    m = load(args.trace)
    try:
        cone = cone_of(m, rank, seq)
    except KeyError as exc:
        raise UserError(str(exc.args[0])) from None
    if args.json:
        json.dump(cone.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_cone(m, cone))
    return 0


def _describe(m: ModelManager, rank: int, seq: int) -> str:
    rec = m.record(rank, seq)
    site = f" at {rec['site']}" if "site" in rec else ""
    return f"{rank}:{seq} {rec['kind']}{site}"


def format_cone(m: ModelManager, cone: Cone) -> str:
    """The readable form ``mpvis cone`` prints without ``--json``."""
    r0, s0 = cone.event
    lines = [
        f"Causality cone of event {_describe(m, r0, s0)}",
        f"  {cone.size} events happened before it or are it; frontier (last event per rank):",
    ]
    for r, f in enumerate(cone.frontier):
        lines.append(f"    rank {r}: " + ("-" if f is None else _describe(m, r, f)))
    lines.append(f"  it happened before {cone.future_size} events; first of them per rank:")
    for r, f in enumerate(cone.future_frontier):
        lines.append(f"    rank {r}: " + ("-" if f is None else _describe(m, r, f)))
    return "\n".join(lines)
