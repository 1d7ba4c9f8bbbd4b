"""A second process that reads, parses and checks a trace file while the model builds.

Loading a trace is a pipeline of two halves: turning lines into checked
columns (JSON parsing, the per-record rules, column extraction), and building
the model from the columns (context rules, matching, clocks, the classifier).
The first half needs no model state, so :class:`ParallelParser` runs it in a
child process, one chunk ahead of the model, and both cores work.  The child
reads with :func:`mpvis.tracefile.scan.scan_chunks`: the C scanner
(``_cscan.c``) turns the lines it fully understands straight into columns,
and the reference path (orjson, :func:`mpvis.model.ingest.extract`) reads the
others, with the same result; the child imports NumPy only when it meets
such a line.

The child is ``python -m mpvis.tracefile.parse_worker`` (a plain subprocess:
no ``multiprocessing``, so the caller's ``__main__`` is never re-imported and
nothing is pickled).  It writes one frame per chunk to its standard output:
a 4-byte little-endian length, then a msgpack map (the columns travel as raw
little-endian arrays, :data:`~mpvis.tracefile.scan.DTYPES`):

``{"n", "cols": {name: bytes}, "extras": {i: {...}}, "sites": [names], "lines":
[first, stop] | None, "nums": [line, ...] | None, "bytes": int, "error": str |
None, "er", "es", "bad_line", "rule"}``.  No record dicts travel: the model's
analyzers read its columns (:mod:`mpvis.model.stream`).

``sites`` names the chunk's sites in order of first appearance and the
``site`` column indexes it; the parent numbers them in its model's
:class:`~mpvis.model.ingest.SiteTable`.  The records' file lines are
``range(*lines)`` when the chunk has no blank line, else ``nums``.  A
message ``{"fail": text}`` reports a file that cannot be read;
``{"end": True}`` ends the stream.  The child stops after the first chunk
that carries an error: its good prefix is in that message, so nothing good
is lost.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import subprocess
import sys
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgpack

from mpvis.tracefile.compression import open_binary_read
from mpvis.tracefile.scan import ScannedChunk, as_batch, scan_chunks

if TYPE_CHECKING:
    from mpvis.model.ingest import Batch, SiteTable

__all__ = ["ParallelParser", "ParsedBatch"]

_log = logging.getLogger(__name__)


@dataclass
class ParsedBatch:
    """One chunk, checked and in columns, as the parent receives it.

    ``cols.site`` holds the parent model's site ids; ``nums[i]`` is the file
    line of record ``i``.  ``bad_line``/``rule``: a line that is not a JSON
    object ended the chunk.
    """

    cols: Batch
    nums: Sequence[int]
    nbytes: int
    bad_line: int | None
    rule: str | None


class ParallelParser:
    """Iterate over the checked batches of ``path`` parsed by a child process.

    ``sites`` is the model's site table (new sites are added to it).  Reading
    starts after the header line.  Use as a context manager: leaving it stops
    the child (e.g. when the load is cancelled or the model rejects a record).
    """

    def __init__(self, path: Path, nprocs: int, sites: SiteTable, *, validate: bool) -> None:
        self.path = path
        self._sites = sites
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path), str(nprocs), str(int(validate))],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        assert self._proc.stdout is not None
        self._out = self._proc.stdout

    def __enter__(self) -> ParallelParser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child (if still running) and release the pipe."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._out.close()
        self._proc.wait()

    def __iter__(self) -> Iterator[ParsedBatch]:
        while True:
            head = self._out.read(4)
            body = self._out.read(int.from_bytes(head, "little")) if len(head) == 4 else b""
            if not body:
                raise OSError("the parser process ended unexpectedly")
            msg = msgpack.unpackb(body, raw=False, strict_map_key=False)
            if "end" in msg:
                return
            if "fail" in msg:
                if msg.get("detail"):
                    _log.error("mpvis parser process: %s", msg["detail"])
                raise OSError(msg["fail"])
            yield self._decode(msg)

    def _decode(self, msg: dict[str, Any]) -> ParsedBatch:
        lines = msg["lines"]
        nums: Sequence[int] = msg["nums"] if lines is None else range(*lines)
        chunk = ScannedChunk(msg["n"], msg["cols"], msg["sites"], nums, msg["bytes"],
                             msg["extras"], msg["error"], msg["er"], msg["es"],
                             msg["bad_line"], msg["rule"])
        return ParsedBatch(as_batch(chunk, self._sites), nums, chunk.nbytes, chunk.bad_line,
                           chunk.rule)


def _encode(chunk: ScannedChunk) -> bytes:
    """One length-prefixed frame for a chunk (see the module docstring)."""
    nums = chunk.nums
    span = [nums.start, nums.stop] if isinstance(nums, range) else None
    body: bytes = msgpack.packb({
        "n": chunk.n,
        "cols": chunk.cols,
        "extras": chunk.extras,
        "sites": chunk.sites,
        "lines": span,
        "nums": None if span is not None else list(nums),
        "bytes": chunk.nbytes,
        "error": chunk.error,
        "er": chunk.error_rank,
        "es": chunk.error_seq,
        "bad_line": chunk.bad_line,
        "rule": chunk.rule,
    }, use_bin_type=True)
    return len(body).to_bytes(4, "little") + body


def _send(out: IO[bytes], msg: dict[str, Any]) -> None:
    body = msgpack.packb(msg, use_bin_type=True)
    out.write(len(body).to_bytes(4, "little"))
    out.write(body)


def _serve(path: str, nprocs: int, validate: bool, out: IO[bytes]) -> None:
    """The child: parse, check and column ``path`` chunk by chunk into ``out``."""
    gc.disable()  # the Python path builds and drops acyclic dicts; the collector would rescan them
    try:
        _produce(Path(path), nprocs, validate, out)
    except (OSError, EOFError) as exc:
        _send(out, {"fail": f"cannot read (corrupt or truncated file?): {exc}"})
    except Exception:  # report, never die silently
        _send(out, {"fail": "internal error in the parser process",
                    "detail": traceback.format_exc()})
    out.flush()


def _produce(path: Path, nprocs: int, validate: bool, out: IO[bytes]) -> None:
    with open_binary_read(path) as fh:
        fh.readline()
        for chunk in scan_chunks(fh, 2, nprocs, validate):
            out.write(_encode(chunk))
            if chunk.error is not None or chunk.bad_line is not None:
                break
    _send(out, {"end": True})


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):  # the parent stopped reading (cancel, error)
        _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.stdout.buffer)
