"""``mpvis predicate TRACE --define NAME=RANK:EXPR ... [--conj N,N | --disj N,N] [--json]``.

Where in the run could a global predicate hold?  Each ``--define`` binds a
local predicate to one rank (language: :mod:`mpvis.analysis.predicate_lang`).

* ``--conj a,b`` (the default, over every defined predicate): the least
  consistent cut in which every named predicate holds on its rank; prints the
  spec's ``{"holds": true, "cut": [k0, k1, ...]}`` or
  ``{"holds": false, "cut": null}`` (``trace-format.md``, "Cones and
  predicates": ``k_r`` events of rank ``r``).
* ``--disj a,b``: where the disjunction first holds.  A disjunction has no
  least cut in general, so the answer lists every *minimal* consistent cut
  where it holds, each the causality cone of the first event after which one
  predicate holds (or the empty cut when one holds initially).  JSON:
  ``{"holds", "cut", "predicate", "event", "minimal"}`` where ``cut``,
  ``predicate`` and ``event`` (``[rank, seq]`` or ``null`` for the initial
  state) describe the smallest of them and ``minimal`` lists them all as
  ``{"predicate", "event", "cut"}``, smallest first.

Exit codes: 0 the predicate holds somewhere, 1 it holds nowhere, 2 bad
definition or unreadable trace.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpvis.analysis.predicates import (
    Cut,
    LocalPredicate,
    PredicateError,
    PredicateEvaluator,
    check_recorded,
    detect_conjunctive,
    detect_disjunctive,
    parse_definition,
)
from mpvis.cli.commands import COMMANDS
from mpvis.cli.cone import load
from mpvis.cli.errors import UserError
from mpvis.model.manager import ModelManager


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "predicate",
        help=COMMANDS["predicate"],
        description="Find the first consistent cut of a saved run where a conjunction "
        "(or disjunction) of local predicates holds.",
        epilog="Example: mpvis predicate run.jsonl --define a=0:'x > 3' "
        "--define b=2:'phase == \"update\"' --conj a,b",
    )
    p.add_argument("trace", help="trace file (.jsonl, .jsonl.gz or .jsonl.zst)")
    p.add_argument(
        "--define",
        action="append",
        required=True,
        metavar="NAME=RANK:EXPR",
        help="a local predicate on one rank's variables and current event (repeatable)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--conj", metavar="NAME,NAME", help="conjunction of these predicates")
    which.add_argument("--disj", metavar="NAME,NAME", help="disjunction of these predicates")
    p.add_argument("--json", action="store_true", help="print the JSON object of the spec")
    p.set_defaults(func=run)


def _predicates(args: argparse.Namespace) -> list[LocalPredicate]:
    defined: dict[str, LocalPredicate] = {}
    for text in args.define:
        try:
            pred = parse_definition(text)
        except PredicateError as exc:
            raise UserError(str(exc)) from None
        if pred.name in defined:
            raise UserError(f"predicate {pred.name!r} is defined twice")
        defined[pred.name] = pred
    names = args.conj or args.disj
    if names is None:
        return list(defined.values())
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in defined]
    if unknown or not chosen:
        raise UserError(f"undefined predicate(s): {', '.join(unknown) or names!r}")
    return [defined[n] for n in dict.fromkeys(chosen)]


def run(args: argparse.Namespace) -> int:
    preds = _predicates(args)
    m = load(args.trace)
    ev = PredicateEvaluator(m)
    try:
        check_recorded(ev, preds)
    except PredicateError as exc:
        raise UserError(str(exc)) from None
    if args.disj is not None:
        result = detect_disjunctive(ev, preds)
        first = result.minimal[0] if result.minimal else None
        out: dict[str, Any] = {
            "holds": result.holds,
            "cut": None if first is None else list(first[2]),
            "predicate": None if first is None else first[0],
            "event": None if first is None or first[1] is None else list(first[1]),
            "minimal": [
                {"predicate": n, "event": None if e is None else list(e), "cut": list(c)}
                for n, e, c in result.minimal
            ],
        }
        text = format_result(m, ev, preds, "disj", result.cut)
    else:
        cut = detect_conjunctive(ev, preds)
        out = {"holds": cut is not None, "cut": None if cut is None else list(cut)}
        text = format_result(m, ev, preds, "conj", cut)
    if args.json:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(text)
    return 0 if out["holds"] else 1


def format_result(
    m: ModelManager, ev: PredicateEvaluator, preds: list[LocalPredicate], mode: str, cut: Cut | None
) -> str:
    """The readable answer: the predicates, then the cut rank by rank."""
    joiner = " and " if mode == "conj" else " or "
    lines = [
        ("Conjunction " if mode == "conj" else "Disjunction ") + joiner.join(p.name for p in preds)
    ]
    lines += [f"  {p.name} = rank {p.rank}: {p.source}" for p in preds]
    if cut is None:
        lines.append("No consistent cut of the run satisfies it.")
        return "\n".join(lines)
    where = "the least" if mode == "conj" else "a minimal"
    lines.append(f"Holds first at {where} consistent cut {list(cut)} (events per rank):")
    values = ev.values_at(preds, cut)
    for r, k in enumerate(cut):
        at = "initial state" if k == 0 else f"after {r}:{k - 1} {m.record(r, k - 1)['kind']}"
        mine = ", ".join(
            f"{p.name} {'true' if values[p.name] else 'false'}" for p in preds if p.rank == r
        )
        lines.append(f"  rank {r}: {at}" + (f"  ({mine})" if mine else ""))
    return "\n".join(lines)
