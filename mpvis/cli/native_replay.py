"""Record and replay of compiled programs (``mpvis run --record DIR -- ./a.out``, ``mpvis replay``).

Netzer and Miller trace only the racing deliveries (section 4.1) and replay
by forcing them (section 4.2).  For mpi4py programs the ranks detect the
races on the fly from vector timestamps piggybacked on every message
(:mod:`mpvis.instrument.record`).  A compiled program's messages are the
user's buffers, which the PMPI library does not touch, so the detection runs
after the run instead, on its trace, which holds every delivery: the same
detector (:class:`~mpvis.instrument.record.RaceDetector`, Figure 3a's check)
is fed the trace's events in an order that respects happened-before, with the
timestamp each send would have carried.  The record directory is the same
format (``docs/replay.md``: ``rank-<r>.jsonl``, only the racing deliveries,
``any`` lines for Waitany/Testany choices, consume-chain checks) plus the
run's trace (:data:`RECORD_TRACE`), which replay compares against.

Replay hands the PMPI library one plan per rank (``plan-<r>.txt``,
``mpvis/instrument/pmpi/replay.c``): both wildcard receives of each recorded
race (or the wildcard probes that decide them) take their messages from the
recorded sources, each recorded Waitany/Testany completes the recorded
request.  Pinning the earlier receive too stands in for the paper's tagging
of racing messages by their sender, which a compiled program's untouched
buffers do not allow.  With
``--flip`` (or ``--order``) the named receive takes the other message, and
every forced delivery in the recorded future of that receive is released (the
flip may change what happens there).  The replay is traced too; its trace is
compared with the recording's, rank by rank, consume by consume, and the
first difference is reported where a replay diverged.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpvis.cli.errors import UserError
from mpvis.instrument.record import DEFAULT_CHECK_EVERY, RaceDetector
from mpvis.instrument.record_file import RaceEntry, RankRecord, RecordWriter, chain
from mpvis.instrument.replay import Flip
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R
from mpvis.protocol.record_types import ConsumeRecord
from mpvis.tracefile.reader import TraceFileError, load_trace

__all__ = ["RECORD_TRACE", "Delivery", "deliveries", "plans", "verdicts", "write_record"]

#: The recorded run's trace, inside the record directory.
RECORD_TRACE = "trace.jsonl"

Key = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Delivery:
    """Receive ``recv`` of a rank took the message sent as event ``send`` of ``src``."""

    recv: int
    consume: int
    src: int
    send: int


def _load(path: Path) -> ModelManager:
    try:
        return load_trace(path)
    except TraceFileError as exc:
        if exc.model is None:
            raise UserError(f"{path}: {exc}") from None
        return exc.model  # the good records before the damage


def deliveries(m: ModelManager, rank: int) -> list[Delivery]:
    """The rank's consumed messages in consume order (``send`` -1: its send is not in the trace)."""
    out = []
    for seq in range(m.count(rank)):
        rec = m.record(rank, seq)
        if rec["kind"] == "consume":
            key = m.partner(rank, seq)
            out.append(Delivery(rec["recv"], seq, rec["src"], -1 if key is None else key[1]))
    return out


