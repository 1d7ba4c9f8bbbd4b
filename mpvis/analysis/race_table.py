"""The report's race entries as columns (issue 16: a 1M-event trace has 330,000).

A :class:`RaceTable` holds the ``races`` of the spec's report ("Analysis
report") as NumPy columns, one row per entry in report order, and gives the
entries back as dicts only when asked (:meth:`RaceTable.entries`, iteration:
a chunk at a time), so a report can be sorted, grouped, marked, counted and
serialised without a dict per race (about 600 bytes each): its JSON is
written from the columns (:meth:`RaceTable.json_chunks`, the bytes orjson
gives for the dicts), its text from row tuples (:meth:`RaceTable.rows`).  It is a
``Sequence`` of entry dicts: code that only reads entries takes it as it
takes a list; entries it yields are fresh dicts, so changes to them are not
kept (change the columns).

Contract: ``RaceTable.from_entries(es).entries() == es`` with the same key
order (so the same JSON bytes) for every entry of the two shapes the report
has: a classifier pair (MPVisualizer section 3: ``method``, ``scope``,
``rank``, ``recvs`` (two), ``situation``, ``messages`` (two, each a pair or
``None``), ``verdict``, ``comm``, ``consumption``, ``sites`` (two), then the
optional ``confirmed``, ``suppressed``, ``group``) and an exact conflict
(Cypher and Leu: ``method``, ``rank``, ``recvs`` (one), ``messages`` (two
pairs), ``verdict``, then the optional ``suppressed``, ``group``), with
integers within 64 bits; other shapes raise :class:`ValueError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import orjson

from mpvis.analysis import _cjson
from mpvis.model.classifier import VERDICTS
from mpvis.model.races import Race, RaceColumns

__all__ = ["COLUMNS", "KEY_COLUMNS", "NONE", "STRING_COLUMNS", "RaceTable", "column_dtype",
           "columns_in", "packed_keys", "rows_in"]

IntArray = npt.NDArray[np.int64]
#: An integer column's ``None`` (ranks, seqs, situations and comms never take it).
NONE = int(np.iinfo(np.int64).min)
#: Columns: ``exact`` (0 classifier, 1 exact), ``scope``, ``verdict``,
#: ``consumption``, ``site1``, ``site2`` (ids into :attr:`RaceTable.strings`,
#: -1 for ``None``), ``confirmed`` (-1 absent, 0, 1), ``suppressed`` (0, 1),
#: ``group`` (-1 absent), and the integers (:data:`NONE` for ``None``;
#: ``m1r, m1s`` the first message's rank and seq, ``m2r, m2s`` the second's).
COLUMNS = ("exact", "scope", "rank", "recv1", "recv2", "situation", "m1r", "m1s", "m2r", "m2s",
           "verdict", "comm", "consumption", "site1", "site2", "confirmed", "suppressed", "group")
#: The columns of a race's key (:meth:`RaceTable.keys`).
KEY_COLUMNS = ("rank", "recv1", "m1r", "m1s", "m2r", "m2s")
STRING_COLUMNS = ("scope", "verdict", "consumption", "site1", "site2")
_SMALL: dict[str, type[np.signedinteger[Any]]] = {
    "exact": np.int8, "confirmed": np.int8, "suppressed": np.int8, "group": np.int32,
    **dict.fromkeys(STRING_COLUMNS, np.int32)}
_CLASSIFIER_KEYS = ("method", "scope", "rank", "recvs", "situation", "messages", "verdict",
                    "comm", "consumption", "sites")
_EXACT_KEYS = ("method", "rank", "recvs", "messages", "verdict")
_OPTIONAL = ("confirmed", "suppressed", "group")
#: Entries built at a time: a chunk's dicts live only while it is used.
CHUNK = 1 << 14
#: Entries written as JSON at a time (about 150 bytes each).
JSON_CHUNK = 1 << 14


def column_dtype(c: str) -> type[np.signedinteger[Any]]:
    """The NumPy type of column ``c``."""
    return _SMALL.get(c, np.int64)


class _Strings:
    """A string table being built: ``None`` is -1."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.names = list(names)
        self.ids: dict[object, int] = {None: -1, **{s: i for i, s in enumerate(self.names)}}

    def id(self, s: object) -> int:
        i = self.ids.get(s)
        if i is None:
            if not isinstance(s, str):
                raise ValueError(f"not a string: {s!r}")
            i = self.ids[s] = len(self.names)
            self.names.append(s)
        return i

    def column(self, values: Iterable[object]) -> npt.NDArray[np.int32]:
        vals = list(values)
        for v in dict.fromkeys(vals):
            self.id(v)
        return np.fromiter(map(self.ids.__getitem__, vals), dtype=np.int32, count=len(vals))

    def coded(self, codes: npt.NDArray[Any], names: Sequence[str | None]) -> npt.NDArray[np.int32]:
        """:meth:`column` of ``names[c]`` for each code ``c`` (-1: ``None``), with
        the same ids, without a string per value."""
        uniq, first = np.unique(codes, return_index=True)
        uniq = uniq[np.argsort(first)]  # in order of first appearance, as column's
        ids = np.array([self.id(None if c < 0 else names[c]) for c in uniq.tolist()],
                       dtype=np.int32)
        order = np.argsort(uniq)
        return ids[order][np.searchsorted(uniq[order], codes)]


