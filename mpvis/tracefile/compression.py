"""Open trace files transparently compressed by their suffix (``.gz``, ``.zst``)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO, cast


def open_binary_read(path: Path) -> IO[bytes]:
    """Open ``path`` for streaming binary reading, decompressing by suffix."""
    if path.suffix == ".gz":
        return cast(IO[bytes], gzip.open(path, "rb"))
    if path.suffix == ".zst":
        import zstandard

        raw = open(path, "rb")  # noqa: SIM115 - ownership passes to the reader
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
    return open(path, "rb")


def open_binary_write(path: Path, *, append: bool = False) -> IO[bytes]:
    """Open ``path`` for binary writing (or appending), compressing by suffix."""
    mode = "ab" if append else "wb"
    if path.suffix == ".gz":
        return cast(IO[bytes], gzip.open(path, mode))
    if path.suffix == ".zst":
        import zstandard

        raw = open(path, mode)  # noqa: SIM115 - ownership passes to the writer
        return zstandard.ZstdCompressor().stream_writer(raw, closefd=True)
    return open(path, mode)
