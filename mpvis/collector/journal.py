"""The central process's journal: every admitted record, on disk, before the model.

MPVisualizer's central process (section 2) feeds the manager that builds the
functional model.  mpvis first appends each record to a journal file in the
trace format (``shared/spec/trace-format.md``) and flushes it to the operating
system, so a crash of the window loses nothing; only then is the batch
acknowledged and handed on.

A record from the wire is admitted when it passes
:func:`mpvis.model.ingest.valid_prefix` (every per-record rule) and its ``seq`` is the next one of
its rank.  A repeated ``seq`` is a duplicate and is dropped; a gap, a bad record
or a value JSON cannot hold is rejected.  Each refusal is logged with the rank,
the ``seq`` and the reason (or handed to ``on_refuse``, which reports it: the
live feed), and the rest of the batch goes on, so the journal
always stays a valid trace file.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from itertools import groupby, pairwise
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from mpvis.model.ingest import valid_prefix
from mpvis.protocol.compact_columns import CompactColumns
from mpvis.protocol.record_types import Record
from mpvis.tracefile.writer import TraceWriter, encode_record

__all__ = ["Journal"]

log = logging.getLogger(__name__)


#: Records written and flushed at a time: if the disk fills up, the pieces
#: before the failing one stay in the file.
WRITE_PIECE = 1024
_NEWLINE = ord("\n")
#: Refusals logged one by one per journal; later ones are only counted.
LOGGED_REFUSALS = 20
_RANK, _SEQ, _KIND = itemgetter("rank"), itemgetter("seq"), itemgetter("kind")


class Journal:
    """The journal of one run (a trace file), with the per-record admission rules."""

    def __init__(
        self, path: str | Path, header: Record,
        on_refuse: Callable[[object, str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.header = header
        #: Told of every refused record and why, instead of the log (the live feed).
        self.on_refuse = on_refuse
        self.nprocs: int = header["nprocs"]
        self._writer = TraceWriter(self.path, header)
        self._next_seq: dict[int, int] = {}
        self.written = 0
        self.duplicates = 0
        self.rejected = 0
        #: Admitted records that could not be written (the disk is full, say).
        self.unwritten = 0
        #: Why writing stopped (names the file and the error), ``None`` while it works.
        self.failed: str | None = None
        self._good_size = self._size()  # the file up to its last whole line
        #: Ranks whose ``final`` record is journaled.
        self.finals: set[int] = set()

    def next_seq(self, rank: int) -> int:
        """The ``seq`` the next admitted record of ``rank`` must carry."""
        return self._next_seq.get(rank, 0)

    def refuse(self, rec: object, reason: str) -> None:
        """Refuse a record for a reason found outside the journal (logged, counted)."""
        self._refuse(rec, reason)

    def _refuse(self, rec: object, reason: str) -> None:
        self.rejected += 1
        if self.on_refuse is not None:
            self.on_refuse(rec, reason)
        elif self.rejected <= LOGGED_REFUSALS:
            rank = rec.get("rank") if isinstance(rec, dict) else None
            seq = rec.get("seq") if isinstance(rec, dict) else None
            log.warning("record refused (rank %s, seq %s): %s", rank, seq, reason)
        elif self.rejected == LOGGED_REFUSALS + 1:
            log.warning("further refused records of %s are counted, not logged", self.path)

    def valid(self, records: list[Any]) -> list[Record]:
        """The records of ``records`` that pass every per-record rule, in order; each
        other one is refused (logged, counted), the rest go on."""
        valid: list[Record] = []
        pos = 0
        while pos < len(records):  # per-record rules, checked on whole columns
            n, error = valid_prefix(records[pos:], self.nprocs)
            valid.extend(records[pos:pos + n])
            if error is not None:
                self._refuse(records[pos + n], str(error))
            pos += n + 1
        return valid

    def admit(self, records: list[Any], *, checked: bool = False) -> list[Record]:
        """The records of ``records`` that may be journaled, in order (``checked``:
        they passed :meth:`valid` already)."""
        good: list[Record] = []
        next_seq = self._next_seq
        valid = records if checked else self.valid(records)
        for rank, group in groupby(valid, _RANK):
            # A run of one rank's records (a rank's batch, as it arrives): when its
            # seqs are the next ones, it is admitted whole, without a Python step
            # per record; otherwise record by record.
            part = list(group)
            want = next_seq.get(rank, 0)
            if list(map(_SEQ, part)) == list(range(want, want + len(part))):
                next_seq[rank] = want + len(part)
                if "final" in map(_KIND, part):
                    self.finals.add(rank)
                good += part
            else:
                self._admit_each(part, good)
        return good

    def _admit_each(self, records: list[Record], good: list[Record]) -> None:
        """:meth:`admit`, one record after another, into ``good``."""
        next_seq = self._next_seq
        for rec in records:
            rank = rec["rank"]
            seq = rec["seq"]
            want = next_seq.get(rank, 0)
            if seq != want:
                if seq < want:
                    self.duplicates += 1
                else:
                    self._refuse(rec, f"seq {seq} leaves a gap (rank {rank} expects {want})")
                continue
            next_seq[rank] = want + 1
            if rec["kind"] == "final":
                self.finals.add(rank)
            good.append(rec)

    def _size(self) -> int | None:
        """Bytes of a plain journal on disk after a flush (``None``: compressed)."""
        if self.path.suffix in (".gz", ".zst"):
            return None
        self._writer.flush()
        return self.path.stat().st_size

    def append(self, records: list[Any], *, checked: bool = False) -> list[Record]:
        """Admit, write and flush ``records``; return those written (``checked``:
        they passed :meth:`valid` already).

        If writing fails (``OSError``: no space left, quota, I/O error), the file
        is cut back to its last whole line, :attr:`failed` says why, and these
        records and every later one count as :attr:`unwritten`: the journal
        stays a valid trace of what it holds."""
        good = self.admit(records, checked=checked)
        if not good:
            return good
        if self.failed is not None:
            self.unwritten += len(good)
            return []
        written: list[Record] = []
        done = 0
        try:
            while done < len(good):  # in pieces: a failure keeps every piece before it
                piece = good[done:done + WRITE_PIECE]
                try:
                    self._writer.write_many(piece)
                except (TypeError, ValueError):
                    # Some value cannot be written as JSON (msgpack bytes, say): sort them out.
                    piece = self._write_one_by_one(piece)
                self._writer.flush()
                if self._good_size is not None:
                    self._good_size = self.path.stat().st_size
                done += WRITE_PIECE
                written += piece
        except OSError as exc:
            self.written += len(written)
            self._fail(exc, len(good) - min(done, len(good)))
            return written
        self.written += len(written)
        return written

    def takes(self, block: CompactColumns) -> bool:
        """Whether ``block`` (checked already, its ``seq`` gapless) continues its rank:
        then :meth:`append_columns` admits it whole.  Otherwise its records go
        through :meth:`append` one by one (duplicates dropped, a gap refused)."""
        return block.first_seq == self._next_seq.get(block.rank, 0)

    def append_columns(self, block: CompactColumns) -> int:
        """Admit, write and flush a rank's batch :meth:`takes` accepts, written from
        its columns (:meth:`CompactColumns.jsonl`, no dict per record); how many of
        its records were written (a prefix).  As in :meth:`append`, it is written
        in pieces of :data:`WRITE_PIECE` records, and a failed write cuts the file
        back to its last whole line: the pieces before it stay, the rest of the
        block and every later record are unwritten."""
        assert self.takes(block)
        n = len(block)
        self._next_seq[block.rank] = block.first_seq + n
        if block.has_final:
            self.finals.add(block.rank)
        if self.failed is not None:
            self.unwritten += n
            return 0
        lines = block.jsonl()
        ends = [0]
        if n > WRITE_PIECE:  # where every WRITE_PIECE-th line ends
            newlines = np.flatnonzero(np.frombuffer(lines, dtype=np.uint8) == _NEWLINE)
            ends += (newlines[WRITE_PIECE - 1:-1:WRITE_PIECE] + 1).tolist()
        ends.append(len(lines))
        done = 0
        try:
            for start, end in pairwise(ends):
                count = min(WRITE_PIECE, n - done)
                self._writer.write_bytes(lines[start:end], count)
                self._writer.flush()
                if self._good_size is not None:  # flushed whole: no need to ask the disk
                    self._good_size += end - start
                done += count
        except OSError as exc:
            self.written += done
            self._fail(exc, n - done)
            return done
        self.written += n
        return n

    def _fail(self, exc: OSError, pending: int) -> None:
        self.failed = (f"cannot write the trace {self.path}: {exc.strerror or exc}; it keeps "
                       f"the {self.written} records written before, later records are lost")
        self.unwritten += pending
        log.error("%s", self.failed)
        self._writer.abandon()  # its buffer may hold a part of a line: never written
        if self._good_size is not None:
            with contextlib.suppress(OSError):
                os.truncate(self.path, self._good_size)

    def _write_one_by_one(self, records: list[Record]) -> list[Record]:
        written: list[Record] = []
        for rec in records:
            try:
                encode_record(rec)
            except (TypeError, ValueError) as exc:
                self._refuse(rec, f"not representable in JSON: {exc}")
                # Its successors on the rank would now leave a gap: stop the rank here.
                self._next_seq[rec["rank"]] = -1
                continue
            if self._next_seq.get(rec["rank"]) == -1:
                self._refuse(rec, "follows a refused record of its rank")
                continue
            self._writer.write(rec)
            written.append(rec)
        return written

    def close(self) -> None:
        """Flush and close the file; it stays a valid trace."""
        if self.failed is not None:
            return
        try:
            self._writer.close()
        except OSError as exc:
            self._fail(exc, 0)
