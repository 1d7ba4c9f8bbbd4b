"""The analysis report of ``mpvis check`` (spec: "Analysis report").

:func:`build_report` gathers what the model and its analyzers found into the
spec's JSON object; :func:`format_report` (:func:`report_lines`, a line at a
time) renders it for a person; :func:`exit_code` gives the spec's exit status
(0 nothing found, 1 found); :func:`report_json` (:func:`iter_report_json`, a
chunk at a time) serialises it with orjson (a 1M-event trace's 50 MB report in
a fraction of a second, where ``json.dump`` took half a minute).
Only ``legitimate`` and ``unverified`` races count as found and are shown by
default; ``spurious`` and ``false`` ones are listed in the JSON and counted in
the text.

A report's ``races`` is a list of entry dicts or, for big reports, a
:class:`~mpvis.analysis.race_table.RaceTable` (the same entries as columns:
``build_report(..., columns=True)``); every function here takes either and
gives the same output for both, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from mpvis.analysis.race_groups import format_groups
from mpvis.analysis.race_table import COLUMNS, NONE, RaceTable, columns_in, packed_keys
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R

Report = dict[str, Any]
SHOWN_VERDICTS = ("legitimate", "unverified")


def classifier_table(m: ModelManager, *, nonadjacent: bool = False) -> RaceTable:
    """The classifier's races (adjacent pairs, plus non-adjacent ones on request)
    as a table, sorted by rank, receives, adjacent before non-adjacent (stable)."""
    if nonadjacent:
        races = list(m.potential_races())
        for recv in m.find(R.RECV, peer=-1, tag=-1):
            races.extend(m.nonadjacent_races(*recv.key))
        t = RaceTable.from_classifier(races)
    else:  # from the tracker's columns
        t = RaceTable.from_race_columns(m.races.races, m.races.potential_rows())
    c = t.cols
    return t.reorder(np.lexsort((~t.has("scope", "adjacent"), c["recv2"], c["recv1"], c["rank"])))


def classifier_races(m: ModelManager, *, nonadjacent: bool = False) -> list[dict[str, Any]]:
    """Report entries of the classifier: adjacent pairs, plus non-adjacent ones on request."""
    return classifier_table(m, nonadjacent=nonadjacent).entries()


def confirm(races: RaceTable) -> None:
    """Give each classifier entry ``confirmed``: whether an exact entry of the same
    table names its conflict (its first receive matched with its first message,
    the second message could have been), in place."""
    c = races.cols
    exact = c["exact"] == 1
    both = ~exact & (c["m1r"] != NONE) & (c["m2r"] != NONE)
    c["confirmed"][~exact] = 0
    c["confirmed"][both] = columns_in(races.key_columns(both), races.key_columns(exact))


def build_report(
    m: ModelManager,
    *,
    nonadjacent: bool = False,
    extra_races: RaceTable | list[dict[str, Any]] | Callable[[], RaceTable] | None = None,
    deadlocks: list[dict[str, Any]] | None = None,
    errors: list[dict[str, Any]] | None = None,
    columns: bool = False,
    consume: bool = False,
    read: Callable[[], object] | None = None,
) -> Report:
    """The spec's report object for a model whose input has ended.

    ``extra_races`` are entries of other methods (``exact``); ``deadlocks`` the
    deadlock entries.  Adds optional fields: ``ranks`` (status per rank) and
    ``errors`` (collective mismatches, request leaks, lost messages: each with
    ``kind``, ``ranks``, ``events`` as ``"rank:seq"`` and ``reason``; see
    docs/correctness-checks.md).  ``columns``: ``races`` is a
    :class:`RaceTable` (``extra_races`` must then be of its shapes), else a list;
    ``consume``: a table ``extra_races`` is emptied as the report's is made
    (:meth:`RaceTable.concat`; the caller lets it go).  ``read`` is called once
    everything is read from the model, before the tables are joined (``mpvis
    check`` frees the model's columns there), and ``extra_races`` may be a
    function making the table, called after it (with ``columns``).
    """
    events = m.event_count
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
    own = classifier_table(m, nonadjacent=nonadjacent)
    if read is not None:
        read()
    if callable(extra_races):
        extra_races = extra_races()
    races: RaceTable | list[dict[str, Any]]
    if columns:
        extra = (extra_races if isinstance(extra_races, RaceTable)
                 else RaceTable.from_entries(extra_races or []))
        races = RaceTable.concat([own, extra], consume=consume or extra is not extra_races)
        del own, extra
    else:
        races = own.entries() + list(extra_races or [])
    return {
        "nprocs": m.nprocs,
        "events": events,
        "races": races,
        "deadlocks": list(deadlocks or []),
        "errors": list(errors or []),
        "ranks": ranks,
    }


def iter_report_json(report: Report) -> Iterator[bytes]:
    """:func:`report_json` in pieces: a table's race entries are written a chunk
    at a time from its columns (:meth:`RaceTable.json_chunks`), so neither a
    dict per entry nor the whole text is held.  The pieces joined are
    :func:`report_json`."""
    races = report.get("races")
    if not isinstance(races, RaceTable):
        yield report_json(report)
        return
    try:  # everything but the races first: only they are big, and they always encode
        parts = {k: b"" if k == "races" else orjson.dumps(v) for k, v in report.items()}
        keys = {k: orjson.dumps(k) for k in report}
    except TypeError:  # beyond orjson: the standard library's text of the whole
        yield report_json({**report, "races": list(races)})
        return
    sep = b"{"
    for k, v in parts.items():
        yield sep + keys[k] + b":"
        sep = b","
        if k != "races":
            yield v
            continue
        yield b"["
        first = True
        for chunk in races.json_chunks():
            if not first:
                yield b","  # not b"," + chunk: a copy of each chunk (2.5 MB)
            yield chunk
            first = False
        yield b"]"
    yield b"}\n"


def report_json(report: Report) -> bytes:
    """The report as one line of UTF-8 JSON with its newline.

    orjson, falling back to the standard library for what orjson refuses
    (integers beyond 64 bits, non-string keys): the same JSON value either way.
    """
    if isinstance(report.get("races"), RaceTable):
        return b"".join(iter_report_json(report))
    try:
        return orjson.dumps(report, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return (json.dumps(report) + "\n").encode()


def _table(races: RaceTable | Sequence[dict[str, Any]]) -> RaceTable:
    return races if isinstance(races, RaceTable) else RaceTable.from_entries(races)


def _found_mask(races: RaceTable) -> Any:
    return races.has("verdict", *SHOWN_VERDICTS) & (races.cols["suppressed"] == 0)


def found_races(report: Report) -> Sequence[dict[str, Any]]:
    """Races a user is shown by default (legitimate or unverified, not marked
    intended: ``suppressed``, :mod:`mpvis.analysis.race_suppress`): a
    :class:`RaceTable` of them when the report's races are one."""
    races = report["races"]
    if isinstance(races, RaceTable):
        return races.take(_found_mask(races))
    return [r for r in races
            if r["verdict"] in SHOWN_VERDICTS and not r.get("suppressed")]


def exit_code(report: Report) -> int:
    """0 when no race, no deadlock (potential ones included) and no error was found,
    else 1 (spec)."""
    races = report["races"]
    found = _found_mask(races).any() if isinstance(races, RaceTable) else found_races(report)
    return 1 if found or report["deadlocks"] or report.get("errors") else 0


def legend_examples(report: Report) -> list[dict[str, Any]]:
    """One found race per (situation, consumption, verdict) that occurs: what
    :func:`mpvis.scene.vocabulary.legend_lines` needs to explain the terms."""
    races = _table(report["races"])
    found = np.flatnonzero(_found_mask(races))  # their rows: no copy of the table
    c = races.cols
    keys = packed_keys(_without_none(c[k][found])
                       for k in ("situation", "consumption", "verdict"))
    if len(keys) == 1 and len(found) and int(keys[0].max()) <= 2 * len(found) + 4096:
        first = _first_rows(keys[0])  # a few dozen values: no sort of the rows
    else:
        _, first = (np.unique(keys[0], return_index=True) if len(keys) == 1 else
                    np.unique(np.stack(keys, axis=1), axis=0, return_index=True))
    return races.take(found[np.sort(first)]).entries()


def _without_none(col: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``col`` with :data:`NONE` replaced by one more than its largest other value:
    the same rows equal, in a small range (so the legend's three columns pack
    into one key, not a sort of a matrix of them)."""
    none = col == NONE
    if not none.any():
        return col
    rest = col[~none]
    return np.where(none, int(rest.max()) + 1 if len(rest) else 0, col)


def _first_rows(key: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The first row of each distinct value of ``key`` (small non-negative
    integers), in value order: ``np.unique(key, return_index=True)[1]``."""
    n = len(key)
    first = np.full(int(key.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, key, np.arange(n, dtype=np.int64))
    return first[first < n]


_HEAD_EXACT = "  rank %d: recv %d:%d — exact\n      %s; %s → %s%s"
_HEAD_PAIR = ("  rank %d: recv %d:%d%s, recv %d:%d%s — situation %s [%s], %s\n"
              "      %s; %s → %s%s")
_CONFIRMS = ("", "\n      exact test: does not confirm it",
             "\n      exact test: confirms this race")


#: Races whose lines are made at a time: a chunk's values as Python ints and its
#: lines are held together (16 columns' ints and the text: about 3 MB for 4,096).
TEXT_CHUNK = 1 << 12


def _race_text(races: RaceTable, rows: Any) -> Iterator[str]:
    """The lines of the races ``rows`` (indices) in the text report, :data:`TEXT_CHUNK`
    races at a time, read from the columns a chunk at a time (no copy of the
    table); each piece is their lines joined by newlines.  Per race its rank, receives
    with their sites, situation, consumption and scope (or ``exact``), both
    messages (``nothing consumed`` when a receive consumed none) and the
    verdict, then whether the exact test confirms it (when decided).  One
    string format per race; the string columns are looked up in tables."""
    text = [None, *races.strings]  # string id + 1 -> its value
    site = ["", *(f" ({s})" if s else "" for s in races.strings)]
    upper = ["NONE", *(s.upper() for s in races.strings)]
    for lo in range(0, len(rows), TEXT_CHUNK):
        chunk = rows[lo:lo + TEXT_CHUNK]
        part = [races.cols[c][chunk].tolist() for c in COLUMNS[:16]]
        out = []
        for (exact, scope, rank, r1, r2, situation, m1r, m1s, m2r, m2s, verdict, _comm,
             consumption, site1, site2, confirmed) in zip(*part, strict=True):
            m1 = "nothing consumed" if m1r == NONE else f"message sent at {m1r}:{m1s}"
            m2 = "nothing consumed" if m2r == NONE else f"message sent at {m2r}:{m2s}"
            if exact:
                out.append(_HEAD_EXACT % (rank, rank, r1, m1, m2, upper[verdict + 1],
                                          _CONFIRMS[confirmed + 1]))
            else:
                out.append(_HEAD_PAIR % (
                    rank, rank, r1, site[site1 + 1], rank, r2, site[site2 + 1],
                    None if situation == NONE else situation, text[consumption + 1],
                    text[scope + 1], m1, m2, upper[verdict + 1], _CONFIRMS[confirmed + 1]))
        yield "\n".join(out)


def _unseen_exact(races: RaceTable, found: Any) -> Any:
    """Exact entries that no shown classifier race accounts for (a row mask)."""
    c = races.cols
    exact = c["exact"] == 1
    seen = found & ~exact & (c["m1r"] != NONE) & (c["m2r"] != NONE)
    out = np.zeros(len(races), dtype=bool)
    out[exact] = ~columns_in(races.key_columns(exact), races.key_columns(seen))
    return out


def _format_groups(report: Report, races: RaceTable, counted: Any) -> list[str]:
    """The ``groups`` block: the races of the mask ``counted`` (those shown) by
    site pair (see :mod:`race_groups`)."""
    groups = report.get("groups")
    if not groups or not counted.any():
        return []
    lines = format_groups(groups, races, counted)
    return [f"Races by site pair: {len(lines)} group{'s' * (len(lines) != 1)}", *lines]


def format_report(report: Report, *, source: str | None = None, summary: bool = False) -> str:
    """A readable report: classifier races (rank, both receives with sites,
    situation, messages, verdict, and whether the exact test confirms them),
    the exact races the classifier cannot see, the races grouped by site pair
    (``groups``, when present), deadlocks, the status of each rank, and a
    summary.  ``summary``: the groups only, not every race."""
    return "\n".join(report_lines(report, source=source, summary=summary))


def report_lines(report: Report, *, source: str | None = None, summary: bool = False
                 ) -> Iterator[str]:
    """The lines of :func:`format_report`, one at a time but the races', which come
    a chunk of lines at a time (joined by newlines: :func:`_race_text`)."""
    title = f"{source}: " if source else ""
    yield f"{title}{report['nprocs']} ranks, {report['events']} events"
    races = _table(report["races"])
    c = races.cols
    found = _found_mask(races)
    shown_rows = found & (c["exact"] == 0)
    unseen_rows = _unseen_exact(races, found)
    nr, nx_ = int(shown_rows.sum()), int(unseen_rows.sum())
    hidden = len(races) - int(races.has("verdict", *SHOWN_VERDICTS).sum())
    if not nr and not nx_:
        yield "No races found." + (f" ({hidden} pairs judged spurious or false)"
                                   if hidden else "")
    for n, rows, what in ((nr, shown_rows, "Races (16-case classifier)"),
                          (nx_, unseen_rows, "Exact races the classifier does not show")):
        if n and not summary:
            yield f"{what}: {n}"
            yield from _race_text(races, np.flatnonzero(rows))
    yield from _format_groups(report, races, shown_rows | unseen_rows)
    if nr and hidden:
        yield (f"({hidden} more pairs judged spurious or false are not shown; "
               "use --json to see them)")
    nsup = int((c["suppressed"] != 0).sum())
    if nsup:
        yield f"({nsup} races marked intended are not shown nor counted)"
    yield from outcome_lines(report, nr, nx_)


def outcome_lines(report: Report, classified: int, exact_only: int) -> list[str]:
    """The end of :func:`format_report`: deadlocks, errors, ranks that did not
    finish, and the summary line counting ``classified`` races shown by the
    classifier and ``exact_only`` more found by the exact test."""
    out: list[str] = []
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
    nr, nd, ne = classified, len(report["deadlocks"]), len(errors)
    out.append(f"Summary: {nr} race{'s' * (nr != 1)} by the classifier, "
               f"{exact_only} more by the exact test, {nd} deadlock{'s' * (nd != 1)}, "
               f"{ne} error{'s' * (ne != 1)}.")
    return out
