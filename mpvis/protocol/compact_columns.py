"""A rank's ``COMPACT`` batch as columns: checked and written as JSON without a dict per record.

The central process's hot path (MPVisualizer, section 2: it must keep up with
every rank of the run).  :mod:`mpvis.protocol.compact` expands a batch into
one dict per record; here :func:`compact_columns` reads the same bytes as
NumPy columns (:data:`RECORD_DTYPE`), expands merged receives (kind 9) into
their two rows, checks the per-record rules of
:func:`mpvis.protocol.records.check_record` on whole columns, and
:meth:`CompactColumns.jsonl` writes the trace lines with one
``orjson`` call per column, not per record.

The records of variable size (waits, collectives, states: their payloads
are Python values) are expanded and checked one by one, as the dict path
does, and their lines put among the others.

Contract of :func:`compact_columns`: it returns ``None``, having changed
nothing, for any batch it does not take whole: an unknown kind, a buffer
send or a consume carrying ``chan`` (the send resolver must see those), an
unknown site id or payload, a truncated record, a record breaking a rule or
holding a value JSON cannot, or ``seq`` values that do not follow one another.
The caller then expands the batch with :meth:`CompactDecoder.decode
<mpvis.protocol.compact.CompactDecoder.decode>`, which names the bad record and
its rule as before.  Otherwise the batch's new sites join the decoder's table
(as ``decode`` would) and the result holds exactly the records ``decode``
gives: :meth:`CompactColumns.records` *is* ``decode``'s expansion (built
only when a consumer asks for dicts), and :meth:`CompactColumns.jsonl` is
byte for byte their journal lines (``orjson``, keys in the same order);
``tests/protocol/test_compact_columns.py`` checks both against ``decode`` on
random batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final, overload

import numpy as np
import numpy.typing as npt
import orjson

from mpvis.protocol.codes import (
    MVC_BLOCKING,
    MVC_BUF,
    MVC_CHAN,
    MVC_SEND,
    MVC_SYNC,
    MVK_COLL,
    MVK_COLL_EXIT,
    MVK_CONSUME,
    MVK_FINAL,
    MVK_RECV,
    MVK_RECV_CONSUME,
    MVK_SEND,
    MVK_STATE,
    MVK_WAIT,
)
from mpvis.protocol.compact import RECORD, RECORD_SIZE, CompactDecoder, check_compact
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import RecordError, check_record

__all__ = ["RECORD_DTYPE", "CompactColumns", "compact_columns"]

#: :data:`mpvis.protocol.compact.RECORD` as a NumPy structured type.
RECORD_DTYPE: Final = np.dtype([
    ("kind", "u1"), ("flags", "u1"), ("zero", "<u2"), ("site", "<u4"), ("seq", "<i8"),
    ("t", "<f8"), ("comm", "<i8"), ("a", "<i4"), ("b", "<i4"), ("c", "<i8"), ("d", "<i8"),
    ("call", "<i8"),
])
assert RECORD_DTYPE.itemsize == RECORD_SIZE

#: ``seq`` values at most this (a merged receive's consume is ``seq + 1``: no overflow).
_SEQ_MAX: Final = 2**62
_NUMPY: Final = orjson.OPT_SERIALIZE_NUMPY

# Row shapes: which keys a row's JSON object has, in ``decode``'s order.  The
# column named by a str is written there; bytes are written as they are.
_SEND_B, _SEND_NB, _RECV_B, _RECV_NB, _CONS, _MCONS_SEND, _CONS_NOSEND, _FINAL = range(8)
_HEAD: Final = ("seq", b',"kind":')  # after '{"rank":R,"seq":'
_SHAPES: Final[dict[int, tuple[tuple[str | bytes, ...], tuple[str | bytes, ...]]]] = {
    # shape: (pieces before "call", pieces after it)
    _SEND_B: ((b'"send","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"dest":', "peer",
               b',"tag":', "tag", b',"blocking":true,"sync":', "sync"), ()),
    _SEND_NB: ((b'"send","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"dest":', "peer",
                b',"tag":', "tag", b',"blocking":false,"sync":', "sync"), (b',"req":', "seq")),
    _RECV_B: ((b'"recv","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"src":', "peer",
               b',"tag":', "tag", b',"blocking":true'), ()),
    _RECV_NB: ((b'"recv","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"src":', "peer",
                b',"tag":', "tag", b',"blocking":false'), (b',"req":', "seq")),
    _CONS: ((b'"consume","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"recv":', "ref",
             b',"src":', "peer", b',"tag":', "tag", b',"send":[', "peer", b",", "sseq", b"]"), ()),
    _MCONS_SEND: ((b'"consume","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"recv":',
                   "ref", b',"src":', "peer", b',"tag":', "tag"),
                  (b',"send":[', "peer", b",", "sseq", b"]")),
    _CONS_NOSEND: ((b'"consume","t":', "t", b',"site":', "site", b',"comm":', "comm", b',"recv":',
                    "ref", b',"src":', "peer", b',"tag":', "tag"), ()),
    _FINAL: ((b'"final","t":', "t"), ()),
}


def _row(shape: int, call: bool) -> tuple[str | bytes, ...]:
    before, after = _SHAPES[shape]
    return (*_HEAD, *before, *((b',"call":', "call") if call else ()), *after, b"}\n")


#: The pieces of a row of each (shape, has call), ``2 * shape + has call``.
_ROWS: Final = tuple(_row(s, c) for s in range(len(_SHAPES)) for c in (False, True))
_TRUE_FALSE: Final = (b"false", b"true")
#: The shape of a row of another kind (:data:`_OTHERS`).
_OTHER: Final = -1
#: The longest period of row shapes :meth:`CompactColumns.jsonl` looks for.
_PERIODS: Final = 6
_P2P: Final = (MVK_SEND, MVK_RECV, MVK_CONSUME)
#: Kinds with a variable payload: their rows are expanded and checked one by one.
_OTHERS: Final = (MVK_WAIT, MVK_COLL, MVK_COLL_EXIT, MVK_STATE)
_KIND_NAMES: Final = {MVK_WAIT: "wait", MVK_COLL: "coll", MVK_COLL_EXIT: "coll_exit",
                      MVK_STATE: "state"}
#: The recorder kinds a batch taken as columns may hold.
_TAKEN: Final = np.isin(np.arange(256), (*_P2P, *_OTHERS, MVK_FINAL, MVK_RECV_CONSUME))


class CompactColumns(Sequence[Record]):
    """One rank's records of one ``COMPACT`` batch, as columns (see the module docstring).

    Columns (NumPy arrays, one row per trace record, in ``seq`` order): ``kind``
    (``MVK_SEND``, ``MVK_RECV``, ``MVK_CONSUME``, ``MVK_FINAL`` of
    :mod:`mpvis.protocol.codes`, or ``MVK_WAIT``, ``MVK_COLL``, ``MVK_COLL_EXIT``,
    ``MVK_STATE``: rows whose other columns mean nothing), ``seq``, ``t``, ``site`` (an id of
    :attr:`sites`; 0: none), ``comm``, ``peer`` (a send's ``dest``, a receive's
    or consume's ``src``), ``tag``, ``blocking``, ``sync``, ``req`` (bool: the
    record has ``req``, equal to its ``seq``), ``ref`` (a consume's ``recv``),
    ``sseq`` (the seq of a consume's ``send``, -1: none), ``call`` (-1: none).
    A ``Sequence`` of the records' dicts, built on first use.
    """

    def __init__(self, cols: dict[str, npt.NDArray[Any]], decoder: CompactDecoder,
                 body: dict[str, Any], others: dict[int, bytes]) -> None:
        """``cols``: the columns above and ``shape`` (each row's index of ``_ROWS``);
        ``decoder`` and ``body``: the rank's decoder and the batch; ``others``: the
        journal lines of the rows of other kinds (waits, collectives, states), by row."""
        self.rank = decoder.rank
        self.kind: npt.NDArray[np.uint8] = cols["kind"]
        self.seq: npt.NDArray[np.int64] = cols["seq"]
        self.t: npt.NDArray[np.float64] = cols["t"]
        self.site: npt.NDArray[np.int64] = cols["site"]
        self.comm: npt.NDArray[np.int64] = cols["comm"]
        self.peer: npt.NDArray[np.int64] = cols["peer"]
        self.tag: npt.NDArray[np.int64] = cols["tag"]
        self.blocking: npt.NDArray[np.bool_] = cols["blocking"]
        self.sync: npt.NDArray[np.bool_] = cols["sync"]
        self.req: npt.NDArray[np.bool_] = cols["req"]
        self.ref: npt.NDArray[np.int64] = cols["ref"]
        self.sseq: npt.NDArray[np.int64] = cols["sseq"]
        self.call: npt.NDArray[np.int64] = cols["call"]
        #: The decoder's site table (ids from 0; id 0: no site); only grows.
        self.sites: list[str | None] = decoder.site_table
        self._shape: npt.NDArray[np.intp] = cols["shape"]
        self._decoder = decoder
        self._body = body
        self._others = others
        self._records: list[Record] | None = None

    @property
    def first_seq(self) -> int:
        """``seq`` of the first record (the others follow it one by one)."""
        return int(self.seq[0])

    @property
    def has_final(self) -> bool:
        """Whether the batch holds the rank's ``final`` record."""
        return bool((self.kind == MVK_FINAL).any())

    def records(self) -> list[Record]:
        """The records as dicts: :meth:`CompactDecoder.decode`'s expansion of the batch."""
        if self._records is None:
            b = self._body
            self._records = self._decoder.expand(b["recs"], b["extra0"], b["extras"])[0]
        return self._records

    def __len__(self) -> int:
        return len(self.seq)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...
    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        return self.records()[i]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def jsonl(self) -> bytes:
        """The records as trace lines (``orjson``'s output for :meth:`records`, one
        line each).  Each column is serialized once for all the rows that write it
        and the pieces are interleaved by slice assignment.  Rows whose shapes
        (the keys they have) repeat with a short period (a ring's send, receive,
        consume...) are written as rows of that many lines; otherwise the lines of
        each shape are made apart and put back in ``seq`` order, with those of
        the rows of other kinds (made one by one)."""
        n = len(self)
        shape = self._shape
        period = None if self._others else next(
            (p for p in range(1, _PERIODS + 1)
             if p >= n or np.array_equal(shape[p:], shape[:-p])), None)
        if period is not None:
            whole = n - n % period
            out = self._pieces([(int(shape[j]), slice(j, whole, period))
                                for j in range(min(period, n))]) if whole else []
            for r in range(whole, n):  # fewer than a period at the end
                out += self._pieces([(int(shape[r]), slice(r, r + 1))])
            return b"".join(out)
        lines = np.empty(n, dtype=object)
        for code in np.unique(shape).tolist():
            if code == _OTHER:
                continue
            idx = np.flatnonzero(shape == code)
            lines[idx] = b"".join(self._pieces([(code, idx)])).split(b"\n")[:-1]
        for row, line in self._others.items():
            lines[row] = line
        return b"\n".join(lines.tolist()) + b"\n"

    def _pieces(self, rows: list[tuple[int, slice | npt.NDArray[np.intp]]]) -> list[bytes]:
        """The pieces of lines, for ``rows``: pairs (shape, rows of that shape), each
        selecting as many rows; one line of each pair in turn.  A column with one
        value in all the rows of a pair is written into the constant text around
        it (a rank's ``comm``, ``tag``, ``site`` often are): fewer pieces."""
        k = len(self.seq[rows[0][1]])
        parts: list[bytes | list[bytes]] = [b""]
        for code, sel in rows:
            texts: dict[str, list[bytes]] = {}
            for piece in (b'{"rank":%d,"seq":' % self.rank, *_ROWS[code]):
                if isinstance(piece, str):
                    col = texts.get(piece)
                    if col is None:
                        col = texts[piece] = self._texts(piece, sel)
                    if len(col) > 1:
                        parts.append(col)
                        continue
                    piece = col[0]
                if isinstance(parts[-1], bytes):
                    parts[-1] += piece
                else:
                    parts.append(piece)
        width = len(parts)
        out: list[bytes] = [b""] * (k * width)
        for j, part in enumerate(parts):
            out[j::width] = [part] * k if isinstance(part, bytes) else part
        return out

    def _texts(self, name: str, rows: slice | npt.NDArray[np.intp]) -> list[bytes]:
        """Column ``name`` at ``rows`` as JSON texts; a single text if all are equal
        (integers and bools only: ``-0.0 == 0.0`` but their texts differ)."""
        col = getattr(self, name)[rows]
        if col.dtype.kind != "f" and col[0] == col[-1] and (col == col[0]).all():  # not -0.0 == 0.0
            col = col[:1]
        if name == "sync":
            return [_TRUE_FALSE[b] for b in col.tolist()]
        if name == "site":
            table = [orjson.dumps(s) for s in self.sites[:int(col.max()) + 1]]
            return list(map(table.__getitem__, col.tolist()))
        return orjson.dumps(np.ascontiguousarray(col), option=_NUMPY)[1:-1].split(b",")


def compact_columns(decoder: CompactDecoder, body: dict[str, Any], nprocs: int
                    ) -> CompactColumns | None:
    """The batch ``body`` of ``decoder``'s rank as columns, its records checked
    against every per-record rule (``nprocs`` bounds ranks), or ``None`` if it is
    not taken whole (see the module docstring; nothing is changed then)."""
    check_compact(body)
    recs: bytes = body["recs"]
    rank = decoder.rank
    if not recs or len(recs) % RECORD_SIZE or not 0 <= rank < nprocs:
        return None
    sites = decoder.sites_after(body)
    if sites is None:
        return None
    raw = np.frombuffer(recs, dtype=RECORD_DTYPE)
    kind, flags = raw["kind"], raw["flags"]
    merged = kind == MVK_RECV_CONSUME
    if (not _TAKEN[kind].all()
            or (flags & (MVC_BUF | MVC_CHAN)).any()
            or int(raw["site"].max()) >= len(sites)):
        return None
    cols, shape = _expanded(raw, merged)
    seq = cols["seq"]
    if not (_rules_hold(cols, nprocs) and seq[0] >= 0 and seq[-1] <= _SEQ_MAX
            and not (np.diff(seq) != 1).any()):
        return None
    known = len(decoder.site_table)
    decoder.take_sites(body)
    others = _other_lines(decoder, body, cols["kind"], nprocs)
    if others is None:
        del decoder.site_table[known:]  # nothing changed
        return None
    return CompactColumns({**cols, "shape": shape}, decoder, body, others)


def _other_lines(decoder: CompactDecoder, body: dict[str, Any], kind: npt.NDArray[np.uint8],
                 nprocs: int) -> dict[int, bytes] | None:
    """The journal lines (without newline) of the rows of other kinds (waits,
    collectives, states), each expanded and checked as the dict path does, by row;
    ``None`` if one cannot be expanded, breaks a rule or is no JSON."""
    rows = np.flatnonzero(np.isin(kind, _OTHERS))
    if not len(rows):
        return {}
    recs, extra0, extras = body["recs"], body["extra0"], body["extras"]
    # a row's record: rows before it include one extra row per merged receive
    merged = np.frombuffer(recs, dtype=RECORD_DTYPE)["kind"] == MVK_RECV_CONSUME
    row_of = np.arange(len(merged)) + np.concatenate(([0], np.cumsum(merged)[:-1]))
    index = np.searchsorted(row_of, rows)
    out: dict[int, bytes] = {}
    for row, i in zip(rows.tolist(), index.tolist(), strict=True):
        fields = RECORD.unpack_from(recs, i * RECORD_SIZE)
        rec = decoder.expand_one(fields, extra0, extras)
        if rec is None or (rec["rank"], rec["seq"], rec["kind"]) != (
                decoder.rank, fields[4], _KIND_NAMES[fields[0]]):
            return None  # (a collective's fields may name rank, seq or kind: the dict path)
        try:
            check_record(rec, nprocs)
            out[row] = orjson.dumps(rec)
        except (RecordError, TypeError):
            return None
    return out


def _expanded(raw: npt.NDArray[Any], merged: npt.NDArray[np.bool_]
              ) -> tuple[dict[str, npt.NDArray[Any]], npt.NDArray[np.intp]]:
    """The rows of the batch's records (a kind-9 record is two: its receive, then its
    consume), as columns, and each row's shape (an index of ``_ROWS``)."""
    n = len(raw)
    at = np.arange(n) + np.concatenate(([0], np.cumsum(merged)[:-1]))  # each record's row
    head = at[merged]  # the rows of the merged receives ...
    tail = head + 1  # ... and of their consumes
    rows = n + len(tail)

    def spread(field: str) -> npt.NDArray[Any]:
        col = np.empty(rows, dtype=np.float64 if field == "t" else np.int64)
        col[at] = raw[field]
        return col

    kind, flags = spread("kind"), spread("flags")
    seq, t, site, call, comm = spread("seq"), spread("t"), spread("site"), spread("call"), \
        spread("comm")
    peer, tag, ref, sseq = spread("a"), spread("b"), spread("c"), spread("d")
    m = raw[merged]
    kind[head], kind[tail] = MVK_RECV, MVK_CONSUME
    flags[head], flags[tail] = MVC_BLOCKING, m["flags"]
    seq[tail], site[tail], call[tail], sseq[tail] = m["seq"] + 1, m["site"], m["call"], m["d"]
    t[tail] = m["t"] + ((m["comm"] >> 32) & 0xFFFFFFFF) * 1e-9
    comm[head] = comm[tail] = m["comm"].astype(np.int32)  # the low 32 bits, signed
    peer[tail], tag[tail] = m["c"].astype(np.int32), m["c"] >> 32
    ref[tail] = m["seq"]
    is_send, is_recv, is_cons = kind == MVK_SEND, kind == MVK_RECV, kind == MVK_CONSUME
    has_send = is_cons & ((flags & MVC_SEND) != 0)
    blocking = (flags & MVC_BLOCKING) != 0
    shape = np.full(rows, _FINAL, dtype=np.intp)
    shape[is_send] = np.where(blocking[is_send], _SEND_B, _SEND_NB)
    shape[is_recv] = np.where(blocking[is_recv], _RECV_B, _RECV_NB)
    shape[is_cons] = _CONS_NOSEND
    shape[has_send] = _CONS
    shape[tail[has_send[tail]]] = _MCONS_SEND
    other = np.isin(kind, _OTHERS)
    cols = {
        "kind": kind.astype(np.uint8), "seq": seq, "t": t, "site": site, "comm": comm,
        "peer": peer, "tag": tag, "blocking": blocking, "sync": (flags & MVC_SYNC) != 0,
        "req": (is_send | is_recv) & ~blocking, "ref": ref, "sseq": np.where(has_send, sseq, -1),
        "has_send": has_send, "call": call,
    }
    shape = 2 * shape + (call >= 0)
    shape[other] = _OTHER
    return cols, shape


def _rules_hold(c: dict[str, npt.NDArray[Any]], nprocs: int) -> bool:
    """Whether every row passes :func:`~mpvis.protocol.records.check_record`'s rules
    (those its columns can break: ranges of ``comm``, peers, tags, ``recv``, ``send``;
    ``rank``, ``seq``, the kinds and the site ids are the caller's)."""
    kind, peer, tag = c["kind"], c["peer"], c["tag"]
    recv, cons = kind == MVK_RECV, kind == MVK_CONSUME
    low = np.where(recv, -1, 0)  # a receive's src and tag may be wildcards
    p2p = (kind == MVK_SEND) | recv | cons
    bad = p2p & ((c["comm"] < 0) | (peer < low) | (peer >= nprocs) | (tag < low))
    bad |= cons & ((c["ref"] < 0) | (c["has_send"] & (c["sseq"] < 0)))
    return not bad.any()
