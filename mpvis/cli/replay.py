"""``mpvis replay RECORD [--flip RANK:SEQ] [-n N] [--no-stream] -- prog.py [args]``.

The replay phase of MPVisualizer's re-execution mode (section 2): every rank
runs under :mod:`mpvis.instrument.replay_launch` with the record made by
``mpvis run --record RECORD``, which forces the recorded racing deliveries
(Netzer and Miller, section 4.2).  The run streams to the window like
``mpvis run`` (or is written headless to ``--out``); ``--no-stream`` runs it
without a collector.  At the end every rank's check is printed: the replay
consumed the same messages in the same order as the recording, or where it
first did not.

``--flip RANK:SEQ`` re-executes with that race resolved the other way
(:func:`mpvis.instrument.replay.find_flip`) and prints, rank by rank, the new
run beside the recorded one.  ``--order RANK:SEQ=SRC:SEND,...`` forces
several racing receives of one rank to take the messages named (a delivery
order ``mpvis explore`` found; :func:`mpvis.instrument.replay.find_order`);
``--anys RANK:AT=INDEX,...`` makes recorded ``Waitany`` calls of one rank
return other requests (a completion order).
``--rank-output DIR`` writes each rank's standard output to
``DIR/rank-<r>.out`` (MPICH's ``-outfile-pattern``).  ``--stats`` prints the record's figures only
(messages, recorded deliveries, lower bound on the minimum).

Exit status: the program's when it failed; else 0 when the replay matched
the recording (or a flip ran), 1 when it diverged; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.cli.native import is_native_program
from mpvis.cli.program_args import after_dashdash, take_program
from mpvis.cli.record_options import LAUNCH_MODULE, record_summary, run_unstreamed
from mpvis.instrument.record_file import RankRecord, ReplayRecordError, read_record
from mpvis.instrument.replay import Flip, find_flip, find_order, parse_anys, parse_order, plan_for
from mpvis.instrument.replay_launch import parse_flip

__all__ = ["rank_output_options", "register", "replay", "summarize"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help=COMMANDS["replay"],
        description="Replay a run recorded with 'mpvis run --record DIR': the racing "
        "deliveries are forced, so the run consumes the same messages in the same order.",
        usage="mpvis replay RECORD [--flip RANK:SEQ | --order ORDER] [-n N] [--no-stream] "
        "-- prog.py [args]",
    )
    p.add_argument("record", type=Path, metavar="RECORD", help="the record directory")
    p.add_argument(
        "--flip",
        metavar="RANK:SEQ",
        help="resolve the race of receive RANK:SEQ the other way and show both runs",
    )
    p.add_argument(
        "--order",
        metavar="RANK:SEQ=SRC:SEND,...",
        help="force these racing receives of one rank to take these messages, e.g. 0:3=2:0,5=1:0",
    )
    p.add_argument(
        "--anys",
        metavar="RANK:AT=INDEX,...",
        help="make these recorded Waitany calls of one rank return other requests, e.g. 0:3=1,5=0",
    )
    p.add_argument("--rank-output", type=Path, metavar="DIR",
                   help="write each rank's stdout to DIR/rank-<r>.out (MPICH mpiexec)")
    p.add_argument("-n", "-np", type=int, dest="nprocs", metavar="N", help="number of ranks")
    p.add_argument("--no-stream", action="store_true", help="do not stream the replay")
    p.add_argument("--out", type=Path, help="trace file when no window is running")
    p.add_argument("--headless", action="store_true", help="write to --out even with a window")
    p.add_argument("--mpiexec", help="mpiexec to use")
    p.add_argument("--stats", action="store_true", help="print the record's figures and stop")
    p.set_defaults(func=replay, program=[])
    take_program(p, after_dashdash)  # argparse alone would read the program's own options


def replay(args: argparse.Namespace) -> int:
    try:
        records = read_record(args.record)
    except ReplayRecordError as exc:
        raise UserError(f"record: {exc}") from None
    print(record_summary(args.record), flush=True)
    if args.stats:
        return 0
    if not args.program:
        raise UserError("no program given: mpvis replay RECORD -- prog.py [args]")
    nprocs = args.nprocs if args.nprocs is not None else len(records)
    if nprocs != len(records):
        raise UserError(f"the record has {len(records)} ranks, not {nprocs}")
    flip = None
    if sum(bool(x) for x in (args.flip, args.order, args.anys)) > 1:
        raise UserError("--flip, --order and --anys cannot be combined")
    if args.anys:
        try:
            anys = parse_anys(args.anys)
            plan_for(records, anys[0], None, anys)  # check the calls named were recorded
        except (ReplayRecordError, ValueError) as exc:
            raise UserError(f"--anys: {exc}") from None
        print("completion order: " + ", ".join(
            f"Waitany {anys[0]}:{at} returns request {i}" for at, i in anys[1].items()),
            flush=True)
    if args.order:
        try:
            flip = find_order(records, *parse_order(args.order))
        except (ReplayRecordError, ValueError) as exc:
            raise UserError(f"--order: {exc}") from None
        moves = [(flip.recv, flip.src, flip.send), *((m[0], m[1], m[3]) for m in flip.more)]
        print("order: " + ", ".join(f"receive {flip.rank}:{y} takes [{s}, {x}]"
                                     for y, s, x in moves), flush=True)
    if args.flip:
        try:
            flip = find_flip(records, *parse_flip(args.flip))
        except (ReplayRecordError, ValueError) as exc:
            raise UserError(f"--flip: {exc}") from None
        print(
            f"flip: receive {flip.rank}:{flip.recv} takes the message sent at "
            f"{flip.src}:{flip.send} (recorded: the one sent at {flip.was[0]}:{flip.was[1]})",
            flush=True,
        )
    if args.anys and is_native_program(args.program):
        raise UserError("--anys works with mpi4py programs (the PMPI replay forces the "
                        "recorded Waitany choices only)")
    if is_native_program(args.program):  # a compiled program: the PMPI library forces
        from mpvis.cli import run as run_cmd
        from mpvis.cli.native_replay import replay_run

        verdicts, code = replay_run(_run_args(args, nprocs), records, flip, run_cmd.run_program)
        text, diverged = summarize(records, verdicts, flip)
        print(text, flush=True)
        if code and any(v is None for v in verdicts):
            return code
        return 1 if diverged else 0
    with tempfile.TemporaryDirectory(prefix="mpvis-replay-") as out:
        env = {"MPVIS_REPLAY": str(args.record.resolve()), "MPVIS_REPLAY_OUT": out}
        if args.flip:
            env["MPVIS_REPLAY_FLIP"] = args.flip
        if args.order:
            env["MPVIS_REPLAY_ORDER"] = args.order
        if args.anys:
            env["MPVIS_REPLAY_ANYS"] = args.anys
        if args.no_stream:
            code = run_unstreamed(nprocs, args.program, env, mpiexec=args.mpiexec,
                                  options=rank_output_options(args.rank_output))
        else:
            code = _run_streamed(args, nprocs, env)
        verdicts = _read_verdicts(Path(out), nprocs)
    text, diverged = summarize(records, verdicts, flip)
    if args.anys:  # another completion order on purpose: only a forcing failure diverges
        diverged = any(v is None or v["divergence"] for v in verdicts)
        text = "\n".join(["run with the Waitany completions reordered, beside the recording",
                          *text.splitlines()[1:]])
    print(text, flush=True)
    if code and any(v is None for v in verdicts):
        return code  # the program failed (a streamed run's own report is not ours)
    return 1 if diverged else 0


def _run_streamed(args: argparse.Namespace, nprocs: int, env: dict[str, str]) -> int:
    """Run through ``mpvis run``'s live path, with the replay launcher in every rank."""
    from mpvis.cli import run as run_cmd

    return run_cmd.run_program(_run_args(args, nprocs), extra_env=env, launch_module=LAUNCH_MODULE)


