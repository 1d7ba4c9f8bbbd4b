"""Batch extraction and validation of records into columns, one group of records at a time.

The manager's and the loader's hot path.  Records of one kind share their key
set, so a batch of dicts is split once into groups of records with the same
key tuple and kind (:class:`_Group`).  In a group every record has the same
fields, so presence and absence are known once for the group, and each field
is pulled once for the whole group with a C-level ``map(itemgetter(f), ...)``.
That one list serves both halves: the per-record rules of the spec are checked
on it (types with ``set(map(type, ...))``, ranges with ``min``/``max`` of its
int64 array) and the same array becomes the group's part of a column (NumPy
fancy assignment puts it at the records' positions).  Grouping itself is cheap:
records are sorted by kind and number of keys in NumPy, and a part whose
records turn out to differ in keys is split by key tuples.

The group checks (:func:`_group_ok`) accept a group only if
:func:`mpvis.protocol.records.check_record` accepts each of its records.  They
may reject a group that is valid after all (an ``int`` subclass, a list of
requests to inspect record by record...): the records of a rejected group are
then checked one by one with ``check_record``, which decides, and names the
first bad record and its rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import add, itemgetter, mul
from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC
from mpvis.protocol.record_types import Record

assert F_BLOCKING == 1, "_columns adds the blocking bools as they are"

#: Fields held in columns; anything else in a record goes to the model's extras.
#: ``call`` (optional, any kind) is a column when it is an integer in ``[0, 2**31)``,
#: else an extra.
COLUMN_FIELDS = frozenset({
    "rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking", "sync",
    "req", "recv", "send", "size", "call",
})

#: NumPy dtype of each column of a :class:`Batch` (all 64-bit until the model
#: checks ranges; the model stores them narrower, see :mod:`mpvis.model.columns`).
INT_COLUMNS = ("rank", "seq", "comm", "peer", "tag", "req", "ref", "sseq", "size", "call")
#: Columns the model stores as 32-bit integers: values must fit.
INT32_COLUMNS = ("rank", "seq", "comm", "peer", "tag", "req", "ref", "sseq")
_INT32_MAX = 2**31 - 1
#: Integer columns copied from one field of any kind of record: (column, field).
_COMMON_FIELDS = frozenset({"rank", "seq", "kind", "t", "site", "comm"})
#: The fields each kind keeps in columns (those its rules check); any other field,
#: even one named like a column (``"blocking"`` on a ``final``), is an extra.
_KIND_FIELDS: dict[str | None, frozenset[str]] = {
    R.SEND: _COMMON_FIELDS | {"dest", "tag", "blocking", "sync", "req", "size"},
    R.RECV: _COMMON_FIELDS | {"src", "tag", "blocking", "req"},  # "sync" is an extra
    R.CONSUME: _COMMON_FIELDS | {"recv", "src", "tag", "send"},
}

_PLAIN_INTS = (("rank", "rank"), ("seq", "seq"), ("comm", "comm"), ("tag", "tag"),
               ("req", "req"), ("ref", "recv"), ("size", "size"))
#: The record field behind each integer column, for error messages.
_FIELD_OF = {"peer": "dest/src", "ref": "recv", "sseq": "send"}
_NONE = type(None)
_NUMBERS = frozenset({int, float, _NONE})
_SITES = frozenset({str, _NONE})
_SCALARS = frozenset({int, float, str, bool, _NONE})
#: Groups up to this size check ranges with Python's ``min``/``max`` (no NumPy call overhead).
_SHORT = 200
#: Batches shorter than this are checked record by record: grouping has a fixed
#: cost (NumPy calls) that ``check_record`` (about 1.7 us a record) beats on so few.
_FEW = 96


@dataclass
class Batch:
    """Columns of the accepted prefix ``[0, n)`` of a batch, and the first error.

    Every column is a NumPy array of length ``n``: ``code`` (kind code, int8),
    ``flags`` (``F_BLOCKING * blocking + F_SYNC * sync``, int8), ``t`` (float64, NaN when absent),
    ``site`` (ids in a :class:`SiteTable`, -1 when absent) and the int64
    columns of :data:`INT_COLUMNS`: ``peer`` is a send's ``dest`` or a
    receive's or consume's ``src``, ``ref`` a consume's ``recv``, ``sseq`` the
    seq of a consume's ``send`` (its rank is ``src``), ``call`` the record's
    ``call`` (see :data:`COLUMN_FIELDS`), -1 where absent.
    ``extras`` maps an index to the record's fields held in no column.
    ``error_rank``/``error_seq`` locate the record that broke ``error`` (the
    record at index ``n``), ``None`` when it has no integer ``rank``/``seq``.
    """

    n: int
    rank: Any
    seq: Any
    code: Any
    t: Any
    site: Any
    comm: Any
    peer: Any
    tag: Any
    flags: Any
    req: Any
    ref: Any
    sseq: Any
    size: Any
    call: Any
    extras: dict[int, dict[str, Any]] = field(default_factory=dict)
    error: R.RecordError | None = None
    error_rank: int | None = None
    error_seq: int | None = None


class SiteTable:
    """Call sites (``"file:line"``) numbered in order of first appearance."""

    __slots__ = ("ids", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str | None, int] = {None: -1}

    def add(self, site: str) -> int:
        """The id of ``site``, numbering it if new."""
        i = self.ids.get(site)
        if i is None:
            i = self.ids[site] = len(self.names)
            self.names.append(site)
        return i


class _Group:
    """Records of a batch with one key set and one ``kind`` (``None``: unknown or
    missing), at the batch positions ``idx`` (ascending).

    ``vals[f]`` holds field ``f`` of every record, for each key ``f`` but
    ``kind``; the types of a field and its int64 array are computed on demand,
    once.  Raises ``KeyError`` if a record lacks a key of the first.
    """

    __slots__ = ("_arrays", "_types", "idx", "keys", "kind", "recs", "vals")

    def __init__(self, idx: npt.NDArray[np.intp], recs: list[Record], kind: str | None,
                 vals: dict[str, list[Any]] | None = None) -> None:
        self.idx = idx
        self.recs = recs
        self.kind = kind
        self.keys = tuple(recs[0]) if recs else ()
        self.vals = vals if vals is not None else {
            f: list(map(itemgetter(f), recs)) for f in self.keys if f != "kind"}
        self._types: dict[str, set[type]] = {}
        self._arrays: dict[str, npt.NDArray[np.int64]] = {}

    def types(self, f: str) -> set[type]:
        """The types of field ``f`` (a key of the group)."""
        t = self._types.get(f)
        if t is None:
            t = self._types[f] = set(map(type, self.vals[f]))
        return t

    def ints(self, f: str) -> npt.NDArray[np.int64]:
        """Field ``f`` (a key of the group, of integers) as int64, see :func:`_int64`."""
        a = self._arrays.get(f)
        if a is None:
            a = self._arrays[f] = _int64(self.vals[f])
        return a

    def head(self, n: int) -> _Group:
        """The group's records at batch positions below ``n``."""
        k = int(np.searchsorted(self.idx, n))
        return _Group(self.idx[:k], self.recs[:k], self.kind,
                      {f: v[:k] for f, v in self.vals.items()})


