"""``mpvis run [-n N] [--out FILE] [mpiexec options] -- PROGRAM [args]``: watch an MPI program.

Launches the unmodified mpi4py program with ``mpiexec``, every rank under the
in-rank library (``python -m mpvis.instrument.launch``), or a compiled program
with the PMPI trace library preloaded into every rank (:mod:`mpvis.cli.native`,
docs/c-programs.md), and the live path of
MPVisualizer (section 2): ranks → this machine's collector → a central process.
If an mpvis window is running (:mod:`mpvis.collector.rendezvous`) the run
streams there; otherwise a headless central process writes the trace to FILE
and prints the race report at the end, like ``mpvis check``.

Exit status: 3 when the program failed, else the report's (0 no race and no
deadlock, 1 some); 130 after Ctrl-C; 2 for a usage error, found before mpiexec
starts where it can be (:mod:`mpvis.cli.preflight`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import os
import secrets
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mpvis.analysis.coll_mismatch import MISMATCH_CHECKS
from mpvis.cli import native, record_options
from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.cli.preflight import (
    EXIT_PROGRAM_FAILED,
    NO_MPI_CALL,
    check_out,
    no_mpi_call,
    preflight,
)
from mpvis.cli.program_args import take_program
from mpvis.cli.token_args import add_token_options, token_from
from mpvis.collector.auth import format_address, is_loopback, new_token, parse_address
from mpvis.collector.collector import Collector
from mpvis.collector.feed import RecordsLost
from mpvis.collector.headless import HeadlessSession
from mpvis.collector.mpiexec import (
    LAUNCH_MODULE,
    find_mpiexec,
    launch,
    rank_command,
    stop_group,
)
from mpvis.collector.rendezvous import discover
from mpvis.collector.symbolize import SiteSymbolizer
from mpvis.collector.tls import TlsError, server_context
from mpvis.protocol.records import make_header
from mpvis.tracefile.reader import TraceFileError
from mpvis.tracefile.spill import merge_spills, spill_files

#: Options of ``mpvis run`` that take a value; any other option before ``--``
#: goes to mpiexec.
_VALUED = (
    "-n", "-np", "--out", "--listen", "--token", "--token-file", "--run-id", "--collector-port",
    "--mpiexec",
    "--stuck-after", "--mpicc", *record_options.VALUED,
)
_FLAGS = (
    "--headless", "-h", "--help", "--stop-on-deadlock", "--sync-sends", *record_options.FLAGS
)

#: A compiled program whose ranks recorded nothing.
NO_MPI_CALL_NATIVE = (
    "the program made no MPI call mpvis traces: nothing to show (does it call MPI_Init? "
    "Fortran 'use mpi_f08' calls bypass the C layer mpvis intercepts: see docs/c-programs.md)"
)

#: Exit status of a run whose trace lacks records (the message says how many and why).
EXIT_TRACE_INCOMPLETE = 4
#: Seconds to wait for a window to accept the run before recording headless.
WINDOW_WAIT = 3.0
#: Seconds to wait, after mpiexec ended, for the last records to be journaled.
DRAIN_WAIT = 30.0
#: Seconds a run still runs after its deadlock was reported before "press Ctrl-C".
HINT_AFTER = 2.0
#: Seconds with no record from any rank before the model is asked for a deadlock.
STUCK_AFTER = 5.0


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "run",
        help=COMMANDS["run"],
        description="Run an unmodified mpi4py program or compiled (C, C++) MPI program with "
        "mpiexec, every rank traced. "
        "Options that mpvis does not know are passed to mpiexec; put them before '--'.",
        usage="mpvis run [-n N] [--out FILE] [mpiexec options] -- prog.py|./a.out [args]",
    )
    p.add_argument("-n", "-np", type=int, dest="nprocs", metavar="N", help="number of ranks")
    p.add_argument(
        "--out",
        type=Path,
        help="trace file when no window is running (default: mpvis-run-<time>.jsonl here)",
    )
    p.add_argument(
        "--headless", action="store_true", help="record to FILE even if a window is running"
    )
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="central process address for a run across machines (needs a fixed "
        "port; implies --headless; prints how to start the other collectors)",
    )
    add_token_options(p, "shared secret of a run across machines (default: random)")
    p.add_argument("--run-id", help="run id the other machines' collectors join (default: random)")
    p.add_argument(
        "--collector-port",
        type=int,
        default=None,
        help="port of the collector on each machine (default: random, or the --listen port + 1)",
    )
    p.add_argument(
        "--mpiexec",
        help="mpiexec to use (default: the one next to this Python, else the first on PATH)",
    )
    p.add_argument(
        "--mpicc",
        help="compiled programs: the mpicc that builds mpvis's trace library for the "
        "program's MPI (default: the one next to mpiexec, else the first on PATH)",
    )
    p.add_argument(
        "--sync-sends",
        action="store_true",
        help="compiled programs: run standard-mode sends as synchronous ones, so that "
        "a program that relies on MPI buffering its sends deadlocks for real",
    )
    p.add_argument(
        "--stuck-after",
        type=float,
        default=STUCK_AFTER,
        metavar="SECONDS",
        help="when no rank has sent a record for this long, check whether the run is "
        f"deadlocked (default: {STUCK_AFTER:g})",
    )
    p.add_argument(
        "--stop-on-deadlock",
        action="store_true",
        help="stop the ranks as soon as a deadlock is proven (the trace is kept)",
    )
    record_options.add_record_options(p)
    p.set_defaults(func=run, mpiexec_options=[], program=[])
    take_program(p, _split_for_mpiexec)


def _split_for_mpiexec(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Let options mpvis does not know through to mpiexec (argparse alone rejects them)."""
    ours, passthrough, program = split_run_args(argv)
    return ours, {"mpiexec_options": passthrough, "program": program}