def _run_args(args: argparse.Namespace, nprocs: int) -> argparse.Namespace:
    """``mpvis run``'s arguments for the replay of ``args``."""
    from mpvis.cli import run as run_cmd

    return argparse.Namespace(
        nprocs=nprocs,
        out=args.out,
        headless=args.headless,
        listen=None,
        token=None,
        run_id=None,
        collector_port=None,
        mpiexec=args.mpiexec,
        mpiexec_options=rank_output_options(args.rank_output),
        program=args.program,
        stuck_after=run_cmd.STUCK_AFTER,
        stop_on_deadlock=False,
        record=args.record,
    )


def rank_output_options(directory: Path | None) -> list[str]:
    """mpiexec options that write each rank's stdout to ``directory/rank-<r>.out`` (MPICH)."""
    if directory is None:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    return ["-outfile-pattern", str(directory.resolve() / "rank-%r.out")]


def _read_verdicts(directory: Path, nprocs: int) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for r in range(nprocs):
        path = directory / f"rank-{r}.json"
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            out.append(None)
    return out


def summarize(
    records: list[RankRecord], verdicts: list[dict[str, Any] | None], flip: Flip | None
) -> tuple[str, bool]:
    """The report printed after a replay, and whether it diverged from the recording."""
    lines: list[str] = []
    diverged = False
    for r, (rec, v) in enumerate(zip(records, verdicts, strict=True)):
        if v is None:
            lines.append(f"  rank {r}: no result (the rank did not finish)")
            diverged = True
            continue
        same = (v["consumes"], v["digest"]) == (rec.consumes, rec.digest)
        state = "same messages, same order" if same else "different messages or order"
        forced = f"forced {v['forced_ok']}/{v['forced']}"
        if flip is not None and v["free"]:
            forced = f"{v['forced_ok']} forced before the flip reached it"
        line = f"  rank {r}: consumed {v['consumes']} (recorded {rec.consumes}), {state}; {forced}"
        if v["unforceable"]:
            line += f"; {v['unforceable']} races on other communicators not forced"
        if flip is not None and v["free"]:
            line += "; after the flip"
        lines.append(line)
        if v["divergence"]:
            lines.append(f"    diverged: {v['divergence']}")
            diverged = True
        elif flip is None and not same:
            diverged = True
    if flip is not None:
        changed = sum(
            1
            for rec, v in zip(records, verdicts, strict=True)
            if v is not None and (v["consumes"], v["digest"]) != (rec.consumes, rec.digest)
        )
        head = f"flipped run beside the recording: {changed} of {len(records)} ranks differ"
    elif diverged:
        head = "replay DIVERGED from the recording"
    else:
        head = "replay identical to the recording on every rank"
    return "\n".join([head, *lines]), diverged and flip is None
