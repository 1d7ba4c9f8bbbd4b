"""A second process that reads, parses and checks a trace file while the model builds.

Loading a trace is a pipeline of two halves of similar cost: turning lines
into checked columns (JSON parsing, the per-record rules, column extraction:
:func:`mpvis.model.ingest.extract`), and building the model from the columns
(context rules, matching, clocks, the classifier).  The first half needs no
model state, so :class:`ParallelParser` runs it in a child process, one chunk
ahead of the model, and both cores work.

The child is ``python -m mpvis.tracefile.parse_worker`` (a plain subprocess:
no ``multiprocessing``, so the caller's ``__main__`` is never re-imported and
nothing is pickled).  It writes one frame per chunk to its standard output:
a 4-byte little-endian length, then a msgpack map (the columns travel as raw
little-endian arrays):

``{"n", "cols": {name: bytes}, "extras": [[i, {...}], ...], "sites": [new site
names], "nums": bytes, "bytes": int, "error": str | None, "er", "es",
"bad_line", "rule"}``.  No record dicts travel: the model's analyzers read
its columns (:mod:`mpvis.model.stream`).

``sites`` numbers the child's sites in order of first appearance; the parent
maps them into its model's :class:`~mpvis.model.ingest.SiteTable`.  A message
``{"fail": text}`` reports a file that cannot be read; ``{"end": True}`` ends
the stream.  The child stops after the first chunk that carries an error: its
good prefix is in that message, so nothing good is lost.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgpack
import numpy as np

from mpvis.model.ingest import INT_COLUMNS, Batch, SiteTable, extract
from mpvis.protocol.records import RecordError
from mpvis.tracefile.compression import open_binary_read
from mpvis.tracefile.lines import ParsedChunk, chunks, parse_chunk

__all__ = ["ParallelParser", "ParsedBatch"]

_log = logging.getLogger(__name__)
_DTYPES = {**dict.fromkeys(INT_COLUMNS, "<i8"), "code": "i1", "flags": "i1", "t": "<f8",
           "site": "<i8"}


@dataclass
class ParsedBatch:
    """One chunk, checked and in columns, as the parent receives it.

    ``cols.site`` holds the parent model's site ids.
    ``bad_line``/``rule``: a line that is not a JSON object ended the chunk.
    """

    cols: Batch
    nums: list[int]
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
        self._trans: list[int] = []
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
        trans = self._trans
        trans.extend(self._sites.add(name) for name in msg["sites"])
        raw = msg["cols"]
        arrays = {name: np.frombuffer(raw[name], dtype=dt) for name, dt in _DTYPES.items()}
        site = arrays["site"]
        if len(site):
            site = np.asarray([*trans, -1], dtype=np.int64)[site]  # -1 indexes the -1
        cols = Batch(
            n=msg["n"], rank=arrays["rank"], seq=arrays["seq"], code=arrays["code"],
            t=arrays["t"], site=site, comm=arrays["comm"], peer=arrays["peer"],
            tag=arrays["tag"], flags=arrays["flags"], req=arrays["req"], ref=arrays["ref"],
            sseq=arrays["sseq"], size=arrays["size"], call=arrays["call"],
            extras=dict(msg["extras"]),
            error_rank=msg["er"], error_seq=msg["es"],
        )
        if msg["error"] is not None:
            cols.error = RecordError(msg["error"])
        return ParsedBatch(cols, np.frombuffer(msg["nums"], dtype="<i8").tolist(),
                           msg["bytes"], msg["bad_line"], msg["rule"])


def _encode(cols: Batch, new_sites: list[str], nbytes: int, chunk: ParsedChunk) -> bytes:
    """One length-prefixed frame for a chunk (see the module docstring)."""
    body: bytes = msgpack.packb({
        "n": cols.n,
        "cols": {name: np.ascontiguousarray(getattr(cols, name), dtype=dt).tobytes()
                 for name, dt in _DTYPES.items()},
        "extras": list(cols.extras.items()),
        "sites": new_sites,
        "nums": np.asarray(chunk.nums, dtype="<i8").tobytes(),
        "bytes": nbytes,
        "error": None if cols.error is None else str(cols.error),
        "er": cols.error_rank,
        "es": cols.error_seq,
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
    gc.disable()  # it builds and drops acyclic dicts; the collector would only rescan them
    try:
        _produce(Path(path), nprocs, validate, out)
    except (OSError, EOFError) as exc:
        _send(out, {"fail": f"cannot read (corrupt or truncated file?): {exc}"})
    except Exception:  # report, never die silently
        _send(out, {"fail": "internal error in the parser process",
                    "detail": traceback.format_exc()})
    out.flush()


def _produce(path: Path, nprocs: int, validate: bool, out: IO[bytes]) -> None:
    sites = SiteTable()
    with open_binary_read(path) as fh:
        fh.readline()
        line = 2
        for lines in chunks(fh):
            chunk = parse_chunk(line, lines)
            known = len(sites.names)
            cols = extract(chunk.records, nprocs, sites, validate)
            nbytes = sum(map(len, lines))
            out.write(_encode(cols, sites.names[known:], nbytes, chunk))
            if cols.error is not None or chunk.bad_line is not None:
                break
            line += len(lines)
    _send(out, {"end": True})


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):  # the parent stopped reading (cancel, error)
        _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.stdout.buffer)