class RaceTable(Sequence[dict[str, Any]]):
    """Race entries as columns (module docstring); ``strings`` names the string ids."""

    __slots__ = ("cols", "strings")

    def __init__(self, cols: dict[str, npt.NDArray[Any]], strings: Sequence[str]) -> None:
        lengths = {len(cols[c]) for c in COLUMNS}
        if len(lengths) > 1 or set(cols) != set(COLUMNS):
            raise ValueError("race columns of different lengths or names")
        self.cols = {c: np.asarray(cols[c], dtype=column_dtype(c)) for c in COLUMNS}
        self.strings = list(strings)

    # ------------------------------------------------------------ building
    @classmethod
    def empty(cls) -> RaceTable:
        return cls({c: np.zeros(0, dtype=column_dtype(c)) for c in COLUMNS}, [])

    @classmethod
    def from_classifier(cls, races: Sequence[Race]) -> RaceTable:
        """The classifier's pairs (:meth:`Race.to_report`), in the given order."""
        s = _Strings()
        ints = np.array([(r.rank, *r.recvs, r.situation, *(r.messages[0] or (NONE, NONE)),
                          *(r.messages[1] or (NONE, NONE)), r.comm) for r in races],
                        dtype=np.int64).reshape(len(races), 9)
        n = len(races)
        cols: dict[str, npt.NDArray[Any]] = {
            "exact": np.zeros(n, np.int8), "confirmed": np.full(n, -1, np.int8),
            "suppressed": np.zeros(n, np.int8), "group": np.full(n, -1, np.int32),
            "scope": s.column(r.scope for r in races),
            "verdict": s.column(r.verdict for r in races),
            "consumption": s.column(r.consumption for r in races),
            "site1": s.column(r.sites[0] for r in races),
            "site2": s.column(r.sites[1] for r in races),
        }
        for k, c in enumerate(("rank", "recv1", "recv2", "situation", "m1r", "m1s", "m2r",
                               "m2s", "comm")):
            cols[c] = ints[:, k]
        return cls(cols, s.names)

    @classmethod
    def from_race_columns(cls, races: RaceColumns, rows: npt.NDArray[Any]) -> RaceTable:
        """:meth:`from_classifier` of the races ``rows`` of ``races``, from its
        columns (:meth:`RaceColumns.report_columns`): no :class:`Race` per row."""
        c = races.report_columns(rows)
        n = len(rows)
        s = _Strings()
        cols: dict[str, npt.NDArray[Any]] = {
            "exact": np.zeros(n, np.int8), "confirmed": np.full(n, -1, np.int8),
            "suppressed": np.zeros(n, np.int8), "group": np.full(n, -1, np.int32),
            "scope": s.coded(np.zeros(n, np.int64), [races.scope]),
            "verdict": s.coded(c["verdict"], VERDICTS),
            "consumption": s.coded(2 * (c["cons1"] >= 0) + (c["cons2"] >= 0),
                                   ["R-R-", "R-RC", "RCR-", "RCRC"]),
        }
        names = races.facts.store.sites
        cols["site1"], cols["site2"] = s.coded(c["site1"], names), s.coded(c["site2"], names)
        for k in ("rank", "recv1", "recv2", "situation", "comm"):
            cols[k] = c[k]
        for k in ("m1r", "m1s", "m2r", "m2s"):
            cols[k] = np.where(c[k[:2] + "r"] >= 0, c[k], NONE)
        return cls(cols, s.names)

    @classmethod
    def from_conflicts(cls, keys: Iterable[tuple[int, int, int, int, int, int]] | IntArray
                       ) -> RaceTable:
        """Exact entries (``verdict`` legitimate) of conflicts ``(rank, recv, s1 rank,
        s1 seq, s2 rank, s2 seq)`` (:func:`mpvis.analysis.exact_events.exact_entry`),
        or of an ``(n, 6)`` integer array of them (its columns used as they are if 64-bit)."""
        a = (keys if isinstance(keys, np.ndarray)
             else np.fromiter(chain.from_iterable(keys), dtype=np.int64).reshape(-1, 6))
        n = len(a)
        # Columns every exact entry shares are read-only broadcasts of one value (no
        # memory): only "confirmed", "suppressed" and "group" are ever written.
        cols: dict[str, npt.NDArray[Any]] = {
            "exact": np.ones(n, np.int8), "confirmed": np.full(n, -1, np.int8),
            "suppressed": np.zeros(n, np.int8), "group": np.full(n, -1, np.int32),
            "verdict": np.broadcast_to(np.int32(0), n),
            **{c: np.broadcast_to(np.int64(NONE), n) for c in ("recv2", "situation", "comm")},
            **{c: np.broadcast_to(np.int32(-1), n)
               for c in ("scope", "consumption", "site1", "site2")},
        }
        for k, c in enumerate(("rank", "recv1", "m1r", "m1s", "m2r", "m2s")):
            cols[c] = a[:, k]
        return cls(cols, ["legitimate"])

    @classmethod
    def from_entries(cls, entries: Iterable[dict[str, Any]]) -> RaceTable:
        """The table of report entries (module docstring; :class:`ValueError` for
        another shape)."""
        s = _Strings()
        rows: list[tuple[int, ...]] = []
        for e in entries:
            rows.append(_row(e, s))
        a = np.array(rows, dtype=object).reshape(len(rows), len(COLUMNS))
        try:
            cols = {c: a[:, k].astype(column_dtype(c)) for k, c in enumerate(COLUMNS)}
        except OverflowError:
            raise ValueError("an integer beyond 64 bits") from None
        return cls(cols, s.names)

    @staticmethod
    def concat(tables: Sequence[RaceTable], *, consume: bool = False) -> RaceTable:
        """The rows of ``tables`` one after the other.  ``consume``: the tables are
        emptied as they are joined (each column let go once joined: the joined
        table and the parts are not all held at once; on the 1M-event trace's
        report about 20 MiB less at the peak)."""
        s = _Strings()
        luts = [np.array([-1, *map(s.id, t.strings)], dtype=np.int32) for t in tables]
        if not tables:
            return RaceTable.empty()
        # a column at a time: the string columns' recoded copies live only while
        # their column is joined (on 1M events, 6 MB less at the report's peak)
        pairs = list(zip(tables, luts, strict=True))
        cols: dict[str, npt.NDArray[Any]] = {}
        for c in COLUMNS:
            parts = [t.cols[c] for t in tables]
            if consume:  # a fresh empty column: a slice would keep its base alive
                for t in tables:
                    t.cols[c] = np.zeros(0, t.cols[c].dtype)
            cols[c] = np.concatenate([lut[p + 1] for p, (_, lut) in zip(parts, pairs, strict=True)]
                                     if c in STRING_COLUMNS else parts)
            del parts
        return RaceTable(cols, s.names)

    def reorder(self, rows: npt.NDArray[np.integer[Any]]) -> RaceTable:
        """:meth:`take` of ``rows`` in place, a column at a time (the table and
        one column's copy held, not two tables); returns the table."""
        for c in COLUMNS:
            self.cols[c] = self.cols[c][rows]
        return self

    def take(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.integer[Any]]) -> RaceTable:
        """The table of the given rows (indices or a boolean mask), in that order."""
        return RaceTable({c: a[rows] for c, a in self.cols.items()}, self.strings)

    # ------------------------------------------------------------ queries
    def ids(self, *names: str) -> npt.NDArray[np.int32]:
        """The string ids of ``names`` present in the table (absent names skipped)."""
        return np.array([i for i, s in enumerate(self.strings) if s in names], dtype=np.int32)

    def has(self, column: str, *names: str) -> npt.NDArray[np.bool_]:
        """Rows whose string ``column`` is one of ``names``."""
        return np.isin(self.cols[column], self.ids(*names))

    def key_columns(self, rows: npt.NDArray[np.bool_]) -> Iterator[IntArray]:
        """The columns of :meth:`keys` at ``rows`` (a mask), one at a time (each
        made when asked for: no matrix, no list of them)."""
        c = self.cols
        return (c[k][rows] for k in KEY_COLUMNS)

    def keys(self) -> IntArray:
        """``(rank, recv1, m1r, m1s, m2r, m2s)`` of each row: an exact entry's
        conflict, a classifier pair's (first receive, both messages)."""
        c = self.cols
        return np.stack([c[k] for k in KEY_COLUMNS], axis=1)

    # ------------------------------------------------------------ entries
    def __len__(self) -> int:
        return len(self.cols["exact"])

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> RaceTable: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | RaceTable:
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        n = len(self)
        if not -n <= i < n:
            raise IndexError("race entry index out of range")
        i %= n
        return self.entries(i, i + 1)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for lo in range(0, len(self), CHUNK):
            yield from self.entries(lo, lo + CHUNK)

    def rows(self) -> Iterator[tuple[Any, ...]]:
        """Each row's values in :data:`COLUMNS` order, as Python values, string
        columns as their strings (``None`` for -1), :data:`NONE` left as it is."""
        text = [None, *self.strings]
        for lo in range(0, len(self), CHUNK):
            part = [self.cols[c][lo:lo + CHUNK].tolist() for c in COLUMNS]
            for c in STRING_COLUMNS:
                k = COLUMNS.index(c)
                part[k] = [text[i + 1] for i in part[k]]
            yield from zip(*part, strict=True)

    def json_chunks(self) -> Iterator[bytes]:
        """The entries as JSON, :data:`JSON_CHUNK` at a time: each piece is
        ``orjson.dumps(chunk)`` without its brackets (so the pieces joined by
        commas, in brackets, are the bytes of ``orjson.dumps(list(self))``),
        written from the columns in C (``_cjson.race_rows``: the shapes and key
        orders of the module docstring), with no dict or bytes per entry."""
        text = [b"null", *map(orjson.dumps, self.strings)]  # string id + 1 -> its JSON
        cols = [self.cols[c] for c in COLUMNS]
        n = len(self)
        for lo in range(0, n, JSON_CHUNK):
            yield _cjson.race_rows(cols, text, lo, min(lo + JSON_CHUNK, n))

    def entries(self, lo: int = 0, hi: int | None = None) -> list[dict[str, Any]]:
        """Entries ``lo:hi`` as report dicts (module docstring's key order)."""
        table = np.array([None, *self.strings], dtype=object)
        part: list[list[Any]] = []
        for c in COLUMNS:
            a = self.cols[c][lo:hi]
            if c in STRING_COLUMNS:
                part.append(table[a + 1].tolist())
            else:
                part.append(a.tolist())
        out: list[dict[str, Any]] = []
        append = out.append
        for (exact, scope, rank, r1, r2, situation, m1r, m1s, m2r, m2s, verdict, comm,
             consumption, site1, site2, confirmed, suppressed, group) in zip(*part, strict=True):
            if exact:
                e: dict[str, Any] = {"method": "exact", "rank": rank, "recvs": [r1],
                                     "messages": [[m1r, m1s], [m2r, m2s]], "verdict": verdict}
            else:
                e = {"method": "classifier", "scope": scope, "rank": rank, "recvs": [r1, r2],
                     "situation": None if situation == NONE else situation,
                     "messages": [None if m1r == NONE else [m1r, m1s],
                                  None if m2r == NONE else [m2r, m2s]],
                     "verdict": verdict, "comm": None if comm == NONE else comm,
                     "consumption": consumption, "sites": [site1, site2]}
                if confirmed >= 0:
                    e["confirmed"] = confirmed == 1
            if suppressed:
                e["suppressed"] = True
            if group >= 0:
                e["group"] = group
            append(e)
        return out


