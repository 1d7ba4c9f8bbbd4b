"""Races grouped by the program sites that race (issue 14, item 3).

A task farm's master posts one ``recv(ANY_SOURCE, ANY_TAG)`` in a loop: every
pair of its iterations races, so a run gives thousands of races that are all
the same bug to a person.  :func:`group_races` folds the report's ``races``
list (spec, "Analysis report") into one group per *site pair*:

* a classifier race (MPVisualizer section 3, two receives of one rank): the
  sites of its two receives, in program order;
* an exact race (Cypher and Leu, a match and a send that could have been
  matched instead): the receive's site and the site of the other send.

A group counts its races by verdict and by situation, lists the ranks it
occurs on and names its first race as an example (``rank:seq``).  Sites are
shown relative to the program's directory when it is known
(:func:`relative_site`).  Plain functions over lists of report entries: no
model needed, so they apply to ``mpvis check --json`` output as well.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = ["Group", "format_groups", "group_key", "group_races", "program_dir", "relative_site",
           "tolerant"]

Group = dict[str, Any]
#: Looks up the site of event ``(rank, seq)``; ``None`` when unknown.
SiteOf = Callable[[int, int], str | None]

UNKNOWN_SITE = "?"


def program_dir(header: dict[str, Any]) -> str | None:
    """The traced program's directory, for :func:`relative_site`: the header's
    ``cwd`` (a recorded run), else the directory of the first absolute path in
    its ``program`` command line; ``None`` when neither says."""
    cwd = header.get("cwd")
    if isinstance(cwd, str) and cwd:
        return cwd
    program = header.get("program")
    if isinstance(program, str):
        for word in program.split():
            if os.path.isabs(word) and not word.startswith("-"):
                return os.path.dirname(word)
    return None


def tolerant(site_of: SiteOf) -> SiteOf:
    """``site_of`` answering ``None`` for an event it does not know (a rank whose
    records stopped early), instead of raising."""

    def site(rank: int, seq: int) -> str | None:
        try:
            return site_of(rank, seq)
        except (LookupError, ValueError):
            return None

    return site


def relative_site(site: str | None, base: str | None) -> str:
    """``site`` (``file:line``) relative to directory ``base`` when it lies under it."""
    if not site:
        return UNKNOWN_SITE
    if not base:
        return site
    path, sep, line = site.rpartition(":")
    if not sep or not os.path.isabs(path):
        return site
    rel = os.path.relpath(path, base)
    return site if rel.startswith("..") else f"{rel}:{line}"


def group_key(entry: dict[str, Any], site_of: SiteOf | None = None) -> tuple[str, str, str]:
    """``(method, first site, second site)`` of a report race entry (see module doc)."""
    method = str(entry.get("method", "classifier"))
    rank = int(entry["rank"])
    if method == "exact":
        recv = int(entry["recvs"][0])
        other = entry["messages"][1] if len(entry["messages"]) > 1 else None
        s1 = site_of(rank, recv) if site_of else None
        s2 = site_of(int(other[0]), int(other[1])) if site_of and other else None
        return method, s1 or UNKNOWN_SITE, s2 or UNKNOWN_SITE
    sites = list(entry.get("sites") or [None, None])
    if site_of is not None:
        sites = [s or site_of(rank, int(q)) for s, q in zip(sites, entry["recvs"], strict=False)]
    return method, sites[0] or UNKNOWN_SITE, sites[1] or UNKNOWN_SITE


def group_races(
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


def _ranks_text(ranks: Sequence[int]) -> str:
    if len(ranks) <= 6:
        return "rank" + "s" * (len(ranks) != 1) + " " + ", ".join(map(str, ranks))
    return f"{len(ranks)} ranks ({ranks[0]}..{ranks[-1]})"


def format_groups(groups: Sequence[Group], entries: Iterable[dict[str, Any]]) -> list[str]:
    """Lines for a person, one per group, counting only ``entries`` (races of the
    report annotated by :func:`group_races`, e.g. those shown); groups left
    with none give no line."""
    counts: dict[int, Counter[str]] = {}
    for e in entries:
        if "group" in e:
            counts.setdefault(int(e["group"]), Counter())[str(e["verdict"])] += 1
    lines = []
    for i, g in enumerate(groups):
        if i not in counts:
            continue
        c = counts[i]
        what = ("recv " + g["sites"][0] + " vs send " + g["sites"][1] if g["method"] == "exact"
                else g["sites"][0] + "  /  " + g["sites"][1])
        by = ", ".join(f"{n} {v}" for v, n in sorted(c.items()))
        lines.append(f"  {sum(c.values()):>7} x {what} [{g['method']}] ({by}; "
                     f"{_ranks_text(g['ranks'])}; e.g. {g['example']})")
    return lines
