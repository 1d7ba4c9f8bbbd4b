"""Read trace files (spec ``trace-format.md``), streaming, with clear errors.

The file is read in chunks of lines (never whole into memory), parsed and fed
to a :class:`~mpvis.model.manager.ModelManager` in batches.  Any rule broken
raises :class:`TraceFileError` naming the file, the line and the rule; good
records before the bad one stay in the model (``TraceFileError.model``), so a
caller may still show them.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from mpvis.model.errors import ModelInputError
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import RecordError, check_header
from mpvis.tracefile.compression import open_binary_read

Record = dict[str, Any]
#: Lines parsed and fed to the model at a time.
BATCH_LINES = 16384


class TraceFileError(Exception):
    """A trace file breaks a rule of the format.  ``str()`` is the message for a user."""

    def __init__(self, path: Path, line: int | None, rule: str,
                 model: ModelManager | None = None) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {rule}")
        self.path = path
        self.line = line
        self.rule = rule
        self.model = model


class LoadCancelled(Exception):
    """Loading stopped because the caller's cancel event was set."""


def _parse(path: Path, lineno: int, raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "utf-8" in str(exc).lower():
            raise TraceFileError(path, lineno, "line is not valid UTF-8") from None
        raise TraceFileError(path, lineno, f"line is not valid JSON ({exc.msg})") from None


def _open(path: Path) -> IO[bytes]:
    try:
        return open_binary_read(path)
    except OSError as exc:
        raise TraceFileError(path, None, f"cannot open: {exc.strerror or exc}") from None


def _chunks(path: Path, fh: IO[bytes]) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    try:
        for raw in fh:
            chunk.append(raw)
            if len(chunk) >= BATCH_LINES:
                yield chunk
                chunk = []
    except (OSError, EOFError) as exc:
        raise TraceFileError(path, None, f"cannot read (corrupt or truncated file?): {exc}"
                             ) from None
    if chunk:
        yield chunk


def _parse_batch(path: Path, first_line: int, lines: list[bytes]) -> tuple[list[Record], list[int]]:
    """Parse a chunk of lines; blank lines are skipped.  Returns records and line numbers."""
    loads = orjson.loads
    try:
        recs = [loads(ln) for ln in lines]
        if set(map(type, recs)) == {dict}:
            return recs, list(range(first_line, first_line + len(lines)))
    except orjson.JSONDecodeError:
        pass
    recs, nums = [], []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        rec = _parse(path, first_line + i, raw)
        if not isinstance(rec, dict):
            raise TraceFileError(path, first_line + i, "an event line must be a JSON object")
        recs.append(rec)
        nums.append(first_line + i)
    return recs, nums


def read_header(path: str | Path) -> Record:
    """The header of a trace file (its first line), checked."""
    p = Path(path)
    with _open(p) as fh:
        first = fh.readline()
    if not first.strip():
        raise TraceFileError(p, 1, "the file is empty: the first line must be the header")
    try:
        return check_header(_parse(p, 1, first))
    except RecordError as exc:
        raise TraceFileError(p, 1, str(exc)) from None


def iter_records(path: str | Path) -> Iterator[tuple[int, Record]]:
    """Yield ``(line number, record)`` for every event line, streaming.

    Only JSON syntax is checked here; use :func:`load_trace` for every rule.
    """
    p = Path(path)
    read_header(p)
    with _open(p) as fh:
        fh.readline()
        line = 2
        for chunk in _chunks(p, fh):
            recs, nums = _parse_batch(p, line, chunk)
            yield from zip(nums, recs, strict=True)
            line += len(chunk)


def load_trace(
    path: str | Path,
    *,
    model: ModelManager | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    finish: bool = True,
) -> ModelManager:
    """Read a whole trace into a model, checking every rule of the spec.

    ``progress(bytes_read, total_bytes)`` is called after each batch (for a
    compressed file ``total_bytes`` is the compressed size and ``bytes_read``
    an estimate).  Setting ``cancel`` stops with :class:`LoadCancelled`.
    Raises :class:`TraceFileError` on the first rule broken.
    """
    p = Path(path)
    header = read_header(p)
    m = model or ModelManager(header)
    # The model holds millions of small acyclic objects: the cyclic garbage
    # collector would rescan them again and again while they are built.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _load_into(m, p, progress, cancel, finish)
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()
    return m


def _load_into(
    m: ModelManager,
    p: Path,
    progress: Callable[[int, int], None] | None,
    cancel: threading.Event | None,
    finish: bool,
) -> None:
    total = p.stat().st_size
    seen = 0
    with _open(p) as fh:
        seen += len(fh.readline())
        line = 2
        for chunk in _chunks(p, fh):
            if cancel is not None and cancel.is_set():
                raise LoadCancelled(str(p))
            recs, nums = _parse_batch(p, line, chunk)
            try:
                m.add_batch(recs)
            except ModelInputError as exc:
                bad = nums[exc.index] if exc.index is not None else None
                raise TraceFileError(p, bad, str(exc), m) from None
            line += len(chunk)
            seen += sum(len(x) for x in chunk)
            if progress is not None:
                progress(min(seen, total), total)
    if finish:
        try:
            m.finish()
        except ModelInputError as exc:
            raise TraceFileError(p, _find_line(p, exc.rank, exc.seq), str(exc), m) from None


def _find_line(path: Path, rank: int | None, seq: int | None) -> int | None:
    """Line number of event ``(rank, seq)``: a second streaming pass, for errors only."""
    if rank is None or seq is None:
        return None
    for lineno, rec in iter_records(path):
        if rec.get("rank") == rank and rec.get("seq") == seq:
            return lineno
    return None
