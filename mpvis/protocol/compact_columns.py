"""A rank's ``COMPACT`` batch as columns: checked and written as JSON without a dict per record.

The central process's hot path (MPVisualizer, section 2: it must keep up with
every rank of the run).  :mod:`mpvis.protocol.compact` expands a batch into
one dict per record; here :func:`compact_columns` reads the same bytes into
NumPy columns in one pass in C (:func:`mpvis.protocol._cjournal.expand`:
merged receives, kind 9, become their two rows, and the per-record rules of
:func:`mpvis.protocol.records.check_record` that the columns can break are
checked on every row), and :meth:`CompactColumns.jsonl` writes the trace
lines in C from the columns, by a template per row shape
(:func:`mpvis.protocol._cjournal.lines`), not a dict per record.

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
byte for byte their journal lines (``orjson``, keys in the same order; the
floats are ``orjson``'s own texts of the ``t`` column);
``tests/protocol/test_compact_columns.py`` checks both against ``decode`` on
random batches.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any, Final, overload

import numpy as np
import numpy.typing as npt
import orjson

from mpvis.protocol._cjournal import expand, lines
from mpvis.protocol.codes import (
    MVK_COLL,
    MVK_COLL_EXIT,
    MVK_RECV_CONSUME,
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

_NUMPY: Final = orjson.OPT_SERIALIZE_NUMPY
_FIRST: Final = struct.Struct("<q")

# Row shapes: which keys a row's JSON object has, in ``decode``'s order.  The
# column named by a str is written there; bytes are written as they are.  The
# numbers are _cjournal.c's (``S_SEND_B``...: ``expand`` gives each row's).
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
#: The columns :func:`~mpvis.protocol._cjournal.expand` returns, in its order.
_INT_COLUMNS: Final = ("seq", "site", "comm", "peer", "tag", "ref", "sseq", "call", "shape")
_FLAG_COLUMNS: Final = ("kind", "blocking", "sync", "req")
#: The columns a row's template names, in the order :meth:`CompactColumns.jsonl` passes them.
_COLUMNS: Final = ("seq", "t", "site", "comm", "peer", "tag", "sync", "ref", "sseq", "call")
#: Each of them as its row of the int64 columns (``t`` and ``sync`` are not there: ``None``).
_JSONL_COLUMNS: Final = tuple(_INT_COLUMNS.index(c) if c in _INT_COLUMNS else None
                              for c in _COLUMNS)
_SYNC_ROW: Final = _FLAG_COLUMNS.index("sync")
_T_AT, _SITE_AT, _SYNC_AT = (_COLUMNS.index(c) for c in ("t", "site", "sync"))
#: Kinds with a variable payload: their rows are expanded and checked one by one.
_OTHERS: Final = (MVK_WAIT, MVK_COLL, MVK_COLL_EXIT, MVK_STATE)
_KIND_NAMES: Final = {MVK_WAIT: "wait", MVK_COLL: "coll", MVK_COLL_EXIT: "coll_exit",
                      MVK_STATE: "state"}


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

    def __init__(self, expanded: tuple[int, bytearray, bytearray, bytearray],
                 decoder: CompactDecoder, body: dict[str, Any], others: dict[int, bytes], *,
                 has_final: bool) -> None:
        """``expanded``: the columns as :func:`~mpvis.protocol._cjournal.expand` gives
        them: ``(rows, ints, t, flags)``, ``ints`` the int64 columns :data:`_INT_COLUMNS`
        one after the other, ``t``, ``flags`` the uint8 columns :data:`_FLAG_COLUMNS`
        (``rows`` values each); NumPy arrays of them are made when first asked for
        (the journal writes from the buffers).  ``decoder``
        and ``body``: the rank's decoder and the batch; ``others``: the journal lines
        of the rows of other kinds (waits, collectives, states), by row;
        ``has_final``: whether a row is the rank's ``final``."""
        self.rank = decoder.rank
        self._rows, self._ints, self._t, self._flags = expanded
        #: The decoder's site table (ids from 0; id 0: no site); only grows.
        self.sites: list[str | None] = decoder.site_table
        self._decoder = decoder
        self._body = body
        self._others = others
        #: Whether the batch holds the rank's ``final`` record.
        self.has_final = has_final
        #: ``seq`` of the first record (the others follow it one by one).
        self.first_seq: int = _FIRST.unpack_from(self._ints)[0]
        self._records: list[Record] | None = None

    def _int(self, name: str) -> npt.NDArray[np.int64]:
        i = _INT_COLUMNS.index(name)
        return np.frombuffer(self._ints, np.int64, self._rows, 8 * i * self._rows)

    def _flag(self, name: str) -> npt.NDArray[Any]:
        i = _FLAG_COLUMNS.index(name)
        col = np.frombuffer(self._flags, np.uint8, self._rows, i * self._rows)
        return col if name == "kind" else col.view(np.bool_)

    @cached_property
    def seq(self) -> npt.NDArray[np.int64]:
        return self._int("seq")

    @cached_property
    def site(self) -> npt.NDArray[np.int64]:
        return self._int("site")

    @cached_property
    def comm(self) -> npt.NDArray[np.int64]:
        return self._int("comm")

    @cached_property
    def peer(self) -> npt.NDArray[np.int64]:
        return self._int("peer")

    @cached_property
    def tag(self) -> npt.NDArray[np.int64]:
        return self._int("tag")

    @cached_property
    def ref(self) -> npt.NDArray[np.int64]:
        return self._int("ref")

    @cached_property
    def sseq(self) -> npt.NDArray[np.int64]:
        return self._int("sseq")

    @cached_property
    def call(self) -> npt.NDArray[np.int64]:
        return self._int("call")

    @cached_property
    def _shape(self) -> npt.NDArray[np.int64]:
        return self._int("shape")

    @cached_property
    def t(self) -> npt.NDArray[np.float64]:
        return np.frombuffer(self._t, np.float64)

    @cached_property
    def kind(self) -> npt.NDArray[np.uint8]:
        return self._flag("kind")

    @cached_property
    def blocking(self) -> npt.NDArray[np.bool_]:
        return self._flag("blocking")

    @cached_property
    def sync(self) -> npt.NDArray[np.bool_]:
        return self._flag("sync")

    @cached_property
    def req(self) -> npt.NDArray[np.bool_]:
        return self._flag("req")


    def records(self) -> list[Record]:
        """The records as dicts: :meth:`CompactDecoder.decode`'s expansion of the batch."""
        if self._records is None:
            b = self._body
            self._records = self._decoder.expand(b["recs"], b["extra0"], b["extras"])[0]
        return self._records

    def __len__(self) -> int:
        return self._rows

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
        line each), written in C (:func:`mpvis.protocol._cjournal.lines`) by each
        row's template (:data:`_TEMPLATES`) from the columns: integers in decimal,
        ``sync`` and ``site`` by table, ``t`` as ``orjson`` writes the column (its
        float texts are ``orjson``'s); the rows of other kinds are the lines made
        one by one."""
        ints = self._ints
        columns: list[Any] = [None if i is None else (ints, i, 8) for i in _JSONL_COLUMNS]
        columns[_T_AT] = orjson.dumps(self.t, option=_NUMPY)
        columns[_SITE_AT] = (columns[_SITE_AT], self._decoder.site_json())
        columns[_SYNC_AT] = ((self._flags, _SYNC_ROW, 1), _TRUE_FALSE)
        return lines(b'{"rank":%d,"seq":' % self.rank, _TEMPLATES, self._shape, tuple(columns),
                     tuple(self._others.values()))


def _template(row: tuple[str | bytes, ...]) -> tuple[bytes | int, ...]:
    """The template of a row shape's line (of :data:`_ROWS`) after its rank, for
    :func:`~mpvis.protocol._cjournal.lines`: constant text as bytes, a column as its
    index in :data:`_COLUMNS` (adjacent texts joined)."""
    items: list[bytes | int] = []
    for piece in row:
        if isinstance(piece, str):
            items.append(_COLUMNS.index(piece))
        elif items and isinstance(items[-1], bytes):
            items[-1] += piece
        else:
            items.append(piece)
    return tuple(items)


#: The template of each row shape, ``2 * shape + has call`` (the indices of ``_ROWS``).
_TEMPLATES: Final = tuple(map(_template, _ROWS))


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
    got = expand(recs, nprocs, len(sites))
    if got is None:
        return None
    rows, ints, t, flags, nothers, final = got
    known = len(decoder.site_table)
    decoder.take_sites(body)
    others: dict[int, bytes] | None = {}
    if nothers:
        shape = np.frombuffer(ints, np.int64, rows, 8 * _INT_COLUMNS.index("shape") * rows)
        others = _other_lines(decoder, body, shape, nprocs)
    if others is None:
        decoder.forget_sites(known)  # nothing changed
        return None
    return CompactColumns((rows, ints, t, flags), decoder, body, others, has_final=final)


def _other_lines(decoder: CompactDecoder, body: dict[str, Any], shape: npt.NDArray[np.int64],
                 nprocs: int) -> dict[int, bytes] | None:
    """The journal lines (without newline) of the rows of other kinds (waits,
    collectives, states), each expanded and checked as the dict path does, by row;
    ``None`` if one cannot be expanded, breaks a rule or is no JSON."""
    rows = np.flatnonzero(shape == _OTHER)
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
