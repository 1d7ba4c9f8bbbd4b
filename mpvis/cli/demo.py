"""``mpvis demo [SCENARIO]``: a built-in simulated program, streamed like a real run.

The simulated ranks of :mod:`mpvis.sim` go through the live path of a real
run (a collector, then a central process; MPVisualizer section 2), so the demo
shows exactly what ``mpvis run`` would:

* ``--gui`` opens the window and streams into it (what ``mpvis`` with no
  arguments does, on the ``showcase`` scenario);
* else, if an mpvis window is running, the demo streams into it;
* else a headless central process records the trace (``--out FILE``) and the
  report of ``mpvis check`` is printed.

``--speed`` scales simulated time: ``1`` is real time (the default when
streaming to a window), ``0`` as fast as possible (the default headless).
Exit status: headless, the report's (0 nothing found, 1 races or deadlocks);
else 0; 130 after Ctrl-C; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.display import require_display
from mpvis.cli.errors import UserError
from mpvis.collector.auth import format_address
from mpvis.collector.headless import HeadlessSession
from mpvis.collector.rendezvous import discover
from mpvis.sim import api
from mpvis.sim.live import DemoStreamError, StreamOutcome, stream_scenario

#: Seconds to wait for the last records to be journaled after the stream.
DRAIN_WAIT = 30.0


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help=COMMANDS["demo"],
        description="Simulate a message-passing program and stream it like a real run: "
        "into the window (--gui, or one already running), else record it and print the "
        "report. 'mpvis demo --list' lists the scenarios.",
    )
    p.add_argument(
        "scenario",
        nargs="?",
        help=f"scenario to run (default: {api.DEFAULT_SCENARIO}; "
        f"{api.DEFAULT_GUI_SCENARIO} with --gui)",
    )
    p.add_argument("--list", action="store_true", help="describe the scenarios and exit")
    p.add_argument("--seed", type=int, default=0, help="random seed (another seed, other races)")
    p.add_argument(
        "--speed",
        type=float,
        default=None,
        help="simulated seconds per second (default 1 to a window, 0 = at once headless)",
    )
    p.add_argument("--out", type=Path, help="keep the trace in FILE (headless)")
    p.add_argument("--gui", action="store_true", help="open the window and stream into it")
    p.add_argument(
        "--headless", action="store_true", help="record and report even if a window is running"
    )
    p.set_defaults(func=demo)


def demo(args: argparse.Namespace) -> int:
    """Run ``mpvis demo`` with parsed ``args``; return the exit status."""
    if args.list:
        print(_listing(args.scenario))
        return 0
    default = api.DEFAULT_GUI_SCENARIO if args.gui else api.DEFAULT_SCENARIO
    name = args.scenario or default
    try:
        api.get_scenario(name)
    except api.UnknownScenarioError as exc:
        raise UserError(str(exc)) from None
    if args.speed is not None and args.speed < 0:
        raise UserError("--speed must be 0 (as fast as possible) or more")
    if args.gui:
        return _gui(name, args.seed, 1.0 if args.speed is None else args.speed)
    if not args.headless:
        window = discover()
        if window is not None:
            speed = 1.0 if args.speed is None else args.speed
            try:
                return _to_window(name, args.seed, speed, window.address, window.token)
            except DemoStreamError as exc:
                _say(f"the window did not take the demo ({exc}); recording headless")
    return _headless(name, args.seed, args.speed or 0.0, args.out)


def _listing(name: str | None) -> str:
    if name is not None:
        try:
            return f"{name}: {api.describe(name)}"
        except api.UnknownScenarioError as exc:
            raise UserError(str(exc)) from None
    width = max(len(n) for n in api.scenario_names())
    lines = ["Scenarios of 'mpvis demo SCENARIO' ('mpvis demo --list SCENARIO' for more):"]
    for n in api.scenario_names():
        summary = api.get_scenario(n).summary
        lines.append(f"  {n:<{width}}  {summary}")
    return "\n".join(lines)


def _say(text: str) -> None:
    print(f"mpvis: {text}", file=sys.stderr, flush=True)


def _gui(name: str, seed: int, speed: float) -> int:
    require_display()
    try:
        from mpvis.gui.app import run_demo_window
    except ImportError as exc:
        raise UserError(
            f"the window is not available ({exc}); try 'mpvis demo {name}' to run it headless"
        ) from None
    return int(run_demo_window(name, seed, speed))


class _Streamer(threading.Thread):
    """Runs :func:`stream_scenario` off the main thread, so Ctrl-C can stop it."""

    def __init__(
        self,
        name: str,
        seed: int,
        speed: float,
        address: Any,
        token: str | None,
        *,
        hold_stuck: bool,
    ) -> None:
        super().__init__(name="mpvis-demo-stream", daemon=True)
        self.stop = threading.Event()
        self.args = (name, address, token, seed, speed)
        self.hold_stuck = hold_stuck
        self.outcome: StreamOutcome | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.outcome = stream_scenario(*self.args, self.stop, hold_stuck=self.hold_stuck)
        except BaseException as exc:  # reported on the main thread
            self.error = exc


def _to_window(name: str, seed: int, speed: float, address: Any, token: str) -> int:
    streamer = _Streamer(name, seed, speed, address, token, hold_stuck=True)
    _say(f"streaming demo '{name}' (seed {seed}) to the mpvis window at {format_address(address)}")
    if api.get_scenario(name).ends_stuck:
        _say("this program ends blocked, like a hung run: Ctrl-C ends it")
    streamer.start()
    interrupted = _join(streamer, lambda: None)
    if streamer.error is not None:
        raise streamer.error
    return 130 if interrupted else 0


def _join(streamer: _Streamer, pump: Callable[[], object]) -> bool:
    """Wait for the streamer, calling ``pump`` meanwhile; Ctrl-C stops it. Interrupted?"""
    interrupted = False
    while streamer.is_alive():
        try:
            pump()
            streamer.join(0.05)
        except KeyboardInterrupt:
            interrupted = True
            streamer.stop.set()
    return interrupted


def _headless(name: str, seed: int, speed: float, out: Path | None) -> int:
    quiet = logging.getLogger("mpvis.collector")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the simulated ranks' warnings are not the user's
    tmp = None if out is not None else tempfile.TemporaryDirectory(prefix="mpvis-demo-")
    path = Path(tmp.name) / f"{name}.jsonl" if tmp is not None else out
    assert path is not None
    try:
        try:
            session = HeadlessSession(path).start()
        except OSError as exc:
            raise UserError(f"cannot start the central process: {exc}") from None
        try:
            return _record(session, name, seed, speed, out)
        finally:
            session.stop()
    finally:
        quiet.setLevel(level)  # as it was (main() may run again in this process)
        if tmp is not None:
            tmp.cleanup()


def _record(session: HeadlessSession, name: str, seed: int, speed: float, out: Path | None) -> int:
    central = session.central
    streamer = _Streamer(name, seed, speed, central.address, central.token, hold_stuck=False)
    streamer.start()
    interrupted = _join(streamer, lambda: session.pump(timeout=0.05))
    if isinstance(streamer.error, DemoStreamError):
        raise UserError(str(streamer.error)) from None
    if streamer.error is not None:
        raise streamer.error
    if not session.wait_end(DRAIN_WAIT):
        _say("warning: the run's end was not recorded in time")
    text, code = session.report()
    print(text, flush=True)
    if out is not None:
        _say(f"trace written to {out}")
    return 130 if interrupted else code
