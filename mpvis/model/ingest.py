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
from typing import Any

from mpvis.protocol import records as R

Record = dict[str, Any]

K_SEND, K_RECV, K_CONSUME = R.KIND_CODE[R.SEND], R.KIND_CODE[R.RECV], R.KIND_CODE[R.CONSUME]
F_BLOCKING, F_SYNC = 1, 2

#: Fields held in columns; anything else in a record goes to the model's extras.
COLUMN_FIELDS = frozenset({
    "rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking", "sync",
    "req", "recv", "send", "size",
})
_OPTIONAL = ("t", "site", "comm", "req", "send", "size")
#: Required fields per fast kind (beyond rank, seq, kind).
_REQUIRED = {K_SEND: 4, K_RECV: 3, K_CONSUME: 3}  # dest tag blocking sync / src tag blocking / ...


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
    by_kind: dict[int, list[Record]] = {K_SEND: [], K_RECV: [], K_CONSUME: []}
    for rec, c in zip(batch, codes, strict=True):
        lst = by_kind.get(c)
        if lst is not None:
            lst.append(rec)
    sends, recvs, cons = by_kind[K_SEND], by_kind[K_RECV], by_kind[K_CONSUME]
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
        n, error = _valid_prefix(batch, nprocs)
        if n < len(batch):
            batch = batch[:n]
    codes = [R.KIND_CODE[d["kind"]] for d in batch]
    ts: list[Any] = [d.get("t") for d in batch]
    if None in ts:
        ts = [math.nan if x is None else x for x in ts]
    out = Batch(
        n=n,
        rank=[d["rank"] for d in batch],
        seq=[d["seq"] for d in batch],
        code=codes,
        t=ts,
        site=[d.get("site") for d in batch],
        comm=[d.get("comm", 0) for d in batch],
        peer=[d.get("dest", d.get("src", -1)) for d in batch],
        tag=[d.get("tag", -1) for d in batch],
        flags=[(F_BLOCKING if d.get("blocking") else 0) | (F_SYNC if d.get("sync") else 0)
               for d in batch],
        req=[d.get("req", -1) for d in batch],
        ref=[d.get("recv", -1) for d in batch],
        size=[d.get("size", -1) for d in batch],
        error=error,
    )
    expected = [3 + _REQUIRED.get(c, -99) for c in codes]  # rare kinds: always inspect
    for f in _OPTIONAL:
        present = [f in d for d in batch]
        if any(present):
            expected = [e + p for e, p in zip(expected, present, strict=True)]
    for i, (d, e) in enumerate(zip(batch, expected, strict=True)):
        if len(d) != e:
            extra = {k: v for k, v in d.items() if k not in COLUMN_FIELDS}
            if extra:
                out.extras[i] = extra
    return out


def _valid_prefix(batch: list[Record], nprocs: int) -> tuple[int, R.RecordError | None]:
    """Length of the prefix passing every per-record rule, and the first error."""
    if set(map(type, batch)) <= {dict}:
        kinds = [d.get("kind") for d in batch]
        codes = [R.KIND_CODE.get(k, -1) for k in kinds]  # type: ignore[arg-type]
        ranks: list[Any] = [d.get("rank") for d in batch]
        seqs: list[Any] = [d.get("seq") for d in batch]
        fast = (
            -1 not in codes and _ints(ranks) and _ints(seqs)
            and (not ranks or (min(ranks) >= 0 and max(ranks) < nprocs and min(seqs) >= 0))
            and _common_ok(batch) and _fast_ok(batch, codes, nprocs)
        )
        if fast:
            slow = [i for i, c in enumerate(codes) if c not in _REQUIRED]
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
