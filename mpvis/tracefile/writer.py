"""Write trace files (JSON Lines, spec ``trace-format.md``), streaming.

:class:`TraceWriter` is also the journal of the central process: every record
is appended, in arrival order, before the model sees it, so a crash of the
window loses nothing.  Records are written as received (the spec guarantees
that writing the records received, in arrival order, gives a valid file).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO

import orjson

from mpvis.protocol.record_types import Record
from mpvis.protocol.records import make_header
from mpvis.tracefile.compression import open_binary_write


def encode_record(rec: Record) -> bytes:
    """One record as a compact JSON line (UTF-8, newline-terminated).

    Raises ``TypeError`` for a value JSON cannot hold (bytes, an integer wider
    than 64 bits, a non-string key).
    """
    return orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)


#: :func:`encode_record` without a Python call per record (``write_many``).
_encode = functools.partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)
#: Records encoded per write by ``write_many``.
_CHUNK = 65536


class TraceWriter:
    """Streaming writer of one trace file.

    The header is written on construction (``header`` or one made from
    ``nprocs``).  ``write`` appends records; ``flush`` pushes them to the
    operating system (the journal calls it after every batch).
    """

    def __init__(
        self, path: str | Path, header: Record | None = None, *, nprocs: int | None = None
    ) -> None:
        if header is None:
            if nprocs is None:
                raise ValueError("TraceWriter needs a header or nprocs")
            header = make_header(nprocs)
        self.path = Path(path)
        self._fh: IO[bytes] = open_binary_write(self.path)
        self._fh.write(encode_record(header))
        self.records_written = 0

    def write(self, rec: Record) -> None:
        """Append one event record."""
        self._fh.write(encode_record(rec))
        self.records_written += 1

    def write_many(self, recs: Iterable[Record]) -> None:
        """Append records in order, encoded a chunk at a time (a generator of any
        length is written in bounded memory)."""
        it = iter(recs)
        while chunk := list(itertools.islice(it, _CHUNK)):
            self._fh.write(b"".join(map(_encode, chunk)))
            self.records_written += len(chunk)

    def write_bytes(self, lines: bytes, count: int) -> None:
        """Append ``count`` records already encoded as lines (as :func:`encode_record`
        gives them; the central process writes a compact batch from its columns)."""
        self._fh.write(lines)
        self.records_written += count

    def flush(self) -> None:
        """Hand buffered records to the operating system."""
        self._fh.flush()

    def abandon(self) -> None:
        """Stop writing after a failed write (a full disk): bytes still buffered are
        discarded, never written later (a late flush at the old offset would
        leave a hole of NUL bytes after the caller cut the file back).  The file's
        descriptor is pointed at the null device, then closed."""
        try:
            fd = self._fh.fileno()
        except (OSError, AttributeError, ValueError):
            fd = None
        if fd is not None:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, fd)
            finally:
                os.close(null)
        with contextlib.suppress(OSError, ValueError):
            self._fh.close()

    def close(self) -> None:
        """Flush and close the file."""
        if not self._fh.closed:
            self._fh.flush()
            self._fh.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_trace(path: str | Path, header: Record, records: Iterable[Record]) -> int:
    """Write a whole trace file; return the number of event records written."""
    with TraceWriter(path, header) as w:
        w.write_many(records)
        return w.records_written
