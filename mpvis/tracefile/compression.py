"""Open trace files transparently compressed by their suffix (``.gz``, ``.zst``).

Reading never lets a decompressor's own exception escape: a corrupt or
mislabelled file raises :class:`CorruptFile` and a compressed stream that ends
before its end marker (a run interrupted while writing) raises
:class:`TruncatedFile`, both ``OSError`` subclasses, after every byte that
did decompress has been returned.  A ``.zst`` file cut short is detected too
(the ``zstandard`` stream reader would end silently).
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path
from typing import IO, Any, cast

from mpvis.errors import MpvisError

#: Bytes of compressed input read per step.
_STEP = 1 << 18


class CorruptFile(MpvisError, OSError):
    """The compressed data cannot be decoded (corrupt, or not in the format its suffix names)."""


class TruncatedFile(MpvisError, OSError):
    """The compressed stream ended before its end marker: the data read so far is good."""


class _GzipRaw(io.RawIOBase):
    """A ``.gz`` file's decompressed bytes, with decoder errors as :class:`CorruptFile`."""

    def __init__(self, path: Path) -> None:
        self._gz = gzip.GzipFile(path, "rb")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:  # read1: one step of the decoder, so data before a cut is returned first
            data = self._gz.read1(len(b))
        except EOFError:
            raise TruncatedFile("the compressed stream ends before its end marker "
                                "(truncated file)") from None
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise CorruptFile(f"not a valid gzip stream ({exc})") from None
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        self._gz.close()
        super().close()


class _ZstdRaw(io.RawIOBase):
    """A ``.zst`` file's decompressed bytes (every frame), checking that the last frame ends."""

    def __init__(self, path: Path) -> None:
        import zstandard

        self._zstd = zstandard
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._obj = zstandard.ZstdDecompressor().decompressobj()
        self._pending = b""
        self._started = False  # a frame has begun and not ended

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._pending:
            data = self._obj.unused_data if self._obj.eof else b""
            if self._obj.eof:
                self._obj = self._zstd.ZstdDecompressor().decompressobj()
                self._started = False
            if not data:
                data = self._fh.read(_STEP)
            if not data:
                if self._started:
                    raise TruncatedFile("the compressed stream ends before its end marker "
                                        "(truncated file)")
                return 0
            self._started = True
            try:
                self._pending = self._obj.decompress(data)
            except self._zstd.ZstdError as exc:
                raise CorruptFile(f"not a valid zstd stream ({exc})") from None
            if self._obj.eof and not self._obj.unused_data and not self._pending:
                self._started = False
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def open_binary_read(path: Path) -> IO[bytes]:
    """Open ``path`` for streaming binary reading, decompressing by suffix.

    Decoding errors surface as :class:`CorruptFile` / :class:`TruncatedFile`
    (``OSError``) from the reads, never as a decompressor's own exception.
    """
    if path.suffix == ".gz":
        return io.BufferedReader(_GzipRaw(path), buffer_size=1 << 16)
    if path.suffix == ".zst":
        return io.BufferedReader(_ZstdRaw(path), buffer_size=1 << 16)
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