def _groups(batch: list[Record]) -> list[_Group]:
    """``batch`` (dicts) split into groups of one key set and one ``kind``.

    Records are first sorted by kind and number of keys (cheap, in NumPy); a
    part whose records turn out to differ in keys is split by key tuples.
    Raises ``TypeError`` if a ``kind`` is unhashable.
    """
    n = len(batch)
    code_of: Any = R.KIND_CODE.get
    codes = np.fromiter(map(code_of, map(dict.get, batch, repeat("kind")), repeat(-1)),
                        dtype=np.int64, count=n)
    shape = np.fromiter(map(len, batch), dtype=np.int64, count=n) * 16 + codes + 1
    order = np.argsort(shape, kind="stable")
    cuts = np.flatnonzero(np.diff(shape[order])) + 1
    if not len(cuts):
        parts = [(order, batch)] if n else []
    else:
        rec = batch.__getitem__
        parts = [(idx, list(map(rec, idx.tolist()))) for idx in np.split(order, cuts)]
    groups = []
    for idx, recs in parts:
        code = int(codes[idx[0]])
        kind = R.EVENT_KINDS[code] if code >= 0 else None
        try:
            groups.append(_Group(idx, recs, kind))
        except KeyError:  # same kind and length, different keys
            split: dict[tuple[Any, ...], list[int]] = {}
            for j, keys in enumerate(map(tuple, recs)):
                split.setdefault(keys, []).append(j)
            groups.extend(_Group(idx[js], [recs[j] for j in js], kind) for js in split.values())
    return groups


