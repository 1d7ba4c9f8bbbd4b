"""``mpvis orderings TRACE [--json]``: how many delivery orders a run admits, and how few matter.

Builds the trace's POEG (Schaeli et al., section 7; :mod:`mpvis.analysis.poeg`),
counts its orderings exactly, decomposes it by process and by subgroup
(section 3, Figures 7 and 11; :mod:`mpvis.analysis.poeg_decompose`) and
prints per rank and per subgroup the orderings left, and the totals before
and after.  ``--json`` prints
``{"orderings": N, "ranks": [{"rank", "orderings", "subgroups": [{"events":
[seq...], "orderings"}], ...}], "after_process": N, "after_subgroups": N}``
with exact integers (``orderings`` is ``null`` with a ``note`` when the whole
POEG is too large to count exactly).
Exit codes: 0 done, 2 unreadable trace or a trace the POEG cannot be built for.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpvis.analysis.linext import DEFAULT_STATE_LIMIT, CountLimitError, approx
from mpvis.analysis.poeg import PoegError, poeg_of
from mpvis.analysis.poeg_decompose import Decomposition, decompose
from mpvis.cli.commands import COMMANDS
from mpvis.cli.cone import load
from mpvis.cli.errors import UserError

#: Subgroups listed per rank in the readable output (all of them with --json).
SHOWN_SUBGROUPS = 12


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "orderings",
        help=COMMANDS["orderings"],
        description="Count the orderings of the run's events that its POEG admits "
        "(Schaeli et al.), per rank and per subgroup after decomposition.",
    )
    p.add_argument("trace", help="trace file (.jsonl, .jsonl.gz or .jsonl.zst)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--limit", type=int, default=DEFAULT_STATE_LIMIT, metavar="N",
                   help="downsets one count may visit (default %(default)s; 5-10 s per million)")
    p.set_defaults(func=run)


def analyse(path: str, limit: int = DEFAULT_STATE_LIMIT) -> Decomposition:
    """The decomposition of the trace at ``path``; :class:`UserError` when it cannot be had."""
    m = load(path)
    try:
        return decompose(poeg_of(m), limit=limit)
    except PoegError as exc:
        raise UserError(str(exc)) from None
    except CountLimitError as exc:
        raise UserError(f"a single subgroup is too large: {exc}") from None


def run(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UserError("--limit must be at least 1")
    d = analyse(args.trace, args.limit)
    if args.json:
        json.dump(d.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_decomposition(d))
    return 0


def big(n: int | None) -> str:
    """An exact count, with its order of magnitude when long."""
    if n is None:
        return "not counted"
    if n >= 10**30:
        return f"~{approx(n)} ({len(str(n))} digits, exact with --json)"
    text = f"{n:,}"
    return text if n < 10**9 else f"{text} (~{approx(n)})"


def format_decomposition(d: Decomposition) -> str:
    """The readable form ``mpvis orderings`` prints without ``--json``."""
    lines = [f"orderings of the run's POEG: {big(d.orderings)}"]
    if d.note:
        lines.append(f"  ({d.note})")
    for part in d.ranks:
        lines.append(f"rank {part.rank}: {len(part.nodes)} events, {big(part.orderings)} "
                     f"orderings, {len(part.subgroups)} subgroups, "
                     f"{big(part.after_subgroups)} after subgroup partitioning")
        for g in part.subgroups[:SHOWN_SUBGROUPS]:
            ev = ", ".join(map(str, g.events[:8])) + (", ..." if len(g.events) > 8 else "")
            lines.append(f"    events {ev}: {big(g.orderings)}")
        if len(part.subgroups) > SHOWN_SUBGROUPS:
            lines.append(f"    ... {len(part.subgroups) - SHOWN_SUBGROUPS} more (see --json)")
    lines.append(f"after process partitioning: {big(d.after_process)} "
                 "(sum over ranks)")
    lines.append(f"after subgroup partitioning: {big(d.after_subgroups)} "
                 "(sum over subgroups)")
    return "\n".join(lines)
