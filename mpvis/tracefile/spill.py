"""Merging ranks' spill files into a trace (``mpvis recover``, and ``mpvis run``).

A rank whose collector disappears writes the records the collector may not
have received to a *spill file* (:mod:`mpvis.instrument.transport`):
``spill-<run>-rank-<r>.jsonl``, JSON Lines whose first line is
``{"kind": "mpvis-spill", "version": 1, "rank": r, "reason": "..."}`` and whose
other lines are that rank's records in ``seq`` order (as decoded in the rank:
buffer messages keep ``buf``/``chan`` instead of ``send``).  The last line
may be cut (mpiexec killed the rank while it wrote); it is dropped.

:func:`merge_spills` appends to the trace every spilled record that continues
its rank (``seq`` = the rank's next), skips those already there, and stops a
rank at a gap (records lost between the trace and the spill: appending more
would break the no-gaps rule).  A plain trace whose last line was cut (the
central process died while writing it) loses that line first.  Consumes of
buffer messages get no ``send``: the reader infers it by the spec's
non-overtaking rule.

A compiled program's rank (the PMPI library, ``mpvis/instrument/pmpi/spill.c``)
writes each record's ``site`` as the library's raw name of the call site
(``@BASE:PC:FUNC+0xOFF:PATH``), as its collector would have received it; the
caller of :func:`merge_spills` passes ``name`` (``mpvis recover`` and ``mpvis
run`` pass :meth:`mpvis.collector.symbolize.SiteSymbolizer.name_record`) to
turn it into ``file:line`` and ``func`` as the collector does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpvis.tracefile.compression import open_binary_read, open_binary_write
from mpvis.tracefile.lines import chunks, parse_chunk, read_line
from mpvis.tracefile.reader import TraceFileError, read_header

__all__ = ["MergeResult", "merge_spills", "spill_files"]

SPILL_KIND = "mpvis-spill"
_NAME = re.compile(r"spill-(?P<run>.+)-rank-(?P<rank>\d+)\.jsonl$")


@dataclass
class MergeResult:
    """What :func:`merge_spills` did."""

    added: int = 0  # records appended to the trace
    duplicates: int = 0  # spilled records the trace already held
    unmergeable: int = 0  # spilled records after a gap (records lost in between)
    cut_lines: int = 0  # cut last lines dropped (trace and spill files)
    files: list[Path] = field(default_factory=list)  # spill files read
    gaps: dict[int, tuple[int, int]] = field(default_factory=dict)  # rank -> (next, first spilled)

    def summary(self) -> str:
        text = (f"{self.added} records recovered from {len(self.files)} spill file(s)"
                f" ({self.duplicates} already in the trace)")
        if self.unmergeable:
            lost = ", ".join(f"rank {r}: seq {a}..{b - 1}" for r, (a, b) in self.gaps.items())
            text += f"; {self.unmergeable} could not be merged after records lost ({lost})"
        return text


def spill_files(directory: Path, run: str | None) -> list[Path]:
    """The spill files of run ``run`` in ``directory`` (of any run when ``None``
    and they all belong to one run), by rank."""
    found = [(m, p) for p in directory.glob("spill-*-rank-*.jsonl")
             if (m := _NAME.match(p.name)) is not None]
    runs = {m["run"] for m, _ in found}
    if run is None and len(runs) > 1:
        raise TraceFileError(directory, None, "spill files of several runs: "
                             f"{', '.join(sorted(runs))} (the trace's header names none)")
    return [p for m, p in sorted(found, key=lambda mp: int(mp[0]["rank"]))
            if run is None or m["run"] == run]


def _read_spill(path: Path, result: MergeResult) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as fh:
        first = read_line(fh)
        try:
            meta = json.loads(first)
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or meta.get("kind") != SPILL_KIND:
            raise TraceFileError(path, 1, f"not a spill file (first line must be kind "
                                 f"'{SPILL_KIND}')")
        line = 2
        for lines in chunks(fh):
            if not lines[-1].endswith(b"\n"):
                lines.pop()
                result.cut_lines += 1
            chunk = parse_chunk(line, lines)
            if chunk.bad_line is not None:
                raise TraceFileError(path, chunk.bad_line, chunk.rule or "")
            yield from chunk.records
            line += len(lines)


def _clean(rec: dict[str, Any]) -> dict[str, Any]:
    """A spilled record as the trace needs it: no buffer-message bookkeeping."""
    rec.pop("buf", None)
    rec.pop("chan", None)
    return rec


def _drop_cut_line(trace: Path) -> int:
    """Truncate a plain trace's cut last line; 1 if there was one."""
    if trace.suffix in (".gz", ".zst"):
        return 0
    with open(trace, "rb+") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return 0
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        pos = size
        while pos > 0:  # back to the last newline
            step = min(pos, 1 << 16)
            fh.seek(pos - step)
            block = fh.read(step)
            nl = block.rfind(b"\n")
            if nl >= 0:
                fh.truncate(pos - step + nl + 1)
                return 1
            pos -= step
        fh.truncate(0)
        return 1


def _next_seqs(trace: Path, nprocs: int) -> list[int]:
    """The next ``seq`` of each rank after the trace's records."""
    nxt = [0] * nprocs
    with open_binary_read(trace) as fh:
        read_line(fh)
        line = 2
        for lines in chunks(fh):
            chunk = parse_chunk(line, lines)
            for rec in chunk.records:
                r, s = rec.get("rank"), rec.get("seq")
                if type(r) is int and type(s) is int and 0 <= r < nprocs:
                    nxt[r] = max(nxt[r], s + 1)
            if chunk.bad_line is not None:
                raise TraceFileError(trace, chunk.bad_line, chunk.rule or "")
            line += len(lines)
    return nxt


def merge_spills(trace: Path, spills: list[Path],
                 name: Callable[[dict[str, Any]], None] | None = None) -> MergeResult:
    """Append the spilled records that continue each rank to ``trace`` (see the
    module docstring), each passed to ``name`` first (in place: raw call sites
    of compiled programs).  Raises :class:`TraceFileError` for an unreadable
    trace or spill file (nothing is appended then)."""
    result = MergeResult(files=list(spills))
    if not spills:
        return result
    try:
        result.cut_lines += _drop_cut_line(trace)
        nprocs = read_header(trace)["nprocs"]
        nxt = _next_seqs(trace, nprocs)
    except OSError as exc:
        raise TraceFileError(trace, None, f"cannot read: {exc.strerror or exc}") from None
    out: list[dict[str, Any]] = []
    for path in spills:
        stopped: set[int] = set()
        for rec in _read_spill(path, result):
            r, s = rec.get("rank"), rec.get("seq")
            if type(r) is not int or type(s) is not int or not 0 <= r < nprocs:
                raise TraceFileError(path, None, f"a record of no rank of the trace: {rec!r:.80}")
            if r in stopped:
                result.unmergeable += 1
            elif s < nxt[r]:
                result.duplicates += 1
            elif s == nxt[r]:
                if name is not None:
                    name(rec)
                out.append(_clean(rec))
                nxt[r] += 1
            else:
                result.gaps[r] = (nxt[r], s)
                stopped.add(r)
                result.unmergeable += 1
    if out:
        with open_binary_write(trace, append=True) as fh:
            fh.write(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n"
                              for r in out))
    result.added = len(out)
    return result
