"""The analysis report of ``mpvis check`` (spec: "Analysis report").

:func:`build_report` gathers what the model and its analyzers found into the
spec's JSON object; :func:`format_report` renders it for a person;
:func:`exit_code` gives the spec's exit status (0 nothing found, 1 found);
:func:`report_json` serialises it (orjson: a 1M-event trace's 50 MB report
in a fraction of a second, where ``json.dump`` took half a minute).
Only ``legitimate`` and ``unverified`` races count as found and are shown by
default; ``spurious`` and ``false`` ones are listed in the JSON and counted in
the text.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from mpvis.analysis.race_groups import format_groups
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R

Report = dict[str, Any]
SHOWN_VERDICTS = ("legitimate", "unverified")


def classifier_races(m: ModelManager, *, nonadjacent: bool = False) -> list[dict[str, Any]]:
    """Report entries of the classifier: adjacent pairs, plus non-adjacent ones on request."""
    out = [r.to_report() for r in m.potential_races()]
    if nonadjacent:
        for recv in m.find(R.RECV, peer=-1, tag=-1):
            out.extend(r.to_report() for r in m.nonadjacent_races(*recv.key))
    out.sort(key=lambda e: (e["rank"], e["recvs"], e["scope"] != "adjacent"))
    return out


def build_report(
    m: ModelManager,
    *,
    nonadjacent: bool = False,
    extra_races: list[dict[str, Any]] | None = None,
    deadlocks: list[dict[str, Any]] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> Report:
    """The spec's report object for a model whose input has ended.

    ``extra_races`` are entries of other methods (``exact``); ``deadlocks`` the
    deadlock entries.  Adds optional fields: ``ranks`` (status per rank) and
    ``errors`` (collective mismatches, request leaks, lost messages: each with
    ``kind``, ``ranks``, ``events`` as ``"rank:seq"`` and ``reason``; see
    docs/correctness-checks.md).
    """
    ranks = []
    for r in range(m.nprocs):
        st = {"rank": r, "status": m.status(r), "events": m.count(r)}
        where = m.where(r)
        if where is not None:
            st["at"] = where
            st["site"] = m.site_of(r, where)
        if r in m.dead:
            st["detail"] = m.dead[r]
        ranks.append(st)
    return {
        "nprocs": m.nprocs,
        "events": m.event_count,
        "races": classifier_races(m, nonadjacent=nonadjacent) + list(extra_races or []),
        "deadlocks": list(deadlocks or []),
        "errors": list(errors or []),
        "ranks": ranks,
    }


def report_json(report: Report) -> bytes:
    """The report as one line of UTF-8 JSON with its newline.

    orjson, falling back to the standard library for what orjson refuses
    (integers beyond 64 bits, non-string keys): the same JSON value either way.
    """
    try:
        return orjson.dumps(report, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return (json.dumps(report) + "\n").encode()


def found_races(report: Report) -> list[dict[str, Any]]:
    """Races a user is shown by default (legitimate or unverified, not marked
    intended: ``suppressed``, :mod:`mpvis.analysis.race_suppress`)."""
    return [r for r in report["races"]
            if r["verdict"] in SHOWN_VERDICTS and not r.get("suppressed")]


def exit_code(report: Report) -> int:
    """0 when no race, no deadlock (potential ones included) and no error was found,
    else 1 (spec)."""
    return 1 if found_races(report) or report["deadlocks"] or report.get("errors") else 0


def _msg(m: list[int] | None) -> str:
    return "nothing consumed" if m is None else f"message sent at {m[0]}:{m[1]}"


def _format_race(e: dict[str, Any]) -> list[str]:
    rank = e["rank"]
    sites = e.get("sites") or [None, None]
    if e["method"] == "classifier":
        recvs = ", ".join(
            f"recv {rank}:{s}" + (f" ({site})" if site else "")
            for s, site in zip(e["recvs"], sites, strict=False))
        head = (f"rank {rank}: {recvs} — situation {e['situation']}"
                f" [{e.get('consumption', '')}], {e['scope']}")
    else:
        head = f"rank {rank}: recv {rank}:{e['recvs'][0]} — {e['method']}"
    msgs = "; ".join(_msg(x) for x in e["messages"])
    lines = [f"  {head}", f"      {msgs} → {e['verdict'].upper()}"]
    if e.get("confirmed") is not None:
        lines.append("      exact test: " + ("confirms this race" if e["confirmed"]
                                            else "does not confirm it"))
    return lines


def _unseen_exact(report: Report) -> list[dict[str, Any]]:
    """Exact entries that no shown classifier race accounts for."""
    seen = {(e["rank"], e["recvs"][0], tuple(map(tuple, e["messages"])))
            for e in found_races(report) if e["method"] == "classifier"
            and None not in e["messages"]}
    return [e for e in report["races"] if e["method"] == "exact"
            and (e["rank"], e["recvs"][0], tuple(map(tuple, e["messages"]))) not in seen]


def _format_groups(report: Report, shown: list[Any], unseen: list[Any]) -> list[str]:
    """The ``groups`` block: shown races by site pair (see :mod:`race_groups`)."""
    groups = report.get("groups")
    if not groups or not (shown or unseen):
        return []
    lines = format_groups(groups, [*shown, *unseen])
    return [f"Races by site pair: {len(lines)} group{'s' * (len(lines) != 1)}", *lines]


def format_report(report: Report, *, source: str | None = None, summary: bool = False) -> str:
    """A readable report: classifier races (rank, both receives with sites,
    situation, messages, verdict, and whether the exact test confirms them),
    the exact races the classifier cannot see, the races grouped by site pair
    (``groups``, when present), deadlocks, the status of each rank, and a
    summary.  ``summary``: the groups only, not every race."""
    out = []
    title = f"{source}: " if source else ""
    out.append(f"{title}{report['nprocs']} ranks, {report['events']} events")
    shown = [e for e in found_races(report) if e["method"] != "exact"]
    hidden = sum(1 for e in report["races"] if e["verdict"] not in SHOWN_VERDICTS)
    unseen = _unseen_exact(report)
    if not shown and not unseen:
        out.append("No races found." + (f" ({hidden} pairs judged spurious or false)"
                                        if hidden else ""))
    if shown and not summary:
        out.append(f"Races (16-case classifier): {len(shown)}")
        for e in shown:
            out.extend(_format_race(e))
    if unseen and not summary:
        out.append(f"Exact races the classifier does not show: {len(unseen)}")
        for e in unseen:
            out.extend(_format_race(e))
    out.extend(_format_groups(report, shown, unseen))
    if shown and hidden:
        out.append(f"({hidden} more pairs judged spurious or false are not shown; "
                   "use --json to see them)")
    nsup = sum(1 for e in report["races"] if e.get("suppressed"))
    if nsup:
        out.append(f"({nsup} races marked intended are not shown nor counted)")
    if report["deadlocks"]:
        out.append(f"Deadlocks: {len(report['deadlocks'])}")
        for d in report["deadlocks"]:
            tag = f"{d['kind']}, potential" if d.get("potential") else d["kind"]
            out.append(f"  [{tag}] ranks {', '.join(map(str, d['ranks']))}: {d['reason']}")
    else:
        out.append("No deadlocks found.")
    errors = report.get("errors", [])
    if errors:
        out.append(f"Errors: {len(errors)}")
        out.extend(f"  [{e['kind']}] ranks {', '.join(map(str, e['ranks']))}: {e['reason']}"
                   for e in errors)
    for r in report.get("ranks", []):
        if r["status"] == "finished":
            continue
        where = f" at event {r['at']}" if "at" in r else ""
        site = f" ({r['site']})" if r.get("site") else ""
        detail = f": {r['detail']}" if r.get("detail") else ""
        out.append(f"rank {r['rank']} {r['status']}{where}{site}{detail}")
    nr, nx_, nd = len(shown), len(unseen), len(report["deadlocks"])
    ne = len(errors)
    out.append(f"Summary: {nr} race{'s' * (nr != 1)} by the classifier, "
               f"{nx_} more by the exact test, {nd} deadlock{'s' * (nd != 1)}, "
               f"{ne} error{'s' * (ne != 1)}.")
    return "\n".join(out)
