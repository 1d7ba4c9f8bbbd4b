"""A trace file's event lines to checked columns: the C scanner, and the Python path for the rest.

The parser process (:mod:`mpvis.tracefile.parse_worker`) reads a trace with
:func:`scan_chunks`.  The C scanner (``_cscan.c``) splits the file's bytes
into lines as :func:`mpvis.tracefile.lines.chunks` does (chunks of
:data:`~mpvis.tracefile.lines.BATCH_LINES` lines, blank lines skipped, a line
longer than :data:`~mpvis.tracefile.lines.MAX_LINE_BYTES` ends the file) and
writes the columns of every record it fully understands, checking the
per-record rules of :func:`mpvis.protocol.records.check_record`; it builds
Python objects only for the extras (the fields outside the columns).

Every other line (an escape in a string, a list or object nested in a value,
a huge number, a duplicate key, a broken rule, bad JSON...) is handed back
whole.  When they are more than :data:`MERGE_AT_MOST` of the chunk's records,
the reference path reads the whole chunk
(:func:`~mpvis.tracefile.lines.parse_chunk`, then
:func:`mpvis.model.ingest.extract`); else :func:`_merge` runs it on those
lines alone (:func:`~mpvis.tracefile.lines.parse_line`, then ``extract`` on
the records they hold).  That gives the same result as the reference path on
the whole chunk
(:func:`~mpvis.tracefile.lines.parse_chunk` then ``extract``), because

* ``extract`` computes each record's columns and extras from that record
  alone, and the scanner accepts only records that ``check_record`` accepts
  and whose values fit the model's 32-bit columns: the first bad line and
  the first record that breaks a rule are among the lines handed back, and
  the error is the one ``extract`` names for it;
* site names are numbered in order of first appearance among the accepted
  records, whichever path read them;
* ``extract`` orders a record's extras as those of the first record of its
  kind and key count when both have the same keys (its groups), and the
  scanner says when the key order varies in a chunk: :func:`_order_extras`
  then orders them as ``extract`` does on the whole chunk.

``tests/tracefile/test_scan.py`` checks this against the reference path
(generated chunks of valid and broken records, every sample trace, mutated
and random lines).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from mpvis.protocol.codes import EVENT_KINDS, F_BLOCKING, F_SYNC
from mpvis.tracefile._cscan import KEYS, Scanner
from mpvis.tracefile.lines import BATCH_LINES, MAX_LINE_BYTES, TOO_LONG, parse_chunk, parse_line

if TYPE_CHECKING:
    from mpvis.model.ingest import Batch, SiteTable

__all__ = ["DTYPES", "ScannedChunk", "as_batch", "scan_chunks"]

#: The columns of a :class:`~mpvis.model.ingest.Batch` and their dtypes in
#: :attr:`ScannedChunk.cols` (little-endian; ``site`` indexes :attr:`ScannedChunk.sites`).
DTYPES = {
    **dict.fromkeys(("rank", "seq", "comm", "peer", "tag", "req", "ref", "sseq", "size",
                     "call"), "<i8"),
    "code": "i1", "flags": "i1", "t": "<f8", "site": "<i8",
}
#: Bytes read from the file at a time.
_BLOCK = 1 << 20
#: A chunk of which the scanner handed back more than this share of the
#: records is read whole by the reference path (merging would cost more);
#: the scanner stops reading records once more than this share of
#: ``BATCH_LINES`` went back (it cannot be merged any more).
MERGE_AT_MOST = 1 / 8


@dataclass
class ScannedChunk:
    """One chunk of lines, parsed, checked and in columns, as ``extract`` would give it.

    ``cols`` holds the columns of the accepted prefix ``[0, n)`` as bytes
    (:data:`DTYPES`); ``cols["site"]`` indexes ``sites``, the chunk's site
    names in order of first appearance (-1: no site).  ``nums[i]`` is the
    file line of record ``i`` (every record parsed: up to the bad line, not
    only the accepted ones).  ``error`` (with ``error_rank``/``error_seq``)
    is the rule broken by record ``n``; ``bad_line``/``rule``: a line that
    is no JSON object (or too long) ended the chunk.  ``nbytes``: the bytes
    of its lines.
    """

    n: int
    cols: dict[str, bytes]
    sites: list[str]
    nums: Sequence[int]
    nbytes: int
    extras: dict[int, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    error_rank: int | None = None
    error_seq: int | None = None
    bad_line: int | None = None
    rule: str | None = None


def scan_chunks(fh: IO[bytes], first_line: int, nprocs: int, validate: bool
                ) -> Iterator[ScannedChunk]:
    """The chunks of the event lines of ``fh`` (positioned at file line ``first_line``).

    ``validate``: as in :func:`~mpvis.model.ingest.extract` (without it every
    line takes the Python path: records are not checked).  An ``OSError`` or
    ``EOFError`` from ``fh`` is raised after a chunk of the complete lines
    read before it (as :func:`~mpvis.tracefile.lines.chunks` does).  The
    caller stops after a chunk with an error or a bad line.
    """
    scanner = Scanner(nprocs, EVENT_KINDS, BATCH_LINES, MAX_LINE_BYTES, F_BLOCKING, F_SYNC,
                      not validate, int(BATCH_LINES * MERGE_AT_MOST))
    buf, pos, eof, line = b"", 0, False, first_line
    start = 0  # where the chunk begins in buf
    before: list[memoryview] = []  # its bytes in earlier buffers
    while True:
        pos, done = scanner.scan(buf, pos, eof)
        if not done:
            try:
                more = fh.read1(_BLOCK)  # type: ignore[attr-defined]  # every reader has read1
            except (OSError, EOFError):
                raw = scanner.take()
                if raw[0]:
                    yield _chunk(raw, line, nprocs, validate, [*before, memoryview(buf)[start:pos]])
                raise
            eof = not more
            before.append(memoryview(buf)[start:pos])
            buf, pos, start = buf[pos:] + more, 0, 0
            continue
        raw = scanner.take()
        if not raw[0]:
            return
        yield _chunk(raw, line, nprocs, validate, [*before, memoryview(buf)[start:pos]])
        before, start = [], pos
        line += raw[0]


#: What ``Scanner.take()`` returns (see ``_cscan.pyi``).
_Raw = tuple[int, int, int, dict[str, bytes], bytes, list[str], list[int],
             list[tuple[int, int, bytes]], dict[int, dict[str, Any]], int, bytes, bool]
#: Bits of a keys word (``_cscan.c``): the known keys by their bit, others, the count.
_KEY_BIT = {name: 1 << i for i, name in enumerate(KEYS)}
_OTHER_KEYS = 1 << 31
_COUNT_SHIFT = 32


def _chunk(raw: _Raw, first_line: int, nprocs: int, validate: bool, text: list[memoryview]
           ) -> ScannedChunk:
    """The chunk the scanner gave (``raw``); ``text``: its bytes."""
    nlines, nbytes, nrec, cols, _, names, _, fallback, extras, too_long, _, irregular = raw
    if len(fallback) > nrec * MERGE_AT_MOST:
        return _reference(b"".join(text), raw, first_line, nprocs, validate)
    if fallback or too_long >= 0 or irregular:
        return _merge(raw, first_line, nprocs, validate)
    if nrec == nlines:  # no blank line
        nums: Sequence[int] = range(first_line, first_line + nrec)
    else:
        nums = _line_numbers(raw, first_line, nrec)
    return ScannedChunk(nrec, cols, names, nums, nbytes, extras)


def _line_numbers(raw: _Raw, first_line: int, count: int) -> list[int]:
    """The file lines of the chunk's first ``count`` records."""
    import numpy as np  # only here and in _merge: the parser process starts without NumPy

    offsets = np.frombuffer(raw[4], dtype=np.int64)[:count]
    nums: list[int] = (offsets + first_line).tolist()
    return nums


