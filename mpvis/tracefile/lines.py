"""Trace-file lines in chunks, parsed to records, with the first bad line located.

Shared by the in-process reader (:mod:`mpvis.tracefile.reader`) and the parser
process (:mod:`mpvis.tracefile.parse_worker`).  Nothing here raises for bad
input: a chunk's parse returns the good records before the first bad line and
that line's number and rule, so callers keep every good record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import IO, Any

import orjson

from mpvis.protocol.record_types import Record

#: Lines parsed and fed to the model at a time.
BATCH_LINES = 16384
#: The longest line (with its newline) a trace may hold: memory stays bounded
#: whatever a file holds (records are a few hundred bytes; a ``state`` with
#: large strings still fits).
MAX_LINE_BYTES = 16 << 20
TOO_LONG = f"line is longer than {MAX_LINE_BYTES >> 20} MiB (the limit of a trace line)"


@dataclass
class ParsedChunk:
    """The records of a chunk up to its first bad line, and that line's problem.

    ``nums[i]`` is the file line of ``records[i]`` (blank lines are skipped).
    """

    records: list[Record]
    nums: list[int]
    bad_line: int | None = None
    rule: str | None = None


def read_line(fh: IO[bytes]) -> bytes:
    """One line of ``fh``, at most :data:`MAX_LINE_BYTES` + 1 bytes of it
    (a longer result means the line is too long)."""
    return fh.readline(MAX_LINE_BYTES + 1)


def chunks(fh: IO[bytes]) -> Iterator[list[bytes]]:
    """Lines of ``fh`` in lists of :data:`BATCH_LINES`.

    A line longer than :data:`MAX_LINE_BYTES` ends the stream: it is the last
    line yielded (cut), for :func:`parse_chunk` to report.  An ``OSError`` or
    ``EOFError`` from the file (a corrupt or truncated compressed stream) is
    raised after the complete lines read before it have been yielded; a last
    line cut by the error (no newline) is dropped.
    """
    chunk: list[bytes] = []
    try:
        for raw in iter(partial(fh.readline, MAX_LINE_BYTES + 1), b""):
            chunk.append(raw)
            if len(raw) > MAX_LINE_BYTES:
                break
            if len(chunk) >= BATCH_LINES:
                yield chunk
                chunk = []
    except (OSError, EOFError):
        if chunk and not chunk[-1].endswith(b"\n"):
            chunk.pop()
        if chunk:
            yield chunk
        raise
    if chunk:
        yield chunk


def parse_line(raw: bytes) -> tuple[Any, str | None]:
    """One line's JSON value, or ``None`` and the rule it breaks."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        if "utf-8" in str(exc).lower():
            return None, "line is not valid UTF-8"
        return None, f"line is not valid JSON ({exc.msg})"


def parse_chunk(first_line: int, lines: list[bytes]) -> ParsedChunk:
    """Parse a chunk of event lines starting at file line ``first_line``."""
    loads = orjson.loads
    try:
        recs = [loads(ln) for ln in lines]
        if set(map(type, recs)) == {dict} and max(map(len, lines)) <= MAX_LINE_BYTES:
            return ParsedChunk(recs, list(range(first_line, first_line + len(lines))))
    except orjson.JSONDecodeError:
        pass
    out = ParsedChunk([], [])
    for i, raw in enumerate(lines):
        if len(raw) > MAX_LINE_BYTES:
            out.bad_line, out.rule = first_line + i, TOO_LONG
            return out
        if not raw.strip():
            continue
        rec, rule = parse_line(raw)
        if rule is None and not isinstance(rec, dict):
            rule = "an event line must be a JSON object"
        if rule is not None:
            out.bad_line, out.rule = first_line + i, rule
            return out
        out.records.append(rec)
        out.nums.append(first_line + i)
    return out