def split_run_args(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """``(mpvis options, mpiexec options, program and its arguments)`` of ``argv``.

    Without ``--`` the program starts at the first word that is not an option
    or an option's value, and mpiexec options are not allowed.
    """
    dashdash = argv.index("--") if "--" in argv else None
    head = argv if dashdash is None else argv[:dashdash]
    program = [] if dashdash is None else argv[dashdash + 1 :]
    ours: list[str] = []
    passthrough: list[str] = []
    i = 0
    while i < len(head):
        tok = head[i]
        name = tok.split("=", 1)[0]
        if name in _VALUED:
            take = 1 if "=" in tok else 2
            ours.extend(head[i : i + take])
            i += take
        elif tok in _FLAGS:
            ours.append(tok)
            i += 1
        elif dashdash is None and not tok.startswith("-"):
            program = head[i:]
            break
        else:
            passthrough.append(tok)
            i += 1
    if dashdash is None and passthrough:
        raise ValueError(
            f"mpiexec options ({' '.join(passthrough)}) go before '--': "
            "mpvis run [-n N] [mpiexec options] -- prog.py [args]"
        )
    return ours, passthrough, program


def _default_out() -> Path:
    return Path(f"mpvis-run-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl")


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _say(text: str) -> None:
    print(f"mpvis: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """``mpvis run``: with ``--record``, under the record launcher (Netzer and Miller)."""
    preflight(args.program, args.out)
    env = record_options.record_env(args)
    if env and native.is_native_program(args.program):
        from mpvis.cli.native_replay import record_run

        code = record_run(args, run_program)
        print(record_options.record_summary(args.record), flush=True)
        return code
    if getattr(args, "no_stream", False) and not env:
        raise UserError("--no-stream goes with --record DIR")
    if env and args.no_stream:
        code = record_options.run_unstreamed(
            args.nprocs, args.program, env, mpiexec=args.mpiexec, options=args.mpiexec_options
        )
        print(record_options.record_summary(args.record), flush=True)
        return code
    if env:
        # The header says where the record is, so the window can flip its races.
        prog = Path(args.program[0]) if args.program else None
        extra = {
            "record": env["MPVIS_RECORD"],
            "argv": [str(prog.resolve()) if prog and prog.exists() else str(prog),
                     *args.program[1:]],
            "cwd": os.getcwd(),
        }
        code = run_program(
            args, extra_env=env, launch_module=record_options.LAUNCH_MODULE, header_extra=extra
        )
        print(record_options.record_summary(args.record), flush=True)
        return code
    return run_program(args)


def run_program(
    args: argparse.Namespace,
    *,
    extra_env: dict[str, str] | None = None,
    launch_module: str = LAUNCH_MODULE,
    header_extra: dict[str, Any] | None = None,
) -> int:
    """Launch the program under ``launch_module`` on the live path; its exit status."""
    if not args.program:
        raise UserError("no program given: mpvis run [-n N] [mpiexec options] -- prog.py [args]")
    if args.nprocs is not None and args.nprocs < 1:
        raise UserError("-n must be at least 1")
    mpiexec = find_mpiexec(args.mpiexec)
    if mpiexec is None:
        raise UserError(
            "mpiexec not found: install the 'mpich' package into this Python's "
            "environment, put an MPI's mpiexec on PATH, or give --mpiexec"
        )
    lib = _native_library(args, mpiexec)
    token = token_from(args) or new_token()
    run_id = args.run_id or secrets.token_hex(8)
    header = None
    if args.nprocs is not None:
        header = make_header(
            args.nprocs,
            program=shlex.join(args.program if lib else ["python", *args.program]),
            started=_now(),
            run=run_id,
            **(header_extra or {}),
        )
    listen = _listen_address(args)
    collector_port = args.collector_port
    if collector_port is None:
        collector_port = listen[1] + 1 if listen else 0

    session: HeadlessSession | None = None
    journal: Path | None = None
    collector = _window_collector(
        args,
        token=token,
        run_id=run_id,
        header=header,
        collector_port=collector_port,
        listen=listen,
    )
    if collector is None:
        out = journal = args.out or _default_out()
        if args.out is None:
            check_out(out)
        host, port = listen or ("127.0.0.1", 0)
        tls, pin = _tls_for(listen)
        try:
            session = HeadlessSession(out, host, port, token, tls=tls).start()
        except OSError as exc:
            raise UserError(f"cannot listen on {format_address((host, port))}: {exc}") from None
        collector = Collector(
            session.central.address, token, run_id, header=header, port=collector_port,
            tls_pin=pin,
        )
        try:
            collector.start()
        except OSError as exc:
            session.stop()
            raise UserError(f"cannot start the collector on port {collector_port}: {exc}") from None
        _say(f"recording to {out}")
        if listen:
            _print_remote_instructions(session.central.address, token, run_id, collector_port,
                                       pin)

    _log_to_stderr()
    env = dict(os.environ)
    env["MPVIS_COLLECTOR"] = format_address(collector.address)
    env["MPVIS_TOKEN"] = token
    env["MPVIS_RUN"] = run_id
    # Where ranks spill records if their collector dies (mpvis.instrument.transport).
    spill_dir = Path(env.get("MPVIS_SPILL_DIR") or (
        journal.resolve().parent if journal is not None else tempfile.gettempdir()))
    env["MPVIS_SPILL_DIR"] = str(spill_dir)
    env.update(extra_env or {})
    stop_requested = threading.Event()
    previous = _interrupt_on_signals(stop_requested)
    if lib is not None:
        if getattr(args, "sync_sends", False):
            env["MPVIS_SYNC_SENDS"] = "1"
        if args.stop_on_deadlock:  # polling ranks say what they wait for (pmpi/p2p.c)
            env["MPVIS_POLL_WAITING"] = "1"
        command = native.rank_command(
            mpiexec, args.nprocs, args.mpiexec_options, lib, args.program
        )
    else:
        command = rank_command(
            mpiexec, args.nprocs, args.mpiexec_options, args.program, launch_module
        )
    proc = launch(command, env)
    interrupted = stopped = False
    watch = StuckWatch(args.stuck_after)
    try:
        while proc.poll() is None and not stop_requested.is_set():
            if session is not None:
                session.pump(timeout=0.1)
                if watch.poll(session) and args.stop_on_deadlock:
                    _say("stopping the deadlocked ranks (--stop-on-deadlock)")
                    stopped = True
                    stop_group(proc)
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(0.2)
                while collector.notices:  # the window's findings, on this terminal too
                    _say(collector.notices.popleft())
                if collector.halt_requested.is_set():
                    _say("the window asked to stop the run: stopping the ranks")
                    stop_requested.set()
        if stop_requested.is_set():
            interrupted = True
            _say("interrupted: stopping the ranks")
            stop_group(proc)
        returncode = proc.returncode
        # Ranks stopped on purpose are left where they were (not "dead"), so the
        # report shows where they were blocked.
        end = {"exit_code": returncode, "interrupted": interrupted or stopped}
        if args.nprocs is not None:
            end["nprocs"] = args.nprocs
        if not collector.finish(end, timeout=DRAIN_WAIT):
            _say(
                f"warning: {collector.unacked} batches were not acknowledged "
                f"({collector.refused or 'central process unreachable'})"
            )
        if session is None:
            if collector.unacked:  # the window closed or died during the run
                where = f" ({collector.journal} holds them)" if collector.journal else ""
                _say(f"the trace is incomplete: {collector.unacked_records} records lost: the "
                     f"window did not take its last {collector.unacked} batches (closed or "
                     f"killed?); only what it received is kept{where}")
            else:
                _say(f"mpiexec exited with status {returncode}; the trace is in the window")
            if args.out is not None:
                _copy_journal(collector, args.out)
            if interrupted:
                return 130
            return EXIT_PROGRAM_FAILED if returncode else (
                EXIT_TRACE_INCOMPLETE if collector.unacked else 0)
        if not session.wait_end(DRAIN_WAIT):
            _say("warning: the run's end was not recorded in time")
        text, code = session.report()
        print(text, flush=True)
        if session.analyses is not None and no_mpi_call(session.analyses.model):
            _say(NO_MPI_CALL if lib is None else NO_MPI_CALL_NATIVE)
        incomplete = _incomplete(session, collector)
        if incomplete:
            _say(incomplete)
        if interrupted:
            return 130
        if stopped:
            return code
        if returncode:
            _say(f"the program failed: mpiexec exited with status {returncode}")
            return EXIT_PROGRAM_FAILED
        return EXIT_TRACE_INCOMPLETE if incomplete else code
    except KeyboardInterrupt:
        stop_group(proc, grace=0.5)
        return 130
    finally:
        if proc.poll() is None:
            stop_group(proc, grace=0.5)
        collector.stop()
        if session is not None:
            session.stop()
        if journal is not None:
            _merge_spills(journal, spill_dir, run_id)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _incomplete(session: HeadlessSession, collector: Collector) -> str | None:
    """Why the trace lacks records, with how many, or ``None`` if it is whole
    (as far as mpvis can tell: a SIGKILLed rank's unshipped records are unknown)."""
    unacked = [RecordsLost(collector.unacked_records, f"in {collector.unacked} batches never "
                           "reached the central process")] if collector.unacked else []
    return session.run.incomplete(unacked, end_missing=session.ended is None)


def _merge_spills(journal: Path, spill_dir: Path, run_id: str) -> None:
    """Records that ranks spilled (their collector died) go into the trace."""
    try:
        spills = spill_files(spill_dir, run_id)
        if spills:
            # a compiled program's ranks spill raw call sites: named as the collector does
            merged = merge_spills(journal, spills, SiteSymbolizer().name_record)
            _say(f"{journal}: {merged.summary()}")
            for f in spills:
                f.unlink()
    except (TraceFileError, OSError) as exc:
        _say(f"warning: ranks' spill files were not merged ({exc}); "
             f"run 'mpvis recover {journal}' to retry")


def _native_library(args: argparse.Namespace, mpiexec: str) -> native.NativeLibrary | None:
    """The PMPI trace library for a compiled program (built once per MPI), else ``None``."""
    if not native.is_native_program(args.program):
        return None
    mpicc = native.find_mpicc(mpiexec, getattr(args, "mpicc", None))
    lib = native.build_library(mpicc)
    first = args.program[0]
    path = Path(first) if os.sep in first else Path(shutil.which(first) or first)
    native.check_program(path, lib, mpicc)
    return lib


class StuckWatch:
    """Notices a live run whose ranks have all gone quiet, and asks the model.

    Collective mismatches are proven as soon as their records arrive, but they
    are reported (and stop the run) once the run has gone quiet: MPI may
    complete some with wrong data, and the ranks that join the hang later would
    otherwise give a second message with other ranks.  A point-to-point or lock
    deadlock is proven once the ranks stop sending: after ``after`` seconds
    without a record, the deadlock monitor's live check runs (Roy et al.; a
    wait-for graph for point-to-point waits).  Each deadlock is reported once,
    on stderr; "press Ctrl-C" follows only if the run is still there
    :data:`HINT_AFTER` seconds later (a job aborted by the ranks' ring check
    ends by itself).
    """

    def __init__(self, after: float) -> None:
        self.after = after
        self._told: set[str] = set()
        self._first: float | None = None
        self._hinted = False

    def poll(self, session: HeadlessSession) -> bool:
        """Report new deadlocks; return whether one is known."""
        analyses = session.analyses
        if analyses is None or analyses.deadlock is None:
            return False
        idle = session.idle_for() >= self.after
        # a collective mismatch MPI may still complete (wrong data) stops the run
        # only once the ranks have gone quiet in it; it is reported as an error anyway
        found: list[dict[str, Any]] = [d.to_report() for d in analyses.deadlock.deadlocks
                                       if idle or (d.check not in MISMATCH_CHECKS
                                                   and d.kind != "collective")]
        if idle:
            found += analyses.stuck()
        for d in found:
            if d["reason"] not in self._told:
                self._told.add(d["reason"])
                _say(f"deadlock ({d['kind']}, ranks {', '.join(map(str, d['ranks']))}): "
                     f"{d['reason']}")
                if self._first is None:
                    self._first = time.monotonic()
        if (self._first is not None and not self._hinted
                and time.monotonic() - self._first >= HINT_AFTER):
            self._hinted = True
            _say("the run cannot finish: press Ctrl-C to stop it (the trace is kept)")
        return bool(self._told)


def _interrupt_on_signals(stop: threading.Event) -> dict[int, Any]:
    """Ctrl-C, SIGTERM and SIGHUP all stop the run cleanly (the ranks too); return
    the previous handlers.  SIGINT is set explicitly: a shell's background job
    starts with it ignored.  The first signal only sets ``stop`` (the main loop
    stops the ranks and still journals and reports every record); a second one
    gives up waiting."""

    def interrupt(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, interrupt)
    return previous


def _log_to_stderr() -> None:
    """Warnings of the live path (refused connections, bad records) as ``mpvis: ...`` lines."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("mpvis: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)


def _listen_address(args: argparse.Namespace) -> tuple[str, int] | None:
    if not args.listen:
        return None
    try:
        host, port = parse_address(args.listen)
    except ValueError as exc:
        raise UserError(f"--listen: {exc}") from None
    if port == 0:
        raise UserError("--listen needs a fixed port: the other machines' collectors must find it")
    if is_loopback(host):
        _say(f"note: {host} is loopback; other machines cannot reach it")
    return host, port


def _window_collector(
    args: argparse.Namespace,
    *,
    token: str,
    run_id: str,
    header: dict[str, Any] | None,
    collector_port: int,
    listen: tuple[str, int] | None,
) -> Collector | None:
    """A collector streaming to the running window, or ``None`` to record headless."""
    if args.headless or listen:
        return None
    window = discover()
    if window is None:
        return None
    collector = Collector(
        window.address, window.token, run_id, rank_token=token, header=header, port=collector_port
    )
    try:
        collector.start()
    except OSError as exc:
        raise UserError(f"cannot start the collector on port {collector_port}: {exc}") from None
    if collector.wait_welcome(WINDOW_WAIT):
        _say(
            f"streaming to the mpvis window (pid {window.pid}) at {format_address(window.address)}"
        )
        if collector.journal:
            _say(f"the window journals this run to {collector.journal} while it is open "
                 "(keep it: File > Save trace as… there, or --out here)")
        return collector
    reason = collector.refused or "no answer"
    collector.stop()
    _say(f"the window did not take this run ({reason}); recording headless")
    return None


def _copy_journal(collector: Collector, out: Path) -> None:
    """``--out`` while streaming to a window: once the window has closed the
    run's journal (``STATUS stop``), copy it to ``out``."""
    if not collector.stopped_by_central.wait(DRAIN_WAIT) or collector.journal is None:
        _say(f"warning: the window did not close the run's journal in time; {out} not written")
        return
    try:
        shutil.copyfile(collector.journal, out)
    except OSError as exc:
        _say(f"warning: cannot copy the journal {collector.journal} to {out}: {exc}")
        return
    _say(f"trace written to {out}")


def _tls_for(listen: tuple[str, int] | None) -> tuple[ssl.SSLContext | None, str | None]:
    """TLS for a run listening beyond loopback: the central process's context and
    the pin the collectors check (:mod:`mpvis.collector.tls`)."""
    if listen is None or is_loopback(listen[0]):
        return None, None
    try:
        return server_context()
    except TlsError as exc:
        raise UserError(f"--listen: {exc}") from None


def _print_remote_instructions(
    central: tuple[str, int], token: str, run_id: str, collector_port: int,
    pin: str | None = None,
) -> None:
    # The token goes in the environment, never on a command line (/proc);
    # with TLS, so does the certificate's pin.
    tls = f"MPVIS_TLS_PIN={pin} " if pin else ""
    cmd = f"MPVIS_TOKEN={shlex.quote(token)} {tls}" + shlex.join(
        [
            "mpvis",
            "collector",
            "--central",
            format_address(central),
            "--run",
            run_id,
            "--port",
            str(collector_port),
        ]
    )
    _say("on every other machine of this run, start a collector (before its ranks start):")
    print(f"    {cmd}", file=sys.stderr, flush=True)