# ---------------------------------------------------------------- group checks
# Each is True only if check_record accepts every record of the group.

def _ints(vals: list[Any]) -> bool:
    return set(map(type, vals)) == {int}


def _int_field(g: _Group, f: str, lo: int, hi: int | None = None) -> bool:
    """Field ``f`` is present, an ``int`` (not a bool) in ``[lo, hi)``."""
    if f not in g.vals or g.types(f) != {int}:
        return False
    if len(g.idx) > _SHORT:  # NumPy on the column's array (needed anyway)
        a = g.ints(f)
        low, high = int(a.min()), int(a.max())
    else:  # no per-call cost
        low, high = min(g.vals[f]), max(g.vals[f])
    return low >= lo and (hi is None or high < hi)


def _bool_field(g: _Group, f: str) -> bool:
    return f in g.vals and g.types(f) == {bool}


def _name_field(g: _Group, f: str) -> bool:
    """Field ``f`` is present, a non-empty string."""
    return f in g.vals and g.types(f) == {str} and "" not in g.vals[f]


def _reqs_ok(g: _Group) -> bool:
    """A nonblocking send or receive carries an integer ``req`` (``blocking`` checked)."""
    blocking = g.vals["blocking"]
    if False not in blocking:
        return True
    if "req" not in g.vals:
        return False
    return g.types("req") == {int} or _ints(
        [r for r, b in zip(g.vals["req"], blocking, strict=True) if not b])


def _send_ok(g: _Group, nprocs: int) -> bool:
    return (_int_field(g, "dest", 0, nprocs) and _int_field(g, "tag", 0)
            and _bool_field(g, "blocking") and _bool_field(g, "sync") and _reqs_ok(g)
            and ("size" not in g.vals or _int_field(g, "size", 0)))


def _recv_ok(g: _Group, nprocs: int) -> bool:
    return (_int_field(g, "src", -1, nprocs) and _int_field(g, "tag", -1)
            and _bool_field(g, "blocking") and _reqs_ok(g))


def _consume_ok(g: _Group, nprocs: int) -> bool:
    if not (_int_field(g, "recv", 0) and _int_field(g, "src", 0, nprocs)
            and _int_field(g, "tag", 0)):
        return False
    if "send" not in g.vals:
        return True
    send = g.vals["send"]
    if g.types("send") != {list} or set(map(len, send)) != {2}:
        return False
    ranks = list(map(itemgetter(0), send))
    seqs = list(map(itemgetter(1), send))
    return _ints(ranks) and _ints(seqs) and min(seqs) >= 0 and ranks == g.vals["src"]


def _wait_ok(g: _Group, nprocs: int) -> bool:
    return ("reqs" in g.vals and g.types("reqs") == {list}
            and set(map(type, chain.from_iterable(g.vals["reqs"]))) <= {int})


def _coll_ok(g: _Group, nprocs: int) -> bool:
    return (_name_field(g, "op")
            and ("root" not in g.vals or _int_field(g, "root", 0))
            and ("count" not in g.vals or _int_field(g, "count", 0))
            and all(g.types(f) == {str} for f in ("dtype", "redop") if f in g.vals))


def _coll_exit_ok(g: _Group, nprocs: int) -> bool:
    return _name_field(g, "op")


def _lock_ok(g: _Group, nprocs: int) -> bool:
    return _name_field(g, "lock")


