"""Batch extraction and validation of records into columns, vectorised.

The manager's hot path: one batch of record dicts becomes per-field lists
(built with C-speed comprehensions) and the per-record rules of the spec are
checked on whole columns at once (types with ``set(map(type, ...))``, ranges
with ``min``/``max``).  Only when a column is found wrong does
:func:`extract` fall back to :func:`mpvis.protocol.records.check_record`
record by record, to name the first bad record and its rule.  Rare kinds
(wait, collectives, locks, state, final, unknown) are always checked record by
record; they are few.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.protocol import records as R

Record = dict[str, Any]

K_SEND, K_RECV, K_CONSUME = R.KIND_CODE[R.SEND], R.KIND_CODE[R.RECV], R.KIND_CODE[R.CONSUME]
K_STATE = R.KIND_CODE[R.STATE]
K_WAIT, K_FINAL = R.KIND_CODE[R.WAIT], R.KIND_CODE[R.FINAL]
K_COLL, K_COLL_EXIT = R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT]
_SCALARS = frozenset({int, float, str, bool, type(None)})
F_BLOCKING, F_SYNC = 1, 2  # flags = blocking + 2 * sync

#: Fields held in columns; anything else in a record goes to the model's extras.
COLUMN_FIELDS = frozenset({
    "rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking", "sync",
    "req", "recv", "send", "size",
})
#: Kinds whose per-record rules are checked on whole columns.
_FAST = frozenset({K_SEND, K_RECV, K_CONSUME, K_STATE, K_WAIT, K_FINAL, K_COLL, K_COLL_EXIT})


#: NumPy dtype of each column of a :class:`Batch` (all 64-bit until the model
#: checks ranges; the model stores them narrower, see :mod:`mpvis.model.columns`).
INT_COLUMNS = ("rank", "seq", "comm", "peer", "tag", "req", "ref", "sseq", "size")
#: Columns the model stores as 32-bit integers: values must fit.
INT32_COLUMNS = ("rank", "seq", "comm", "peer", "tag", "req", "ref", "sseq")
_INT32_MAX = 2**31 - 1


@dataclass
class Batch:
    """Columns of the accepted prefix ``[0, n)`` of a batch, and the first error.

    Every column is a NumPy array of length ``n``: ``code`` (kind code, int8),
    ``flags`` (blocking + 2 * sync, int8), ``t`` (float64, NaN when absent),
    ``site`` (ids in a :class:`SiteTable`, -1 when absent) and the int64
    columns of :data:`INT_COLUMNS`: ``peer`` is a send's ``dest`` or a
    receive's or consume's ``src``, ``ref`` a consume's ``recv``, ``sseq`` the
    seq of a consume's ``send`` (its rank is ``src``), -1 where absent.
    ``extras`` maps an index to the record's fields held in no column.
    ``error_rank``/``error_seq`` locate the record that broke ``error``.
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

    def codes(self, sites: list[Any]) -> npt.NDArray[np.int64]:
        """Ids of ``sites`` (``None`` is -1), numbering new ones."""
        ids = self.ids
        for s in set(sites) - ids.keys():
            self.add(s)
        return np.fromiter(map(ids.__getitem__, sites), dtype=np.int64, count=len(sites))


def _ints(vals: list[Any]) -> bool:
    return not vals or set(map(type, vals)) == {int}