def _row(e: dict[str, Any], s: _Strings) -> tuple[Any, ...]:
    """The column values of entry ``e`` (:data:`COLUMNS` order)."""
    method = e.get("method")
    keys = tuple(e)
    base = _EXACT_KEYS if method == "exact" else _CLASSIFIER_KEYS
    extra = keys[len(base):]
    allowed = _OPTIONAL[1:] if method == "exact" else _OPTIONAL
    if (method not in ("classifier", "exact") or keys[:len(base)] != base
            or list(extra) != [k for k in allowed if k in extra]):
        raise ValueError(f"a race entry of unknown shape: {sorted(e)}")
    if e.get("suppressed", True) is not True or type(e.get("group", 0)) is not int:
        raise ValueError("a race entry's suppressed must be true, its group an int")
    recvs, msgs = e["recvs"], e["messages"]
    _check_ints(recvs, 1 if method == "exact" else 2)
    if type(msgs) is not list or len(msgs) != 2:
        raise ValueError("a race entry's messages must be two")
    pairs = []
    for m in msgs:
        if m is None and method != "exact":
            pairs += [NONE, NONE]
        else:
            _check_ints(m, 2)
            pairs += m
    confirmed = e.get("confirmed")
    if confirmed is not None and type(confirmed) is not bool:
        raise ValueError("a race entry's confirmed must be a boolean")
    rank = e["rank"]
    _check_ints([rank], 1)
    if method == "exact":
        return (1, -1, rank, recvs[0], NONE, NONE, *pairs, s.id(e["verdict"]), NONE, -1, -1, -1,
                -1, int("suppressed" in e), e.get("group", -1))
    sites = e["sites"]
    if type(sites) is not list or len(sites) != 2:
        raise ValueError("a race entry's sites must be two")
    situation, comm = e["situation"], e["comm"]
    for v in (situation, comm):
        if v is not None:
            _check_ints([v], 1)
    return (0, s.id(e["scope"]), rank, *recvs, NONE if situation is None else situation, *pairs,
            s.id(e["verdict"]), NONE if comm is None else comm, s.id(e["consumption"]),
            s.id(sites[0]), s.id(sites[1]), -1 if confirmed is None else int(confirmed),
            int("suppressed" in e), e.get("group", -1))


