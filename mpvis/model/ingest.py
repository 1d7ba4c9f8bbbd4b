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


@dataclass
class Batch:
    """Columns of the accepted prefix ``[0, n)`` of a batch, and the first error."""

    n: int
    rank: list[Any]
    seq: list[Any]
    code: list[Any]
    t: list[Any]
    site: list[Any]
    comm: list[Any]
    peer: list[Any]
    tag: list[Any]
    flags: list[Any]
    req: list[Any]
    ref: list[Any]
    size: list[Any]
    extras: dict[int, dict[str, Any]] = field(default_factory=dict)
    error: R.RecordError | None = None


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


def extract(batch: list[Record], nprocs: int, validate: bool = True) -> Batch:
    """Columns of ``batch``; with ``validate``, the longest valid prefix and its error."""
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
    out = Batch(
        n=n,
        rank=list(map(get, batch, repeat("rank"))),
        seq=list(map(get, batch, repeat("seq"))),
        code=codes,
        t=ts,
        site=list(map(get, batch, repeat("site"))),
        comm=list(map(get, batch, repeat("comm"), repeat(0))),
        peer=[s if d is None else d for d, s in zip(dest, src, strict=True)],
        tag=list(map(get, batch, repeat("tag"), repeat(-1))),
        flags=[b + 2 * y for b, y in zip(blocking, sync, strict=True)],
        req=list(map(get, batch, repeat("req"), repeat(-1))),
        ref=list(map(get, batch, repeat("recv"), repeat(-1))),
        size=list(map(get, batch, repeat("size"), repeat(-1))),
        error=error,
    )
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