def _reference(text: bytes, raw: _Raw, first_line: int, nprocs: int, validate: bool
               ) -> ScannedChunk:
    """The chunk of bytes ``text`` read by the reference path alone (the scanner
    gave its line count, bytes and too-long line, ``raw``)."""
    import numpy as np

    from mpvis.model.ingest import SiteTable, extract

    nlines, nbytes, too_long = raw[0], raw[1], raw[9]
    pieces = text.split(b"\n")
    lines = [p + b"\n" for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])  # the file's last line, without newline
    assert len(lines) == nlines or too_long >= 0
    chunk = parse_chunk(first_line, lines[:too_long] if too_long >= 0 else lines)
    if too_long >= 0 and chunk.bad_line is None:
        chunk.bad_line, chunk.rule = first_line + too_long, TOO_LONG
    temp = SiteTable()
    cols = extract(chunk.records, nprocs, temp, validate)
    return ScannedChunk(
        cols.n, {name: np.ascontiguousarray(getattr(cols, name), dtype=dt).tobytes()
                 for name, dt in DTYPES.items()},
        temp.names, chunk.nums, nbytes, cols.extras,
        None if cols.error is None else str(cols.error), cols.error_rank, cols.error_seq,
        chunk.bad_line, chunk.rule)


def _merge(raw: _Raw, first_line: int, nprocs: int, validate: bool) -> ScannedChunk:
    """The chunk, with the lines the scanner handed back read by the reference path."""
    import numpy as np

    from mpvis.model.ingest import SiteTable, extract, valid_prefix

    _, nbytes, nrec, cols, _, names, first, fallback, extras, too_long, keys, _ = raw
    bad_line: int | None = None
    rule: str | None = None
    limit = nrec  # records before the first bad line
    recs: list[Any] = []
    at: list[int] = []  # the chunk index of each record in recs
    for r, offset, text in fallback:
        rec, why = parse_line(text)
        if why is None and not isinstance(rec, dict):
            why = "an event line must be a JSON object"
        if why is not None:
            bad_line, rule, limit = first_line + offset, why, r
            break
        recs.append(rec)
        at.append(r)
    if bad_line is None and too_long >= 0:
        bad_line, rule = first_line + too_long, TOO_LONG
    temp = SiteTable()
    sub = extract(recs, nprocs, temp, validate)
    n = at[sub.n] if sub.n < len(recs) else limit
    fix = np.asarray(at[:sub.n], dtype=np.intp)
    arrays = {name: np.frombuffer(cols[name], dtype=dt)[:n].copy() for name, dt in DTYPES.items()}
    for name in DTYPES:
        if name != "site":
            arrays[name][fix] = getattr(sub, name)
    # sites: numbered in order of first appearance among the records [0, n)
    seen = {name: r for name, r in zip(names, first, strict=True) if r < n}
    for j, k in enumerate(sub.site.tolist()):
        if k >= 0 and at[j] < seen.get(temp.names[k], n):
            seen[temp.names[k]] = at[j]
    order = sorted(seen, key=seen.__getitem__)
    new_id = {name: i for i, name in enumerate(order)}
    site = arrays["site"]
    site[:] = np.asarray([new_id.get(s, -1) for s in names] + [-1], dtype=np.int64)[site]
    site[fix] = np.asarray([new_id[s] for s in temp.names] + [-1], dtype=np.int64)[sub.site]
    merged = {r: e for r, e in extras.items() if r < n}
    merged.update((at[k], e) for k, e in sub.extras.items())
    if validate:
        k, _ = valid_prefix(recs, nprocs)  # extract groups the records it checked
        _order_extras(merged, n, at[k] if k < len(recs) else limit,
                      code=np.frombuffer(cols["code"], dtype=np.int8)[:limit],
                      words=np.frombuffer(keys, dtype=np.int64)[:limit],
                      handed=dict(zip(at, recs, strict=True)))
    return ScannedChunk(
        n, {name: a.tobytes() for name, a in arrays.items()}, order,
        _line_numbers(raw, first_line, limit), nbytes, dict(sorted(merged.items())),
        None if sub.error is None else str(sub.error), sub.error_rank, sub.error_seq,
        bad_line, rule)


