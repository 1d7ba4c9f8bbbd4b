"""``python -m mpvis.instrument.replay_launch prog.py [args]``: one rank, recorded or replayed.

A drop-in for :mod:`mpvis.instrument.launch`: it installs the trace library
the same way (:func:`mpvis.instrument.runtime.start`), then the record or
replay layer chosen by the environment, runs the program with the trace
library's :func:`~mpvis.instrument.launch.run_program`, and ends the layer.

Environment (set by ``mpvis run --record`` and ``mpvis replay``, see
:mod:`mpvis.cli.record_options`):

* ``MPVIS_RECORD=DIR``: record mode, writes ``DIR/rank-<r>.jsonl``
  (:mod:`mpvis.instrument.record`); ``MPVIS_RECORD_ALL=1`` records every
  delivery (the baseline of tracing every message);
* ``MPVIS_REPLAY=DIR``: replay the record in ``DIR``
  (:mod:`mpvis.instrument.replay`); ``MPVIS_REPLAY_FLIP=RANK:SEQ`` flips that
  race; ``MPVIS_REPLAY_ORDER=RANK:SEQ=SRC:SEND,...`` forces those receives of
  one rank to take those messages (:func:`~mpvis.instrument.replay.find_order`);
  ``MPVIS_REPLAY_ANYS=RANK:AT=INDEX,...`` makes recorded ``Waitany`` calls of
  one rank return other requests;
  ``MPVIS_REPLAY_OUT=DIR`` receives each rank's verdict ``DIR/rank-<r>.json``.

With neither variable it behaves exactly as ``launch``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mpvis.instrument.hooks import install_hooks
from mpvis.instrument.launch import run_program
from mpvis.instrument.runtime import Runtime, start

__all__ = ["install_layer", "main", "parse_flip"]


def parse_flip(text: str) -> tuple[int, int]:
    """``"RANK:SEQ"`` as two integers (``ValueError`` otherwise)."""
    rank, sep, seq = text.partition(":")
    if not sep or not rank.strip().isdigit() or not seq.strip().isdigit():
        raise ValueError(f"a flip is RANK:SEQ (two numbers), not {text!r}")
    return int(rank), int(seq)


def install_layer(runtime: Runtime, env: Mapping[str, str]) -> Callable[[], None] | None:
    """Install record or replay in this rank as ``env`` says; return its closing function."""
    record_dir = env.get("MPVIS_RECORD", "")
    replay_dir = env.get("MPVIS_REPLAY", "")
    if not record_dir and not replay_dir:
        return None
    world = runtime.world
    rank, nprocs = world.Get_rank(), world.Get_size()
    recorder = runtime.recorder

    def next_seq() -> int:
        return recorder.seq

    from mpi4py import MPI

    from mpvis.instrument.any_completion import force_waitany, log_waitany

    if record_dir:
        from mpvis.instrument.record import RecordHooks

        rec_hooks = RecordHooks(
            Path(record_dir),
            rank,
            nprocs,
            next_seq,
            record_all=env.get("MPVIS_RECORD_ALL", "") == "1",
        )
        install_hooks(rec_hooks)
        log_waitany(MPI.Request, next_seq, rec_hooks.log_any)
        return rec_hooks.close

    from mpvis.instrument.record_file import read_record
    from mpvis.instrument.replay import (
        ReplayHooks,
        find_flip,
        find_order,
        parse_anys,
        parse_order,
        plan_for,
    )
    from mpvis.instrument.replay_route import install_routing, make_channel

    records = read_record(Path(replay_dir))
    if len(records) != nprocs:
        raise SystemExit(f"mpvis: the record has {len(records)} ranks, this run {nprocs}")
    flip_text = env.get("MPVIS_REPLAY_FLIP", "")
    flip = find_flip(records, *parse_flip(flip_text)) if flip_text else None
    order_text = env.get("MPVIS_REPLAY_ORDER", "")
    if order_text:
        flip = find_order(records, *parse_order(order_text))
    anys_text = env.get("MPVIS_REPLAY_ANYS", "")
    anys = parse_anys(anys_text) if anys_text else None
    hooks = ReplayHooks(plan_for(records, rank, flip, anys))
    channel = make_channel(world)
    install_routing(world, channel, hooks, next_seq)
    force_waitany(MPI.Request, next_seq, hooks.recorded_any)
    install_hooks(hooks)
    out = env.get("MPVIS_REPLAY_OUT", "")

    def close() -> None:
        if out:
            hooks.write_verdict(Path(out))

    return close


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``argv`` is ``[prog.py, args...]`` (default ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(
            "usage: python -m mpvis.instrument.replay_launch PROGRAM.py [ARGS...]", file=sys.stderr
        )
        return 2
    runtime = start(program=" ".join(["python", *args]))
    try:
        close = install_layer(runtime, dict(os.environ))
    except (OSError, ValueError) as exc:  # ReplayRecordError is a ValueError
        # Other ranks may be waiting in the channel's creation: end the whole job.
        print(f"mpvis: rank {runtime.world.Get_rank()}: {exc}", file=sys.stderr, flush=True)
        runtime.crash(str(exc))
        runtime.world.Abort(2)
        return 2
    code = run_program(runtime, args)
    if close is not None:
        close()
    return code


if __name__ == "__main__":
    sys.exit(main())
