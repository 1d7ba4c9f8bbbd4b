"""``mpvis run --record DIR [--record-all] [--no-stream]``: the options, their environment.

The trace phase of MPVisualizer's re-execution mode (section 2) with Netzer
and Miller's optimal tracing: every rank runs under
:mod:`mpvis.instrument.replay_launch` (the trace library plus the record
layer) and writes ``DIR/rank-<r>.jsonl`` (format in ``docs/replay.md``).

``mpvis run`` owns the command; it wires these pieces in:

* :func:`add_record_options` on its parser (``--record`` takes a value,
  ``--record-all`` and ``--no-stream`` are flags: :data:`VALUED`, :data:`FLAGS`);
* when ``args.record`` is set, :func:`record_env` into the ranks' environment
  and :data:`LAUNCH_MODULE` in place of ``mpvis.instrument.launch``
  (:func:`mpvis.cli.run.run_program`);
* with ``--no-stream`` no collector is needed: :func:`run_unstreamed`;
* after the run, :func:`record_summary` prints the record's figures.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mpvis.cli.errors import UserError
from mpvis.collector.mpiexec import find_mpiexec, launch, rank_command, stop_group
from mpvis.instrument.record_file import RankRecord, ReplayRecordError, read_record

if TYPE_CHECKING:
    from mpvis.analysis.replay_optimality import Optimality

__all__ = [
    "FLAGS",
    "LAUNCH_MODULE",
    "VALUED",
    "add_record_options",
    "record_env",
    "record_optimality",
    "record_summary",
    "run_unstreamed",
]

#: The in-rank entry point for recording and replaying.
LAUNCH_MODULE = "mpvis.instrument.replay_launch"
#: Options added here that take a value / that are flags (for ``split_run_args``).
VALUED = ("--record",)
FLAGS = ("--record-all", "--no-stream")


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--record DIR``, ``--record-all`` and ``--no-stream`` to ``parser``."""
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="record the racing message deliveries to DIR, for 'mpvis replay'",
    )
    parser.add_argument(
        "--record-all",
        action="store_true",
        help="with --record: record every delivery, not only the racing ones (baseline)",
    )
    parser.add_argument(
        "--no-stream",
        action="store_true",
        help="with --record: do not stream the run's events (the recording alone is cheap)",
    )


def record_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment variables that put every rank in record mode ({} without --record)."""
    if getattr(args, "record", None) is None:
        return {}
    env = {"MPVIS_RECORD": str(Path(args.record).resolve())}
    if getattr(args, "record_all", False):
        env["MPVIS_RECORD_ALL"] = "1"
    return env


def run_unstreamed(
    nprocs: int | None,
    program: Sequence[str],
    env: Mapping[str, str],
    *,
    mpiexec: str | None = None,
    options: Sequence[str] = (),
) -> int:
    """Run ``program`` under the record/replay launcher without a collector; its status."""
    exe = find_mpiexec(mpiexec)
    if exe is None:
        raise UserError("mpiexec not found: install the 'mpich' package or give --mpiexec")
    full = {k: v for k, v in os.environ.items() if k not in ("MPVIS_COLLECTOR", "MPVIS_TOKEN")}
    full.update(env)
    proc = launch(rank_command(exe, nprocs, options, program, LAUNCH_MODULE), full)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        stop_group(proc, grace=0.5)
        return 130
    finally:
        if proc.poll() is None:
            stop_group(proc, grace=0.5)


def record_optimality(records: Sequence[RankRecord]) -> Optimality:
    """Messages, recorded deliveries and the lower bound of a whole record.
    (networkx, which the bound needs, is imported only here: not by every
    ``mpvis run``, issue 16.)"""
    from mpvis.analysis.replay_optimality import optimality

    edges = [((e.prev[1], e.prev[2]), (e.src, e.send)) for r in records for e in r.races if e.prev]
    return optimality(
        edges,
        messages=sum(r.sends for r in records),
        recorded=sum(len(r.races) for r in records),
    )


def record_summary(directory: Path) -> str:
    """A short report on the record in ``directory`` (for ``mpvis run`` to print)."""
    try:
        records = read_record(directory)
    except ReplayRecordError as exc:
        raise UserError(f"record: {exc}") from None
    missing = [r.rank for r in records if not r.complete]
    text = f"record {directory}: {record_optimality(records).text()}"
    anys = sum(len(r.anys) for r in records)
    if anys:
        text += f"; {anys} Waitany choices"
    if missing:
        text += f"; ranks {missing} did not finish (the record ends where they stopped)"
    return text