def _order_extras(extras: dict[int, dict[str, Any]], n: int, checked: int, *, code: Any,
                  words: Any, handed: dict[int, Any]) -> None:
    """Order the extras of records ``[0, n)`` as ``extract`` does on the whole chunk.

    ``extract`` splits the records it checked into groups of one kind and key
    count (``ingest._groups``); when the records of such a part hold the same
    keys, all take the key order of its first record, else each keeps its
    own.  Its checked records are the first ``checked`` (or all of them, when
    it checks a long chunk by groups).  ``code``: the scanner's kind codes and
    ``words`` its keys words of the records before the bad line; ``handed``:
    the dicts of the records it handed back.
    """
    import numpy as np

    from mpvis.model.ingest import _COMMON_FIELDS, _FEW, _KIND_FIELDS
    from mpvis.protocol.codes import KIND_CODE

    try:
        kinds = {r: KIND_CODE.get(rec.get("kind"), -1) for r, rec in handed.items()}
        universe = len(words) if len(words) >= _FEW else checked
    except TypeError:  # an unhashable kind: extract checks record by record
        universe = checked
    shape = (words[:universe] >> _COUNT_SHIFT) * 16 + code[:universe].astype(np.int64) + 1
    word = words[:universe].copy()
    for r, rec in handed.items():
        if r < universe:
            w = sum(_KEY_BIT.get(f, _OTHER_KEYS) for f in set(rec))
            word[r] = (w & (_OTHER_KEYS - 1)) | (_OTHER_KEYS if w >= _OTHER_KEYS else 0) | (
                len(rec) << _COUNT_SHIFT)
            shape[r] = len(rec) * 16 + kinds[r] + 1

    def own_order(r: int) -> tuple[str, ...]:
        rec = handed.get(r)
        if rec is None:  # the scanner's extras are the fields outside the columns
            return tuple(extras.get(r, ()))
        own = _KIND_FIELDS.get(rec["kind"], _COMMON_FIELDS) | {"call"}
        return tuple(f for f in rec if f not in own)

    def others(r: int) -> frozenset[str]:
        rec = handed.get(r)
        keys = rec if rec is not None else extras.get(r, {})
        return frozenset(f for f in keys if f not in _KEY_BIT)

    has = np.zeros(universe, dtype=bool)  # records [0, n) with extras
    has[[r for r in extras if r < n]] = True
    order = np.argsort(shape, kind="stable")
    for part in np.split(order, np.flatnonzero(np.diff(shape[order])) + 1):
        members = part[has[part]].tolist()
        if not members:
            continue
        p = int(part[0])
        same = bool((word[part] == word[p]).all()) and (
            not word[p] & _OTHER_KEYS or len({others(r) for r in part.tolist()}) == 1)
        first = own_order(p)
        for r in members:
            want = first if same else own_order(r)
            e = extras[r]
            if tuple(e)[:len(want)] != want:
                extras[r] = {**{f: e[f] for f in want}, **e}


def as_batch(chunk: ScannedChunk, sites: SiteTable) -> Batch:
    """``chunk`` as a :class:`~mpvis.model.ingest.Batch`, its sites numbered in
    ``sites`` (new names added in the chunk's order)."""
    import numpy as np

    from mpvis.model.ingest import Batch
    from mpvis.protocol.records import RecordError

    ids = [sites.add(name) for name in chunk.sites]
    a = {name: np.frombuffer(chunk.cols[name], dtype=dt) for name, dt in DTYPES.items()}
    site = a["site"]
    if len(site):
        site = np.asarray([*ids, -1], dtype=np.int64)[site]  # -1 indexes the -1
    out = Batch(
        n=chunk.n, rank=a["rank"], seq=a["seq"], code=a["code"], t=a["t"], site=site,
        comm=a["comm"], peer=a["peer"], tag=a["tag"], flags=a["flags"], req=a["req"],
        ref=a["ref"], sseq=a["sseq"], size=a["size"], call=a["call"], extras=chunk.extras,
        error_rank=chunk.error_rank, error_seq=chunk.error_seq)
    if chunk.error is not None:
        out.error = RecordError(chunk.error)
    return out