def _state_ok(g: _Group, nprocs: int) -> bool:
    return ("vars" in g.vals and g.types("vars") == {dict} and _SCALARS.issuperset(
        map(type, chain.from_iterable(map(dict.values, g.vals["vars"])))))


def _final_ok(g: _Group, nprocs: int) -> bool:
    return True


_KIND_OK = {
    R.SEND: _send_ok, R.RECV: _recv_ok, R.CONSUME: _consume_ok, R.WAIT: _wait_ok,
    R.COLL: _coll_ok, R.COLL_EXIT: _coll_exit_ok, R.LOCK: _lock_ok, R.LOCKED: _lock_ok,
    R.UNLOCK: _lock_ok, R.STATE: _state_ok, R.FINAL: _final_ok,
}


def _group_ok(g: _Group, nprocs: int) -> bool:
    """Whether :func:`~mpvis.protocol.records.check_record` surely accepts every
    record of ``g`` (``False`` means: check them one by one)."""
    kind_ok = None if g.kind is None else _KIND_OK.get(g.kind)  # None: one by one
    return (kind_ok is not None
            and _int_field(g, "rank", 0, nprocs) and _int_field(g, "seq", 0)
            and ("t" not in g.vals or g.types("t") <= _NUMBERS)
            and ("site" not in g.vals or g.types("site") <= _SITES)
            and ("comm" not in g.vals or _int_field(g, "comm", 0))
            and kind_ok(g, nprocs))


def _check_each(batch: list[Any], nprocs: int) -> tuple[int, R.RecordError | None]:
    """:func:`valid_prefix` by ``check_record`` on one record after another."""
    for i, rec in enumerate(batch):
        try:
            R.check_record(rec, nprocs)
        except R.RecordError as exc:
            return i, exc
    return len(batch), None


def _check_groups(groups: list[_Group], size: int, nprocs: int
                  ) -> tuple[int, R.RecordError | None]:
    """:func:`valid_prefix` of a batch of ``size`` records split into ``groups``."""
    n, error = size, None
    for g in groups:
        if _group_ok(g, nprocs):
            continue
        for i, rec in zip(g.idx.tolist(), g.recs, strict=True):
            if i >= n:
                break
            try:
                R.check_record(rec, nprocs)
            except R.RecordError as exc:
                n, error = i, exc
                break
    return n, error


def valid_prefix(batch: list[Record], nprocs: int) -> tuple[int, R.RecordError | None]:
    """Length of the prefix of ``batch`` passing every per-record rule of the
    spec, and the error of the record just after it (``None`` if all pass).

    The rules are those of :func:`mpvis.protocol.records.check_record`, with
    ``nprocs`` bounding ranks; the error is the one it raises."""
    groups = _dict_groups(batch) if len(batch) >= _FEW else None
    if groups is None:
        return _check_each(batch, nprocs)
    return _check_groups(groups, len(batch), nprocs)


def _dict_groups(batch: list[Any]) -> list[_Group] | None:
    """The groups of ``batch``, or ``None`` if it holds a record that is not a
    ``dict`` or has an unhashable ``kind`` (for ``check_record`` to name)."""
    if not set(map(type, batch)) <= {dict}:
        return None
    try:
        return _groups(batch)
    except TypeError:
        return None


# ------------------------------------------------------------------ extraction

def extract(batch: list[Record], nprocs: int, sites: SiteTable, validate: bool = True
            ) -> Batch:
    """Columns of ``batch``; with ``validate``, the longest valid prefix and its error.

    With ``validate``, the prefix and error are those of :func:`valid_prefix`;
    without it the records must pass :func:`~mpvis.protocol.records.check_record`
    (they are not checked).  Site strings of the prefix are numbered in
    ``sites``.  Integers the model stores in 32 bits must fit them (a record
    with a larger ``seq``, ``tag``... ends the prefix, whether or not
    ``validate`` is set).  Fields of a record outside :data:`COLUMN_FIELDS` go
    to ``extras``.
    """
    n = len(batch)
    error: R.RecordError | None = None
    if validate:
        groups = _dict_groups(batch) if len(batch) >= _FEW else None
        if groups is None:
            n, error = _check_each(batch, nprocs)
            groups = _groups(batch[:n])
        else:
            n, error = _check_groups(groups, n, nprocs)
            if error is not None:
                groups = [g.head(n) for g in groups]
    else:
        groups = _groups(batch)
    out = _columns(groups, n, sites)
    if out.error is None:
        out.error = error
    if out.error is not None and out.n < len(batch):
        bad = batch[out.n]
        if isinstance(bad, dict):
            out.error_rank = _int_or_none(bad.get("rank"))
            out.error_seq = _int_or_none(bad.get("seq"))
    return out


