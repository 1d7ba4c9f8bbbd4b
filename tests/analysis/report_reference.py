"""The dict-per-race report path that :mod:`mpvis.analysis.report`,
:mod:`mpvis.analysis.race_groups` and :mod:`mpvis.cli.check` used before the
races became columns (:mod:`mpvis.analysis.race_table`, issue 16).

Kept here, unchanged but for names, as the reference the columnar path is
compared with (``tests/analysis/test_race_table.py``): a dict per entry built by
:meth:`Race.to_report` and :func:`exact_entry`, grouped, marked, printed and
serialised one entry at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from mpvis.analysis.exact_events import exact_entry
from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.race_groups import Group, SiteOf, format_groups, group_key, relative_site
from mpvis.analysis.report import SHOWN_VERDICTS, outcome_lines
from mpvis.protocol import records as R

Report = dict[str, Any]


def reference_report(a: Analyses, *, nonadjacent: bool = False) -> Report:
    """``Analyses.report`` as it was: a dict per race (on-the-fly exact list)."""
    m = a.model
    out = [r.to_report() for r in m.potential_races()]
    if nonadjacent:
        for recv in m.find(R.RECV, peer=-1, tag=-1):
            out.extend(r.to_report() for r in m.nonadjacent_races(*recv.key))
    out.sort(key=lambda e: (e["rank"], e["recvs"], e["scope"] != "adjacent"))
    assert a.exact is not None
    found = a.exact.conflicts()
    entries = [exact_entry(*key) for key in found]
    rep = a.report()  # the rest of the report (deadlocks, errors, ranks) is not in question
    rep["races"] = out + entries
    for e in rep["races"]:
        if e["method"] == "classifier":
            m1, m2 = e["messages"]
            e["confirmed"] = (m1 is not None and m2 is not None and (
                e["rank"], e["recvs"][0], *m1, *m2) in found)
    return rep
def reference_group_races(
    races: Iterable[dict[str, Any]],
    *,
    site_of: SiteOf | None = None,
    base: str | None = None,
) -> list[Group]:
    """One group per :func:`group_key`, largest first (ties: first seen first).

    Each group: ``method``, ``sites`` (two strings, relative to ``base``),
    ``count``, ``verdicts`` and ``situations`` (counts), ``ranks`` (sorted),
    ``suppressed`` (entries marked ``suppressed``; ``intended`` counts them by
    verdict) and ``example``
    (``rank:seq`` of the first race's receive(s)).  Every entry is counted in
    exactly one group, and gets ``group``: that group's index in the result
    (an optional field of the spec's race entries).
    """
    groups: dict[tuple[str, str, str], Group] = {}
    ranks: dict[tuple[str, str, str], set[int]] = {}
    keyed = []
    for e in races:
        key = group_key(e, site_of)
        keyed.append((e, key))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {
                "method": key[0],
                "sites": [relative_site(key[1], base), relative_site(key[2], base)],
                "count": 0,
                "verdicts": Counter(),
                "situations": Counter(),
                "suppressed": 0,
                "intended": Counter(),
                "example": " / ".join(f"{e['rank']}:{q}" for q in e["recvs"]),
            }
            ranks[key] = set()
        g["count"] += 1
        g["verdicts"][str(e["verdict"])] += 1
        if e.get("situation") is not None:
            g["situations"][str(e["situation"])] += 1
        if e.get("suppressed"):
            g["suppressed"] += 1
            g["intended"][str(e["verdict"])] += 1
        ranks[key].add(int(e["rank"]))
    out = []
    for key, g in groups.items():
        g["verdicts"] = dict(g["verdicts"])
        g["situations"] = dict(g["situations"])
        g["intended"] = dict(g["intended"])
        g["ranks"] = sorted(ranks[key])
        out.append(g)
    out.sort(key=lambda g: -int(g["count"]))
    index = {id(g): i for i, g in enumerate(out)}
    for e, key in keyed:
        e["group"] = index[id(groups[key])]
    return out


def reference_found_races(report: Report) -> list[dict[str, Any]]:
    """Races a user is shown by default (legitimate or unverified, not marked
    intended: ``suppressed``, :mod:`mpvis.analysis.race_suppress`)."""
    return [r for r in report["races"]
            if r["verdict"] in SHOWN_VERDICTS and not r.get("suppressed")]


def _unseen_exact(report: Report) -> list[dict[str, Any]]:
    """Exact entries that no shown classifier race accounts for."""
    seen = {(e["rank"], e["recvs"][0], tuple(map(tuple, e["messages"])))
            for e in reference_found_races(report) if e["method"] == "classifier"
            and None not in e["messages"]}
    return [e for e in report["races"] if e["method"] == "exact"
            and (e["rank"], e["recvs"][0], tuple(map(tuple, e["messages"]))) not in seen]


def _format_groups(report: Report, shown: list[Any], unseen: list[Any]) -> list[str]:
    """The ``groups`` block: shown races by site pair (see :mod:`race_groups`)."""
    groups = report.get("groups")
    if not groups or not (shown or unseen):
        return []
    lines = format_groups(groups, [*shown, *unseen])  # its dict path
    return [f"Races by site pair: {len(lines)} group{'s' * (len(lines) != 1)}", *lines]


def reference_format_report(report: Report, *, source: str | None = None,
                            summary: bool = False) -> str:
    """A readable report: classifier races (rank, both receives with sites,
    situation, messages, verdict, and whether the exact test confirms them),
    the exact races the classifier cannot see, the races grouped by site pair
    (``groups``, when present), deadlocks, the status of each rank, and a
    summary.  ``summary``: the groups only, not every race."""
    out = []
    title = f"{source}: " if source else ""
    out.append(f"{title}{report['nprocs']} ranks, {report['events']} events")
    shown = [e for e in reference_found_races(report) if e["method"] != "exact"]
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
    out.extend(outcome_lines(report, len(shown), len(unseen)))  # not in question
    return "\n".join(out)


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


def reference_json(report: Report) -> bytes:
    """``report_json`` as it was."""
    return orjson.dumps(report, option=orjson.OPT_APPEND_NEWLINE)


def reference_marks(races: Iterable[dict[str, Any]], groups: list[dict[str, Any]]) -> None:
    """``check_cache.apply_marks`` as it was, each entry knowing its group."""
    for e in races:
        if e.get("suppressed"):
            g = groups[e["group"]]
            g["suppressed"] += 1
            g["intended"][str(e["verdict"])] = g["intended"].get(str(e["verdict"]), 0) + 1
