"""The race record: one JSON Lines file per rank in a directory (``docs/replay.md``).

Netzer and Miller trace, per process, only the racing deliveries: the sender,
the sender's event number and the receiver's event number (section 4.1, last
paragraph); the receiver is implicit in the per-process file.  A record
directory holds ``rank-<r>.jsonl`` for every rank ``r``, each line one JSON
object:

* first line ``{"kind": "record-header", "format": "mpvis-record", "version": 1,
  "rank": r, "nprocs": n, "mode": "races" | "all", "check_every": K}``;
* ``{"kind": "race", "comm": c, "recv": Y, "consume": C, "src": s, "tag": t,
  "send": X, "prev": [Y', s', X']}``: receive ``Y`` (its ``consume`` event is
  ``C``) took the message sent as event ``X`` of rank ``s``; it raced with the
  message ``[s', X']`` taken by the earlier receive ``Y'`` (Figure 3a's
  ``PrevRecv``).  ``prev`` is ``null`` in ``all`` mode for non-racing
  deliveries;
* ``{"kind": "any", "at": A, "index": I}``: the ``Waitany`` call that started at
  event ``A`` returned request ``I`` (:mod:`mpvis.instrument.any_completion`);
* ``{"kind": "check", "n": N, "recv": Y, "digest": D}``: after its ``N``-th
  consume (of receive ``Y``), the CRC-32 chain of this rank's consumed messages
  was ``D`` (see :func:`chain`); replay compares it to find where a run diverged;
* last line ``{"kind": "end", "sends": S, "consumes": N, "digest": D}``.

All event numbers are the trace's ``seq`` numbers, so a race can be shown in
the window and named on the command line as ``RANK:SEQ``.  Values are plain
JSON: the reader never evaluates or unpickles anything.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mpvis.errors import MpvisError

__all__ = [
    "FORMAT",
    "VERSION",
    "RaceEntry",
    "RankRecord",
    "RecordWriter",
    "ReplayRecordError",
    "chain",
    "read_record",
]

FORMAT = "mpvis-record"
VERSION = 1


class ReplayRecordError(MpvisError, ValueError):
    """A replay record directory is missing, incomplete or malformed; ``str()`` says where.

    (Named apart from :class:`mpvis.protocol.records.RecordError`, a trace
    record breaking a rule of the spec.)"""


def chain(digest: int, src: int, send: int) -> int:
    """The consume chain after one more consumed message ``[src, send]``."""
    return zlib.crc32(b"%d,%d;" % (src, send), digest)


@dataclass(frozen=True, slots=True)
class RaceEntry:
    """One traced delivery: receive ``recv`` of this rank took ``[src, send]``."""

    comm: int
    recv: int
    consume: int
    src: int
    tag: int
    send: int
    prev: tuple[int, int, int] | None  # (PrevRecv seq, its sender, its send seq)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "race",
            "comm": self.comm,
            "recv": self.recv,
            "consume": self.consume,
            "src": self.src,
            "tag": self.tag,
            "send": self.send,
            "prev": None if self.prev is None else list(self.prev),
        }


@dataclass(slots=True)
class RankRecord:
    """Everything one rank wrote; ``complete`` is false when the ``end`` line is missing."""

    rank: int
    nprocs: int
    mode: str
    check_every: int
    races: list[RaceEntry] = field(default_factory=list)
    checks: list[tuple[int, int, int]] = field(default_factory=list)  # (n, recv, digest)
    anys: dict[int, int] = field(default_factory=dict)  # Waitany start seq -> index
    sends: int = 0
    consumes: int = 0
    digest: int = 0
    complete: bool = False


class RecordWriter:
    """Appends one rank's lines to ``DIR/rank-<r>.jsonl`` (buffered; :meth:`close` ends it)."""

    def __init__(
        self, directory: Path, rank: int, nprocs: int, mode: str, check_every: int
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = open(  # noqa: SIM115 (closed by close())
            directory / f"rank-{rank}.jsonl", "w", encoding="utf-8"
        )
        self._line(
            {
                "kind": "record-header",
                "format": FORMAT,
                "version": VERSION,
                "rank": rank,
                "nprocs": nprocs,
                "mode": mode,
                "check_every": check_every,
            }
        )

    def _line(self, obj: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def race(self, entry: RaceEntry) -> None:
        self._line(entry.to_json())

    def any(self, at: int, index: int) -> None:
        self._line({"kind": "any", "at": at, "index": index})

    def check(self, n: int, recv: int, digest: int) -> None:
        self._line({"kind": "check", "n": n, "recv": recv, "digest": digest})

    def close(self, sends: int, consumes: int, digest: int) -> None:
        """Write the ``end`` line and close the file (idempotent)."""
        if self._file is None:
            return
        self._line({"kind": "end", "sends": sends, "consumes": consumes, "digest": digest})
        self._file.close()
        self._file = None


def _int(obj: dict[str, Any], key: str, where: str) -> int:
    v = obj.get(key)
    if type(v) is not int:
        raise ReplayRecordError(f"{where}: field '{key}' must be an integer, got {v!r}")
    return v


def _read_rank(path: Path) -> RankRecord:
    rec: RankRecord | None = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReplayRecordError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ReplayRecordError(f"{where}: a line must be a JSON object")
            kind = obj.get("kind")
            if rec is None:
                if kind != "record-header" or obj.get("format") != FORMAT:
                    raise ReplayRecordError(
                        f"{where}: the first line must be an mpvis-record header")
                if obj.get("version") != VERSION:
                    raise ReplayRecordError(f"{where}: unsupported version {obj.get('version')!r}")
                rec = RankRecord(
                    _int(obj, "rank", where),
                    _int(obj, "nprocs", where),
                    str(obj.get("mode", "races")),
                    _int(obj, "check_every", where),
                )
            elif kind == "race":
                prev = obj.get("prev")
                if prev is not None and (
                    not isinstance(prev, list)
                    or len(prev) != 3
                    or any(type(v) is not int for v in prev)
                ):
                    raise ReplayRecordError(f"{where}: 'prev' must be null or [recv, src, send]")
                rec.races.append(
                    RaceEntry(
                        _int(obj, "comm", where),
                        _int(obj, "recv", where),
                        _int(obj, "consume", where),
                        _int(obj, "src", where),
                        _int(obj, "tag", where),
                        _int(obj, "send", where),
                        None if prev is None else (prev[0], prev[1], prev[2]),
                    )
                )
            elif kind == "any":
                rec.anys[_int(obj, "at", where)] = _int(obj, "index", where)
            elif kind == "check":
                rec.checks.append(
                    (_int(obj, "n", where), _int(obj, "recv", where), _int(obj, "digest", where))
                )
            elif kind == "end":
                rec.sends = _int(obj, "sends", where)
                rec.consumes = _int(obj, "consumes", where)
                rec.digest = _int(obj, "digest", where)
                rec.complete = True
            else:
                raise ReplayRecordError(f"{where}: unknown kind {kind!r}")
    if rec is None:
        raise ReplayRecordError(f"{path}: empty file")
    return rec


def read_record(directory: Path) -> list[RankRecord]:
    """Every rank's record, indexed by rank; raises :class:`ReplayRecordError` if one is missing."""
    if not directory.is_dir():
        raise ReplayRecordError(f"{directory}: not a record directory")
    first = directory / "rank-0.jsonl"
    if not first.is_file():
        raise ReplayRecordError(f"{first}: missing")
    ranks = [_read_rank(first)]
    for r in range(1, ranks[0].nprocs):
        path = directory / f"rank-{r}.jsonl"
        if not path.is_file():
            raise ReplayRecordError(f"{path}: missing (the record has {ranks[0].nprocs} ranks)")
        ranks.append(_read_rank(path))
    for r, rec in enumerate(ranks):
        if rec.rank != r or rec.nprocs != ranks[0].nprocs:
            raise ReplayRecordError(
                f"{directory}/rank-{r}.jsonl: header says rank {rec.rank} of {rec.nprocs}"
            )
    return ranks