def _check_ints(values: object, n: int) -> None:
    if (type(values) is not list or len(values) != n
            or any(type(v) is not int or v == NONE for v in values)):
        raise ValueError(f"expected {n} integer(s), got {values!r}")


def rows_in(query: IntArray, among: IntArray) -> npt.NDArray[np.bool_]:
    """For each row of ``query`` (an ``(n, k)`` integer array), whether it is a row
    of ``among`` (``(m, k)``): :func:`columns_in` of their columns."""
    return columns_in(list(np.asarray(query).T), list(np.asarray(among).T))


def packed_keys(columns: Iterable[IntArray]) -> list[IntArray]:
    """The rows of ``columns`` (integer arrays of one length, taken one at a time:
    a generator keeps one in memory) as few 64-bit keys: adjacent columns are
    combined into one key while their value ranges allow, so two rows are
    equal exactly when their keys are (not an order of rows)."""
    keys: list[IntArray] = []
    span = 0
    for c in columns:
        if not len(c):
            keys.append(np.zeros(0, dtype=np.int64))
            continue
        lo = int(c.min())
        width = int(c.max()) - lo + 1
        col = c.astype(np.int64)
        col -= lo  # now 0 .. width - 1: a digit of the key, if it still fits
        if keys and span * width < 1 << 62:
            keys[-1] = keys[-1] * width + col
            span *= width
        else:
            keys.append(col)
            span = width
    return keys


