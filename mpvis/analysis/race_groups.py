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

import numpy as np
import numpy.typing as npt

from mpvis.analysis.race_table import NONE, RaceTable
from mpvis.model.event_arrays import events_at
from mpvis.model.manager import ModelManager

__all__ = ["EventSites", "Group", "format_groups", "group_key", "group_races", "group_table",
           "model_event_sites", "program_dir", "relative_site", "tolerant"]

Group = dict[str, Any]
IntArray = npt.NDArray[np.int64]
#: Small ids (string, value ids): 32 or 64 bits.
Ids = npt.NDArray[np.signedinteger[Any]]
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
    ``count``, ``verdicts`` and ``situations`` (counts, in the order each
    value first occurs in the group), ``ranks`` (sorted),
    ``suppressed`` (entries marked ``suppressed``; ``intended`` counts them by
    verdict) and ``example``
    (``rank:seq`` of the first race's receive(s)).  Every entry is counted in
    exactly one group, and gets ``group``: that group's index in the result
    (an optional field of the spec's race entries).
    """
    entries = list(races)
    keys: dict[tuple[str, str, str], int] = {}
    verdicts: dict[str, int] = {}
    situations: dict[str, int] = {}
    key = np.array([keys.setdefault(group_key(e, site_of), len(keys)) for e in entries],
                   dtype=np.int64)
    verdict = np.array([verdicts.setdefault(str(e["verdict"]), len(verdicts)) for e in entries],
                       dtype=np.int64)
    situation = np.array([-1 if e.get("situation") is None
                          else situations.setdefault(str(e["situation"]), len(situations))
                          for e in entries], dtype=np.int64)
    described = list(keys)
    groups, group_of = _fold(
        key, lambda k: described[k], base=base,
        verdict=(verdict, list(verdicts)), situation=(situation, list(situations)),
        suppressed=np.array([bool(e.get("suppressed")) for e in entries], dtype=bool),
        rank=np.array([int(e["rank"]) for e in entries], dtype=np.int64),
        example=lambda i: " / ".join(f"{entries[i]['rank']}:{q}" for q in entries[i]["recvs"]))
    for e, g in zip(entries, group_of.tolist(), strict=True):
        e["group"] = g
    return groups


#: Sites of events ``(ranks[i], seqs[i])``: ids into the names it returns, -1
#: where unknown (no site, or no such event).
EventSites = Callable[["IntArray", "IntArray"], tuple["IntArray", Sequence[str]]]


def model_event_sites(m: ModelManager) -> EventSites:
    """:data:`EventSites` of a model (many events at once; events it does not
    hold, such as those of a rank whose records stopped early, are unknown)."""

    def sites(ranks: IntArray, seqs: IntArray) -> tuple[IntArray, Sequence[str]]:
        events, held = events_at(m.store, ranks, seqs)
        out = np.full(len(held), -1, dtype=np.int64)
        out[held] = events.field("site")
        return out, m.store.sites

    return sites


def group_table(races: RaceTable, *, event_sites: EventSites | None = None,
                base: str | None = None) -> list[Group]:
    """:func:`group_races` of a table's entries, on its columns: the same groups,
    and each row's group index written to its ``group`` column.  ``event_sites``
    plays ``site_of``'s part."""
    c = races.cols
    names = _Names()
    exact = c["exact"] == 1
    own = names.lut(races.strings)
    s1, s2 = own[c["site1"] + 1], own[c["site2"] + 1]
    s1[exact] = -1
    s2[exact] = -1
    if event_sites is not None:
        r2 = np.where(exact, c["m2r"], c["rank"])
        q2 = np.where(exact, c["m2s"], c["recv2"])
        for s, rk, q, need in ((s1, c["rank"], c["recv1"], s1 < 0),
                               (s2, r2, q2, (s2 < 0) & (r2 != NONE))):
            if need.any():
                ids, table = event_sites(rk[need], q[need])
                s[need] = names.lut(table)[ids + 1]
        del r2, q2, s, rk, q, need
    unknown = names.id(UNKNOWN_SITE)
    s1[s1 < 0] = unknown
    s2[s2 < 0] = unknown
    k = len(names.names)
    key = (exact.astype(np.int64) * k + s1) * k + s2
    del s1, s2  # only the key from here on: a whole column less per site
    has = c["situation"] != NONE
    situation = np.full(len(races), -1, dtype=np.int32)  # ids: 32 bits hold them
    sv = np.zeros(0, dtype=np.int64)
    if has.any():
        low = int(c["situation"][has].min())
        sv, _, situation[has], _ = _unique(c["situation"][has] - low)
        sv += low
    recv2 = c["recv2"]

    def describe(kid: int) -> tuple[str, str, str]:
        m, rest = divmod(kid, k * k)
        return ("exact" if m else "classifier", names.names[rest // k], names.names[rest % k])

    def example(i: int) -> str:
        rank = int(c["rank"][i])
        qs = [int(c["recv1"][i])] + ([] if exact[i] else [int(recv2[i])])
        return " / ".join(f"{rank}:{q}" for q in qs)

    groups, group_of = _fold(
        key, describe, base=base, verdict=(c["verdict"], races.strings),
        situation=(situation, [str(v) for v in sv.tolist()]),
        suppressed=c["suppressed"] != 0, rank=c["rank"], example=example)
    c["group"][:] = group_of
    return groups


class _Names:
    """Site-key strings numbered as met."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._ids: dict[str, int] = {}

    def id(self, s: str) -> int:
        i = self._ids.get(s)
        if i is None:
            i = self._ids[s] = len(self.names)
            self.names.append(s)
        return i

    def lut(self, table: Sequence[str | None]) -> Ids:
        """Key ids of ``table``'s strings, shifted by one (position 0 is a missing
        string, -1); empty strings are missing too."""
        return np.array([-1, *[self.id(s) if s else -1 for s in table]], dtype=np.int32)


def _fold(key: IntArray, describe: Callable[[int], tuple[str, str, str]], *,
          base: str | None, verdict: tuple[Ids, Sequence[str]],
          situation: tuple[Ids, Sequence[str]], suppressed: npt.NDArray[np.bool_],
          rank: IntArray, example: Callable[[int], str]) -> tuple[list[Group], IntArray]:
    """The groups of rows with equal ``key`` (``describe`` names a key), largest
    first, ties in order of first row, and each row's group: :func:`group_races`'s
    contract, on arrays (``verdict`` and ``situation`` as ids with their names,
    -1 for no situation)."""
    uniq, first, inverse, count = _unique(key)
    by_first = np.argsort(first, kind="stable")
    order = by_first[np.argsort(-count[by_first], kind="stable")]
    position = np.empty(len(uniq), dtype=np.int64)
    position[order] = np.arange(len(uniq))
    group_of = position[inverse]
    del inverse  # a row's group from here on (a whole column less at the tallies)
    groups: list[Group] = []
    for u in order.tolist():
        method, a, b = describe(int(uniq[u]))
        groups.append({"method": method, "sites": [relative_site(a, base), relative_site(b, base)],
                       "count": int(count[u]), "verdicts": {}, "situations": {},
                       "suppressed": 0, "intended": {}, "example": example(int(first[u])),
                       "ranks": []})
    everything = np.ones(len(key), dtype=bool)
    _tally(groups, "verdicts", group_of, verdict, everything)
    _tally(groups, "situations", group_of, situation, situation[0] >= 0)
    _tally(groups, "intended", group_of, verdict, suppressed)
    for g, n in zip(groups, np.bincount(group_of[suppressed], minlength=len(groups)).tolist(),
                    strict=True):
        g["suppressed"] = n
    if len(key):
        width = int(rank.max()) + 1
        pairs = _unique(group_of * width + rank)[0]
        for g, r in zip((pairs // width).tolist(), (pairs % width).tolist(), strict=True):
            groups[g]["ranks"].append(r)
    return groups, group_of


def _unique(key: IntArray) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """``np.unique(key, return_index=True, return_inverse=True, return_counts=True)``
    of non-negative keys; by counting, without a sort, when their range is small
    (group and value ids: a few hundred values among a million rows)."""
    n = len(key)
    top = int(key.max()) + 1 if n else 0
    if n == 0 or top > 2 * n + 4096:
        uniq, first, inverse, count = np.unique(key, return_index=True, return_inverse=True,
                                                return_counts=True)
        return uniq, first, inverse.reshape(-1), count
    counts = np.bincount(key, minlength=top)
    uniq = np.flatnonzero(counts)
    first = np.full(top, n, dtype=np.int64)
    np.minimum.at(first, key, np.arange(n, dtype=np.int64))
    lut = np.zeros(top, dtype=np.int64)
    lut[uniq] = np.arange(len(uniq))
    return uniq, first[uniq], lut[key], counts[uniq]


def _tally(groups: list[Group], field: str, group_of: IntArray,
           values: tuple[Ids, Sequence[str]], rows: npt.NDArray[np.bool_]) -> None:
    """Count ``values`` of the chosen ``rows`` per group into ``groups[i][field]``,
    each name in the order of its first row in the group."""
    g, v = group_of[rows], values[0][rows]
    names = values[1]
    if not len(g):
        return
    width = int(v.max()) + 1
    pair, first, _, count = _unique(g * width + v)
    for p, n in zip(pair[np.argsort(first, kind="stable")].tolist(),
                    count[np.argsort(first, kind="stable")].tolist(), strict=True):
        gi, vi = divmod(p, width)
        groups[gi][field][names[vi]] = n


def _ranks_text(ranks: Sequence[int]) -> str:
    if len(ranks) <= 6:
        return "rank" + "s" * (len(ranks) != 1) + " " + ", ".join(map(str, ranks))
    return f"{len(ranks)} ranks ({ranks[0]}..{ranks[-1]})"


def format_groups(groups: Sequence[Group], entries: Iterable[dict[str, Any]] | RaceTable,
                  rows: npt.NDArray[np.bool_] | None = None) -> list[str]:
    """Lines for a person, one per group, counting only ``entries`` (races of the
    report annotated by :func:`group_races`, e.g. those shown, or a table's rows
    with their ``group``, only those of the mask ``rows`` when given); groups
    left with none give no line."""
    counts: dict[int, Counter[str]] = {}
    if isinstance(entries, RaceTable):
        cols = entries.cols
        rows = cols["group"] >= 0 if rows is None else rows & (cols["group"] >= 0)
        width = len(entries.strings) + 1
        pairs, _, _, n = _unique(cols["group"][rows].astype(np.int64) * width
                                 + cols["verdict"][rows])
        for gi, v, k in zip((pairs // width).tolist(), (pairs % width).tolist(), n.tolist(),
                            strict=True):
            counts.setdefault(gi, Counter())[entries.strings[v]] = k
    else:
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
