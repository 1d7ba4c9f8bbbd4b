"""Read trace files (spec ``trace-format.md``), streaming, with clear errors.

The file is read in chunks of lines (never whole into memory), parsed and fed
to a :class:`~mpvis.model.manager.ModelManager` in batches.  Any rule broken
raises :class:`TraceFileError` naming the file, the line and the rule; good
records before the bad one stay in the model (``TraceFileError.model``), so a
caller may still show them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from mpvis.model.errors import ModelInputError
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import RecordError, check_header
from mpvis.tracefile.compression import TruncatedFile, open_binary_read
from mpvis.tracefile.errors import TraceFileError
from mpvis.tracefile.lines import (
    MAX_LINE_BYTES,
    TOO_LONG,
    chunks,
    parse_chunk,
    parse_line,
    read_line,
)
from mpvis.tracefile.otf2_import import is_otf2
from mpvis.tracefile.otf2_load import otf2_header, otf2_load, otf2_records
from mpvis.tracefile.parse_worker import ParallelParser, ParsedBatch
from mpvis.tracefile.scan import as_batch, scan_chunks

__all__ = [  # TraceFileError: also importable from here, its old home
    "PARALLEL_MIN_BYTES", "LoadCancelled", "TraceFileError", "add_parsed", "finish_model",
    "header_size", "iter_records", "load_trace", "parsed_batches", "read_header",
    "split_parsed", "unreadable",
]

#: Files at least this large are parsed by a second process (see
#: :mod:`mpvis.tracefile.parse_worker`); below it, starting one costs more than it saves.
PARALLEL_MIN_BYTES = 8 << 20


class LoadCancelled(Exception):
    """Loading stopped because the caller's cancel event was set."""


def _parse(path: Path, lineno: int, raw: bytes) -> Any:
    value, rule = parse_line(raw)
    if rule is not None:
        raise TraceFileError(path, lineno, rule)
    return value


def _open(path: Path) -> IO[bytes]:
    try:
        return open_binary_read(path)
    except OSError as exc:
        raise TraceFileError(path, None, f"cannot open: {exc.strerror or exc}") from None


def read_header(path: str | Path) -> Record:
    """The header of a trace file (its first line), checked."""
    p = Path(path)
    if is_otf2(p):  # an OTF2 archive (docs/trace-format.md, "OTF2")
        return otf2_header(p)
    first = _header_line(p)
    if len(first) > MAX_LINE_BYTES:
        raise TraceFileError(p, 1, TOO_LONG)
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
    if is_otf2(p):
        yield from otf2_records(p)
        return
    read_header(p)
    with _open(p) as fh:
        read_line(fh)
        line = 2
        try:
            for lines in chunks(fh):
                chunk = parse_chunk(line, lines)
                yield from zip(chunk.nums, chunk.records, strict=True)
                if chunk.bad_line is not None:
                    raise TraceFileError(p, chunk.bad_line, chunk.rule or "")
                line += len(lines)
        except (OSError, EOFError) as exc:
            raise unreadable(p, exc) from None


def load_trace(
    path: str | Path,
    *,
    model: ModelManager | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    finish: bool = True,
    parallel: bool | None = None,
) -> ModelManager:
    """Read a whole trace into a model, checking every rule of the spec.

    ``progress(bytes_read, total_bytes)`` is called after each batch (for a
    compressed file ``total_bytes`` is the compressed size and ``bytes_read``
    an estimate).  Setting ``cancel`` stops with :class:`LoadCancelled`.
    ``parallel`` parses in a second process (default: for files of at least
    :data:`PARALLEL_MIN_BYTES` on a machine with more than one core); the
    model and the errors are the same either way.
    Raises :class:`TraceFileError` on the first rule broken; every good
    record before it is in the model (``TraceFileError.model``).
    """
    p = Path(path)
    if is_otf2(p):
        return otf2_load(p, model, progress, finish=finish)
    header = read_header(p)
    m = model or ModelManager(header)
    # The model holds millions of small acyclic objects: the cyclic garbage
    # collector would rescan them again and again while they are built.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with parsed_batches(p, m, parallel) as batches:
            _load_into(m, p, batches, progress, cancel)
        if finish:
            finish_model(m, p)
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()
    return m


@contextlib.contextmanager
def parsed_batches(path: Path, m: ModelManager, parallel: bool | None = None
                   ) -> Iterator[Iterable[ParsedBatch]]:
    """The batches of the trace ``path`` (not OTF2) parsed for ``m``, each to be
    given to :func:`add_parsed` in order (what :func:`load_trace` does; a
    caller may do it in another thread, as the window does to show a trace
    while it loads).  ``parallel``: as in :func:`load_trace`.  Iterating may
    raise ``OSError`` or ``EOFError`` (:func:`unreadable` names them)."""
    if parallel is None:
        parallel = (os.cpu_count() or 1) > 1 and path.stat().st_size >= PARALLEL_MIN_BYTES
    if parallel:
        with ParallelParser(path, m.nprocs, m.site_table, validate=m.validate) as parser:
            yield parser
    else:
        yield _parse_here(m, path)