def _columns(groups: list[_Group], n: int, sites: SiteTable) -> Batch:
    """The columns of the first ``n`` records, held in ``groups`` (records all
    passing ``check_record``), cut before the first value too large for the
    model's 32-bit columns (``error`` then states that rule)."""
    ints = {name: np.full(n, -1, dtype=np.int64) for name in INT_COLUMNS}
    ints["comm"][:] = 0
    code = np.zeros(n, dtype=np.int8)
    flags = np.zeros(n, dtype=np.int8)
    t = np.full(n, math.nan)
    extras: list[tuple[int, dict[str, Any]]] = []
    odd: list[tuple[int, str, Any]] = []  # (index, field, value): extras of column fields
    for g in groups:
        idx, vals = g.idx, g.vals
        if not len(idx):
            continue
        code[idx] = R.KIND_CODE[g.kind]  # type: ignore[index]  # None only when invalid
        own = _KIND_FIELDS.get(g.kind, _COMMON_FIELDS)
        if "call" in vals:  # any kind: a column (odd values: extras)
            _call_column(g, ints["call"], odd)
            own = own | {"call"}
        more = [f for f in g.keys if f not in own]
        if "req" in vals and "req" in own and g.types("req") != {int}:
            # only blocking operations (checked) may carry a req that is no integer:
            # such a req is an extra
            reqs = vals["req"]
            ints["req"][idx] = [r if type(r) is int else -1 for r in reqs]
            odd.extend((i, "req", r) for i, r in zip(idx.tolist(), reqs, strict=True)
                       if type(r) is not int)
            own = own - {"req"}
        for name, f in _PLAIN_INTS:
            if f in vals and f in own:
                ints[name][idx] = g.ints(f)
        if "dest" in vals and "dest" in own:
            if _NONE in g.types("dest"):  # no dest: src
                src = vals["src"] if "src" in vals else repeat(-1)
                ints["peer"][idx] = _int64(
                    [s if d is None else d for d, s in zip(vals["dest"], src, strict=False)])
            else:
                ints["peer"][idx] = g.ints("dest")
        elif "src" in vals and "src" in own:
            ints["peer"][idx] = g.ints("src")
        if "send" in vals and g.kind == R.CONSUME:
            send = vals["send"]
            ints["sseq"][idx] = _int64([-1 if s is None else s[1] for s in send]
                                       if _NONE in g.types("send")
                                       else list(map(itemgetter(1), send)))
        if "blocking" in own and ("blocking" in vals or "sync" in vals):
            b = vals.get("blocking") or repeat(False)
            y = (vals.get("sync") if "sync" in own else None) or repeat(False)
            # blocking (a bool) is F_BLOCKING's 1 as it is
            flags[idx] = list(map(add, b, map(mul, repeat(F_SYNC), y)))
        if "t" in vals:
            tv = vals["t"]
            t[idx] = [math.nan if x is None else x for x in tv] if _NONE in g.types("t") else tv
        if len(more) == 1:
            f = more[0]
            extras.extend(zip(idx.tolist(), [{f: v} for v in vals[f]], strict=True))
        elif more:
            rows = zip(*map(vals.__getitem__, more), strict=True)
            extras.extend(zip(idx.tolist(), map(dict, map(zip, repeat(more), rows)),
                              strict=True))
    error = None
    big = _first_too_big(ints)
    if big is not None:
        i, name = big
        n, error = i, R.RecordError(
            f"'{_FIELD_OF.get(name, name)}' is too large (at most {_INT32_MAX})")
    extras.sort(key=itemgetter(0))
    return Batch(
        n=n, code=code[:n], t=t[:n], site=_site_column(groups, n, sites), flags=flags[:n],
        rank=ints["rank"][:n], seq=ints["seq"][:n], comm=ints["comm"][:n],
        peer=ints["peer"][:n], tag=ints["tag"][:n], req=ints["req"][:n],
        ref=ints["ref"][:n], sseq=ints["sseq"][:n], size=ints["size"][:n],
        call=ints["call"][:n],
        extras=_with_odd({i: e for i, e in extras if i < n}, odd, n), error=error,
    )