def write_record(trace: Path, directory: Path, *, every: bool = False) -> None:
    """Write the record of the run whose trace is ``trace`` into ``directory``.

    Ranks are walked in an order that respects happened-before: a rank stops at
    a consume whose send has not been walked yet and goes on once it has.
    Collectives add no order (as in the mpi4py recorder: a superset of the
    racing deliveries, still enough for replay by Netzer and Miller's Theorem 2).
    """
    m = _load(trace)
    n = m.nprocs
    directory.mkdir(parents=True, exist_ok=True)
    if trace.resolve() != (directory / RECORD_TRACE).resolve():
        shutil.copyfile(trace, directory / RECORD_TRACE)
    mode = "all" if every else "races"
    writers = [RecordWriter(directory, r, n, mode, DEFAULT_CHECK_EVERY) for r in range(n)]
    detectors = [RaceDetector(r, n) for r in range(n)]
    stamps: dict[Key, list[int]] = {}
    cursor, sends, consumes, digest = [0] * n, [0] * n, [0] * n, [0] * n
    first_of_call: list[dict[int, int]] = [{} for _ in range(n)]
    moved = True
    while moved:
        moved = False
        for r in range(n):
            while cursor[r] < m.count(r):
                seq = cursor[r]
                rec = m.record(r, seq)
                if isinstance(rec.get("call"), int):
                    first_of_call[r].setdefault(rec["call"], seq)
                if rec["kind"] == R.SEND:
                    stamps[(r, seq)] = detectors[r].stamp(seq)
                    sends[r] += 1
                elif rec["kind"] == R.CONSUME:
                    key = m.partner(r, seq)
                    if key is not None and key not in stamps:
                        break  # its send comes first
                    _deliver(m, r, rec, key, detectors[r], stamps, writers[r], every)
                    consumes[r] += 1
                    digest[r] = chain(digest[r], rec["src"], -1 if key is None else key[1])
                    if consumes[r] % DEFAULT_CHECK_EVERY == 0:
                        writers[r].check(consumes[r], rec["recv"], digest[r])
                elif rec["kind"] == R.WAIT and isinstance(rec.get("index"), int):
                    at = first_of_call[r].get(rec.get("call", -1), seq)
                    writers[r].any(at, rec["index"])
                cursor[r] += 1
                moved = True
    for r in range(n):
        if cursor[r] == m.count(r):
            writers[r].close(sends[r], consumes[r], digest[r])
        else:  # an incomplete trace: the record ends where the rank's trace does
            writers[r].close(sends[r], consumes[r], digest[r])


def _deliver(  # noqa: PLR0917 (one delivery's context)
    m: ModelManager,
    r: int,
    rec: ConsumeRecord,
    key: Key | None,
    detector: RaceDetector,
    stamps: dict[Key, list[int]],
    writer: RecordWriter,
    every: bool,
) -> None:
    recv = m.record(r, rec["recv"])
    assert recv["kind"] == R.RECV  # the model's rules: a consume names a receive
    comm = rec.get("comm", 0)
    if key is None:
        return  # a message from a lost send: nothing to force
    entry = detector.deliver(
        comm, (recv["src"], recv["tag"]), rec["recv"], rec["seq"],
        src=rec["src"], tag=rec["tag"], sender_vt=stamps[key],
    )
    if entry is None and every:
        entry = RaceEntry(comm, rec["recv"], rec["seq"], rec["src"], rec["tag"], key[1], None)
    if entry is not None:
        writer.race(entry)


def plans(
    m: ModelManager, records: list[RankRecord], flip: Flip | None
) -> tuple[list[list[str]], set[int]]:
    """Each rank's plan lines (``recv SEQ SRC``, ``any SEQ INDEX``) and the ranks the flip frees."""
    n = len(records)
    forced: list[dict[int, int]] = [{} for _ in range(n)]
    anys: list[dict[int, int]] = [{} for _ in range(n)]
    for rec in records:
        for e in rec.races:
            # Both receives of a race are pinned: without the sender tagging
            # racing messages (section 4.2), the earlier receive could otherwise
            # take the message the later one is forced to wait for.
            pins = [(e.recv, e.src)] + ([(e.prev[0], e.prev[1])] if e.prev else [])
            for y, src in pins:
                posted = m.record(rec.rank, y)
                if posted["kind"] == R.RECV and posted["src"] == -1:
                    forced[rec.rank][y] = src
        anys[rec.rank].update(rec.anys)
    freed: set[int] = set()
    if flip is not None:
        moves = [(flip.recv, flip.src), *((mv[0], mv[1]) for mv in flip.more)]
        origin = (flip.rank, flip.recv)
        for r in range(n):
            for table in (forced[r], anys[r]):
                for y in [y for y in table if m.happened_before(origin, (r, y))]:
                    del table[y]
                    freed.add(r)
        for y, src in moves:
            forced[flip.rank][y] = src
        freed.add(flip.rank)
    lines = [
        [f"recv {y} {s}" for y, s in sorted(forced[r].items())]
        + [f"any {a} {i}" for a, i in sorted(anys[r].items())]
        for r in range(n)
    ]
    return lines, freed