def columns_in(query: Iterable[IntArray], among: Iterable[IntArray]) -> npt.NDArray[np.bool_]:
    """Whether each row of the columns ``query`` (``k`` arrays of ``n`` integers)
    is a row of the columns ``among`` (``k`` arrays of ``m``), the columns taken
    a pair at a time (generators: one pair in memory, beside the keys).

    The columns are packed into as few 64-bit keys as their value ranges allow
    (the report's race keys, ranks and seqs, fit one on a 1M-event trace), then
    one membership test of the keys (``np.isin``) or, for several, one
    lexicographic sort of both where each run of equal rows is a hit for its
    query rows if it holds a row of ``among``: no ``(n + m, k)`` matrix.  One key:
    the ``among`` keys sorted and each query key searched there (``np.isin``
    sorts both sides together: about 18 MiB more at the 1M-event report's
    peak)."""
    sizes: list[int] = []

    def pairs() -> Iterator[IntArray]:
        for q, a in zip(query, among, strict=True):
            sizes[:] = [len(q), len(a)]
            yield np.concatenate([q, a])

    keys = packed_keys(pairs())
    n, m = sizes or (0, 0)
    if n == 0 or m == 0:
        return np.zeros(n, dtype=bool)
    if len(keys) == 1:  # np.isin, in less memory: only ``among`` sorted, then searched
        among_keys = np.sort(keys[0][n:])
        query_keys = keys[0][:n]
        del keys
        at = np.searchsorted(among_keys, query_keys)
        np.minimum(at, m - 1, out=at)
        hit: npt.NDArray[np.bool_] = among_keys[at] == query_keys
        return hit
    order = np.lexsort(keys[::-1])
    new_run = np.zeros(n + m, dtype=bool)
    new_run[0] = True
    for k in keys:
        sk = k[order]
        new_run[1:] |= sk[1:] != sk[:-1]
    run = np.cumsum(new_run) - 1
    has_among = np.bincount(run, weights=order >= n, minlength=int(run[-1]) + 1) > 0
    hit = np.empty(n + m, dtype=bool)
    hit[order] = has_among[run]
    return hit[:n]