def _call_column(g: _Group, column: npt.NDArray[np.int64], odd: list[tuple[int, str, Any]]
                 ) -> None:
    """Put the group's ``call`` values in ``column``; those that are no integer in
    ``[0, 2**31)`` (the model's 32-bit column) go to ``odd``, as extras."""
    if _int_field(g, "call", 0, _INT32_MAX + 1):
        column[g.idx] = g.ints("call")
        return
    calls = g.vals["call"]
    fits = [type(c) is int and 0 <= c <= _INT32_MAX for c in calls]
    column[g.idx] = [c if ok else -1 for c, ok in zip(calls, fits, strict=True)]
    odd.extend((i, "call", c) for i, c, ok in zip(g.idx.tolist(), calls, fits, strict=True)
               if not ok)


def _with_odd(extras: dict[int, dict[str, Any]], odd: list[tuple[int, str, Any]], n: int
              ) -> dict[int, dict[str, Any]]:
    """``extras`` with the values of column fields that their column cannot hold
    (the non-integer ``req`` of blocking operations, odd ``call`` values) added."""
    if not odd:
        return extras
    for i, f, v in odd:
        if i < n:
            extras[i] = {**extras.get(i, {}), f: v}
    return dict(sorted(extras.items()))  # in index order, as without odd values


def _site_column(groups: list[_Group], n: int, sites: SiteTable) -> npt.NDArray[np.int64]:
    """The site ids of the first ``n`` records, held in ``groups``; sites new to
    ``sites`` are numbered in order of first appearance."""
    out = np.full(n, -1, dtype=np.int64)
    parts = []
    new: list[tuple[int, str]] = []  # (first position, site) of sites seen first here
    for g in groups:
        if "site" in g.vals:
            k = int(np.searchsorted(g.idx, n))
            vals = g.vals["site"][:k] if k < len(g.idx) else g.vals["site"]
            names = list(dict.fromkeys(vals))
            new.extend((int(g.idx[vals.index(s)]), s) for s in names if s not in sites.ids)
            parts.append((g.idx[:k], vals, names))
    for _, s in sorted(new):
        sites.add(s)
    ids = sites.ids
    for idx, vals, names in parts:
        if len(names) == 1:
            out[idx] = ids[names[0]]
        else:
            out[idx] = np.fromiter(map(ids.__getitem__, vals), dtype=np.int64, count=len(vals))
    return out


def _int64(vals: list[Any]) -> npt.NDArray[np.int64]:
    """``vals`` as int64; a value beyond int64 becomes its nearest bound (too large
    for a column, and still on the same side of every bound the rules check)."""
    try:
        return np.array(vals, dtype=np.int64)
    except OverflowError:
        top, bottom = 2**63 - 1, -2**63
        return np.array([min(max(v, bottom), top) for v in vals], dtype=np.int64)


def _first_too_big(arrays: dict[str, npt.NDArray[np.int64]]) -> tuple[int, str] | None:
    """First (index, column) whose value does not fit the model's 32-bit columns."""
    first: tuple[int, str] | None = None
    for name in INT32_COLUMNS:
        arr = arrays[name]
        if len(arr) and int(arr.max()) > _INT32_MAX:
            i = int(np.argmax(arr > _INT32_MAX))
            if first is None or i < first[0]:
                first = (i, name)
    return first


def _int_or_none(v: object) -> int | None:
    return v if type(v) is int else None
