"""Trace-file lines in chunks, parsed to records, with the first bad line located.

Shared by the in-process reader (:mod:`mpvis.tracefile.reader`) and the parser
process (:mod:`mpvis.tracefile.parse_worker`).  Nothing here raises for bad
input: a chunk's parse returns the good records before the first bad line and
that line's number and rule, so callers keep every good record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

Record = dict[str, Any]
#: Lines parsed and fed to the model at a time.
BATCH_LINES = 16384


@dataclass
class ParsedChunk:
    """The records of a chunk up to its first bad line, and that line's problem.

    ``nums[i]`` is the file line of ``records[i]`` (blank lines are skipped).
    """

    records: list[Record]
    nums: list[int]
    bad_line: int | None = None
    rule: str | None = None


def chunks(fh: IO[bytes]) -> Iterator[list[bytes]]:
    """Lines of ``fh`` in lists of :data:`BATCH_LINES` (raises ``OSError``/``EOFError``
    from the file, e.g. a truncated compressed stream)."""
    chunk: list[bytes] = []
    for raw in fh:
        chunk.append(raw)
        if len(chunk) >= BATCH_LINES:
            yield chunk
            chunk = []
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
        if set(map(type, recs)) == {dict}:
            return ParsedChunk(recs, list(range(first_line, first_line + len(lines))))
    except orjson.JSONDecodeError:
        pass
    out = ParsedChunk([], [])
    for i, raw in enumerate(lines):
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