def _fast_ok(batch: list[Record], codes: list[int], nprocs: int) -> bool:
    """Whether every record of the fast kinds passes the per-record rules."""
    sends = [d for d, c in zip(batch, codes, strict=True) if c == K_SEND]
    recvs = [d for d, c in zip(batch, codes, strict=True) if c == K_RECV]
    cons = [d for d, c in zip(batch, codes, strict=True) if c == K_CONSUME]
    states: list[Any] = [d.get("vars") for d, c in zip(batch, codes, strict=True)
                         if c == K_STATE]
    if states and not (set(map(type, states)) == {dict} and all(
            _SCALARS.issuperset(map(type, v.values())) for v in states)):
        return False
    waits: list[Any] = [d.get("reqs") for d, c in zip(batch, codes, strict=True) if c == K_WAIT]
    if waits and not (set(map(type, waits)) == {list} and all(_ints(w) for w in waits)):
        return False
    colls = [d for d, c in zip(batch, codes, strict=True) if c in (K_COLL, K_COLL_EXIT)]
    if colls:
        ops: list[Any] = [d.get("op") for d in colls]
        if set(map(type, ops)) != {str} or "" in ops:
            return False
        roots = [d["root"] for d in colls if "root" in d]
        counts = [d["count"] for d in colls if "count" in d]
        if not (_ints(roots) and _ints(counts) and (not roots or min(roots) >= 0)
                and (not counts or min(counts) >= 0)):
            return False
        names = {type(d[f]) for d in colls for f in ("dtype", "redop") if f in d}
        if not names <= {str}:
            return False
    if sends:
        dest: list[Any] = [d.get("dest") for d in sends]
        tag: list[Any] = [d.get("tag") for d in sends]
        if not (_ints(dest) and _ints(tag) and min(dest) >= 0 and max(dest) < nprocs
                and min(tag) >= 0):
            return False
        if {type(d.get("blocking")) for d in sends} != {bool}:
            return False
        if {type(d.get("sync")) for d in sends} != {bool}:
            return False
        if not _ints([d.get("req") for d in sends if not d["blocking"]]):
            return False
        size = [d["size"] for d in sends if "size" in d]
        if not (_ints(size) and (not size or min(size) >= 0)):
            return False
    if recvs:
        src: list[Any] = [d.get("src") for d in recvs]
        tag = [d.get("tag") for d in recvs]
        if not (_ints(src) and _ints(tag) and min(src) >= -1 and max(src) < nprocs
                and min(tag) >= -1):
            return False
        if {type(d.get("blocking")) for d in recvs} != {bool}:
            return False
        if not _ints([d.get("req") for d in recvs if not d["blocking"]]):
            return False
    if cons:
        src = [d.get("src") for d in cons]
        tag = [d.get("tag") for d in cons]
        ref: list[Any] = [d.get("recv") for d in cons]
        if not (_ints(src) and _ints(tag) and _ints(ref) and min(src) >= 0
                and max(src) < nprocs and min(tag) >= 0 and min(ref) >= 0):
            return False
        for d in cons:
            s = d.get("send")
            if s is not None and not (type(s) is list and len(s) == 2 and type(s[0]) is int
                                      and type(s[1]) is int and s[0] == d["src"] and s[1] >= 0):
                return False
    return True