def verdicts(
    recorded: ModelManager,
    replayed: ModelManager,
    records: list[RankRecord],
    plan_lines: list[list[str]],
    freed: set[int],
) -> list[dict[str, Any] | None]:
    """Per rank, the replay's result in the shape :func:`mpvis.cli.replay.summarize` reads."""
    out: list[dict[str, Any] | None] = []
    for r, rec in enumerate(records):
        if r >= replayed.nprocs or not replayed.finished[r]:
            out.append(None)
            continue
        before, after = deliveries(recorded, r), deliveries(replayed, r)
        got = {d.recv: d.src for d in after}
        forced = [line.split() for line in plan_lines[r] if line.startswith("recv ")]
        ok = sum(1 for _, y, s in forced if got.get(int(y)) == int(s))
        digest = 0
        for d in after:
            digest = chain(digest, d.src, d.send)
        divergence = None
        for a, b in zip(before, after, strict=False):
            if (a.recv, a.src, a.send) != (b.recv, b.src, b.send):
                divergence = (
                    f"rank {r}: receive {r}:{b.recv} took [{b.src}, {b.send}] "
                    f"(recorded: receive {r}:{a.recv} took [{a.src}, {a.send}])"
                )
                break
        if divergence is None and len(before) != len(after) and r not in freed:
            divergence = f"rank {r}: {len(after)} messages consumed (recorded {len(before)})"
        out.append({
            "rank": r, "consumes": len(after), "digest": digest,
            "recorded_consumes": rec.consumes, "recorded_digest": rec.digest,
            "forced": len(forced), "forced_ok": ok, "unforceable": 0,
            "free": r in freed, "divergence": None if r in freed else divergence,
        })
    return out


def record_run(args: argparse.Namespace, run_program: Any) -> int:
    """``mpvis run --record DIR -- ./a.out``: run traced, then write the record from the trace."""
    directory = Path(args.record)
    directory.mkdir(parents=True, exist_ok=True)
    if args.out is None:
        args.out = directory / RECORD_TRACE
    args.headless = True  # the trace must be here to make the record
    code = int(run_program(args))
    if not Path(args.out).is_file():
        raise UserError(f"the run left no trace at {args.out}: nothing recorded")
    write_record(Path(args.out), directory, every=bool(getattr(args, "record_all", False)))
    return code


def replay_run(
    args: argparse.Namespace, records: list[RankRecord], flip: Flip | None, run_program: Any
) -> tuple[list[dict[str, Any] | None], int]:
    """Run the replay of a compiled program; its verdicts and exit status."""
    trace = Path(args.record) / RECORD_TRACE
    if not trace.is_file():
        raise UserError(
            f"{args.record} has no {RECORD_TRACE}: it was not recorded from a compiled program "
            "(record with mpvis run --record DIR -- ./a.out)"
        )
    recorded = _load(trace)
    lines, freed = plans(recorded, records, flip)
    with tempfile.TemporaryDirectory(prefix="mpvis-replay-") as tmp:
        for r, plan in enumerate(lines):
            (Path(tmp) / f"plan-{r}.txt").write_text("".join(f"{x}\n" for x in plan))
        out = Path(args.out) if args.out else Path(tmp) / "replay.jsonl"
        run_args = argparse.Namespace(**vars(args))
        run_args.out, run_args.headless = out, True
        run_args.stop_on_deadlock = True  # a forced delivery that can never happen hangs
        code = int(run_program(run_args, extra_env={"MPVIS_REPLAY_DIR": tmp}))
        if not out.is_file():
            return [None] * len(records), code
        replayed = _load(out)
    return verdicts(recorded, replayed, records, lines, freed), code