def add_parsed(m: ModelManager, p: Path, pb: ParsedBatch) -> None:
    """Add one batch of :func:`parsed_batches` to ``m``; a rule broken raises
    :class:`TraceFileError` naming the line (the good records before it are in ``m``)."""
    try:
        m.add_columns(pb.cols)
    except ModelInputError as exc:
        i = exc.index
        bad = pb.nums[i] if i is not None and i < len(pb.nums) else pb.bad_line
        raise TraceFileError(p, bad, str(exc), m) from None
    if pb.bad_line is not None:
        raise TraceFileError(p, pb.bad_line, pb.rule or "", m)


def split_parsed(pb: ParsedBatch, size: int) -> list[ParsedBatch]:
    """``pb`` in consecutive pieces of at most ``size`` records (the error, bad
    line and rule go with the last), to add to a model in shorter steps."""
    cols = pb.cols
    if cols.n <= size:
        return [pb]
    arrays = [f.name for f in dataclasses.fields(cols)
              if isinstance(getattr(cols, f.name), np.ndarray)]
    out = []
    for a in range(0, cols.n, size):
        b = min(a + size, cols.n)
        last = b == cols.n
        part = dataclasses.replace(
            cols, n=b - a, **{name: getattr(cols, name)[a:b] for name in arrays},
            extras={i - a: v for i, v in cols.extras.items() if a <= i < b or (last and i >= b)},
            error=cols.error if last else None,
            error_rank=cols.error_rank if last else None,
            error_seq=cols.error_seq if last else None)
        nbytes = pb.nbytes * b // cols.n - pb.nbytes * a // cols.n
        out.append(ParsedBatch(
            part, pb.nums[a:] if last else pb.nums[a:b], nbytes,
            pb.bad_line if last else None, pb.rule if last else None))
    return out


def finish_model(m: ModelManager, p: Path) -> None:
    """``m.finish()`` for the trace ``p``: an error names its line (:class:`TraceFileError`)."""
    try:
        m.finish()
    except ModelInputError as exc:
        raise TraceFileError(p, _find_line(p, exc.rank, exc.seq), str(exc), m) from None


def _parse_here(m: ModelManager, p: Path) -> Iterator[ParsedBatch]:
    """The batches of ``p`` parsed in this process (what the parser process does)."""
    with _open(p) as fh:
        read_line(fh)
        for chunk in scan_chunks(fh, 2, m.nprocs, m.validate):
            yield ParsedBatch(as_batch(chunk, m.site_table), chunk.nums, chunk.nbytes,
                              chunk.bad_line, chunk.rule)


def _load_into(
    m: ModelManager,
    p: Path,
    batches: Iterable[ParsedBatch],
    progress: Callable[[int, int], None] | None,
    cancel: threading.Event | None,
) -> None:
    total = p.stat().st_size
    seen = header_size(p)
    try:
        for pb in batches:
            if cancel is not None and cancel.is_set():
                raise LoadCancelled(str(p))
            add_parsed(m, p, pb)
            seen += pb.nbytes
            if progress is not None:
                progress(min(seen, total), total)
    except (OSError, EOFError) as exc:
        raise unreadable(p, exc, m) from None


def header_size(p: Path) -> int:
    """Bytes of the header line of ``p`` (progress counts from there)."""
    return len(_header_line(p))


def _header_line(p: Path) -> bytes:
    """The raw first line of ``p`` (at most :data:`MAX_LINE_BYTES` + 1 bytes)."""
    with _open(p) as fh:
        try:
            return read_line(fh)
        except (OSError, EOFError) as exc:
            raise unreadable(p, exc, line=1) from None


def unreadable(p: Path, exc: BaseException, m: ModelManager | None = None,
               line: int | None = None) -> TraceFileError:
    """The error for a trace ``p`` that could not be read on (``OSError``/``EOFError``
    ``exc``); ``m``: the model holding the records read before."""
    text = str(exc)
    truncated = isinstance(exc, (TruncatedFile, EOFError)) or "truncated" in text
    if not text.startswith("cannot read"):
        text = f"cannot read (corrupt or truncated file?): {text}"
    if truncated and m is not None:
        text += f"; the {m.event_count} complete events before the cut were read"
    return TraceFileError(p, line, text, m, truncated=truncated)


def _find_line(path: Path, rank: int | None, seq: int | None) -> int | None:
    """Line number of event ``(rank, seq)``: a second streaming pass, for errors only."""
    if rank is None or seq is None:
        return None
    for lineno, rec in iter_records(path):
        if rec.get("rank") == rank and rec.get("seq") == seq:
            return lineno
    return None