def extract(batch: list[Record], nprocs: int, sites: SiteTable, validate: bool = True
            ) -> Batch:
    """Columns of ``batch``; with ``validate``, the longest valid prefix and its error.

    Site strings are numbered in ``sites``.  Integers the model stores in 32
    bits must fit them (a record with a larger ``seq``, ``tag``... ends the
    prefix, whether or not ``validate`` is set).
    """
    n = len(batch)
    error: R.RecordError | None = None
    if validate:
        n, error = valid_prefix(batch, nprocs)
        if n < len(batch):
            batch = batch[:n]
    get: Any = dict.get
    kind_code: Any = R.KIND_CODE.__getitem__
    codes = list(map(kind_code, map(get, batch, repeat("kind"))))
    ts: list[Any] = list(map(get, batch, repeat("t")))
    if None in ts:
        ts = [math.nan if x is None else x for x in ts]
    dest = list(map(get, batch, repeat("dest")))
    src = list(map(get, batch, repeat("src"), repeat(-1)))
    blocking = map(get, batch, repeat("blocking"), repeat(False))
    sync = map(get, batch, repeat("sync"), repeat(False))
    flags = [b + 2 * y for b, y in zip(blocking, sync, strict=True)]
    send: list[Any] = [-1] * n
    if K_CONSUME in codes:
        for i, c in enumerate(codes):
            if c == K_CONSUME:
                ref = batch[i].get("send")
                if ref is not None:
                    send[i] = ref[1]
    ints = {
        "rank": list(map(get, batch, repeat("rank"))),
        "seq": list(map(get, batch, repeat("seq"))),
        "comm": list(map(get, batch, repeat("comm"), repeat(0))),
        "peer": [s if d is None else d for d, s in zip(dest, src, strict=True)],
        "tag": list(map(get, batch, repeat("tag"), repeat(-1))),
        "req": list(map(get, batch, repeat("req"), repeat(-1))),
        "ref": list(map(get, batch, repeat("recv"), repeat(-1))),
        "sseq": send,
        "size": list(map(get, batch, repeat("size"), repeat(-1))),
    }
    arrays = {name: _int64(vals) for name, vals in ints.items()}
    big = _first_too_big(arrays)
    if big is not None and big[0] < n:
        i, name = big
        n, error = i, R.RecordError(
            f"'{_FIELD_OF.get(name, name)}' is too large (at most {_INT32_MAX})")
        batch = batch[:n]
        arrays = {name: arr[:n] for name, arr in arrays.items()}
        codes, ts = codes[:n], ts[:n]
    out = Batch(
        n=n,
        code=np.array(codes, dtype=np.int8),
        t=np.array(ts, dtype=np.float64),
        site=sites.codes(list(map(get, batch, repeat("site")))),
        flags=np.array(flags[:n], dtype=np.int8),
        error=error,
        rank=arrays["rank"], seq=arrays["seq"], comm=arrays["comm"], peer=arrays["peer"],
        tag=arrays["tag"], req=arrays["req"], ref=arrays["ref"], sseq=arrays["sseq"],
        size=arrays["size"],
    )
    if error is not None and n < len(ints["rank"]):
        out.error_rank = _int_or_none(ints["rank"][n])
        out.error_seq = _int_or_none(ints["seq"][n])
    # Records of a kind mostly share their keys: find the key tuples that carry
    # fields beyond the columns once, then pick the records that have them.
    keys = list(map(tuple, batch))
    odd = {k for k in set(keys) if not COLUMN_FIELDS.issuperset(k)}
    if odd:
        for i, k in enumerate(keys):
            if k in odd:
                d = batch[i]
                out.extras[i] = {f: v for f, v in d.items() if f not in COLUMN_FIELDS}
    return out


#: The record field behind each integer column, for error messages.
_FIELD_OF = {"peer": "dest/src", "ref": "recv", "sseq": "send"}


def _int64(vals: list[Any]) -> npt.NDArray[np.int64]:
    """``vals`` as int64; a value beyond int64 becomes ``2**63 - 1`` (too big anyway)."""
    try:
        return np.array(vals, dtype=np.int64)
    except OverflowError:
        top = 2**63 - 1
        return np.array([min(v, top) for v in vals], dtype=np.int64)


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


def valid_prefix(batch: list[Record], nprocs: int) -> tuple[int, R.RecordError | None]:
    """Length of the prefix of ``batch`` passing every per-record rule of the
    spec, and the error of the record just after it (``None`` if all pass)."""
    if set(map(type, batch)) <= {dict}:
        get: Any = dict.get
        code_of: Any = R.KIND_CODE.get
        codes: list[Any] = list(map(code_of, map(get, batch, repeat("kind")), repeat(-1)))
        ranks: list[Any] = list(map(get, batch, repeat("rank")))
        seqs: list[Any] = list(map(get, batch, repeat("seq")))
        fast = (
            -1 not in codes and _ints(ranks) and _ints(seqs)
            and (not ranks or (min(ranks) >= 0 and max(ranks) < nprocs and min(seqs) >= 0))
            and _common_ok(batch) and _fast_ok(batch, codes, nprocs)
        )
        if fast:
            slow = [i for i, c in enumerate(codes) if c not in _FAST]
            for i in slow:
                try:
                    R.check_record(batch[i], nprocs)
                except R.RecordError as exc:
                    return i, exc
            return len(batch), None
    for i, rec in enumerate(batch):
        try:
            R.check_record(rec, nprocs)
        except R.RecordError as exc:
            return i, exc
    return len(batch), None


def _common_ok(batch: list[Record]) -> bool:
    ts = {type(d["t"]) for d in batch if "t" in d}
    if not ts <= {int, float}:
        return False
    if not {type(d["site"]) for d in batch if "site" in d} <= {str}:
        return False
    comms = [d["comm"] for d in batch if "comm" in d]
    return _ints(comms) and (not comms or min(comms) >= 0)
