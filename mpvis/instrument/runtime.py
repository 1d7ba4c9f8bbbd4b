"""Install and tear down the trace library in one rank.

:func:`start` is called once per rank by :mod:`mpvis.instrument.launch` before
the program runs.  It imports ``mpi4py.MPI`` (initialising MPI), creates the
:class:`~mpvis.instrument.recorder.Recorder`, opens the sink chosen by the
environment (:func:`mpvis.instrument.transport.open_sink`), sends the header
(rank 0), and puts the traced objects in place of mpi4py's:

* ``MPI.COMM_WORLD`` becomes a :class:`~mpvis.instrument.traced_comm.TracedIntracomm`;
* ``MPI.Request`` becomes :class:`~mpvis.instrument.traced_request.TracedRequest`
  (so ``MPI.Request.Waitall`` and friends are traced), and ``MPI.Prequest``
  :class:`~mpvis.instrument.traced_request.TracedPrequest` (``Startall``);
* the collective wrappers are added (:mod:`mpvis.instrument.traced_coll`), with
  Roy et al.'s ring check (:mod:`mpvis.instrument.ringcheck`) before each
  collective unless ``MPVIS_RINGCHECK=0``.

Environment: ``MPVIS_COLLECTOR``, ``MPVIS_TOKEN``, ``MPVIS_TRACE_DIR`` (see
:mod:`~mpvis.instrument.transport`), ``MPVIS_FLUSH_QUIET_MS`` and
``MPVIS_FLUSH_MS`` (when the flusher ships: after that long without a record,
default 5, and at the latest after that long, default 50), ``MPVIS_RINGCHECK``
(``0`` or ``1``, default 1).
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import mpvis.instrument as _public
from mpvis.instrument.recorder import Recorder
from mpvis.instrument.transport import Flusher, open_sink
from mpvis.protocol.records import make_header

__all__ = ["ABORT_GRACE", "Runtime", "current", "start"]

#: Seconds a crashing rank waits before aborting the job (other ranks flush).
ABORT_GRACE = 0.1


class Runtime:
    """The trace library of this rank once installed; ends with :meth:`finish` or :meth:`crash`."""

    def __init__(self, program: str, env: dict[str, str]) -> None:
        import mpi4py
        from mpi4py import MPI

        from mpvis.instrument import traced_coll, traced_comm, traced_request

        self._MPI = MPI
        raw_world = MPI.COMM_WORLD
        rank, size = raw_world.Get_rank(), raw_world.Get_size()
        here = str(Path(__file__).resolve().parent) + os.sep
        mpi4py_dir = str(Path(mpi4py.__file__).resolve().parent) + os.sep
        unresolved = str(Path(__file__).parent) + os.sep  # as in code objects' file names
        self.recorder = Recorder(rank, (here, unresolved, mpi4py_dir))
        self.recorder.t0 = _time_origin(raw_world, rank)
        sink = open_sink(rank, env)
        if rank == 0:
            started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            sink.header(make_header(size, program=program, started=started))
        self.ringcheck = env.get("MPVIS_RINGCHECK", "1") != "0"
        traced_comm.TracedIntracomm.ring_factory = self._ring if self.ringcheck else None
        traced_coll.install_collectives()
        traced_coll.set_precheck(_ring_precheck if self.ringcheck else None)
        self.world = traced_comm.bind_world(self.recorder)
        setattr(MPI, "COMM_WORLD", self.world)  # noqa: B010 (a Final name in the stubs)
        setattr(MPI, "Request", traced_request.TracedRequest)  # noqa: B010
        setattr(MPI, "Prequest", traced_request.TracedPrequest)  # noqa: B010
        _public._recorder[0] = self.recorder
        quiet = float(env.get("MPVIS_FLUSH_QUIET_MS", "5")) / 1000.0
        longest = float(env.get("MPVIS_FLUSH_MS", "50")) / 1000.0
        self.flusher = Flusher(self.recorder, sink, max(quiet, 0.0005), max(longest, 0.001))
        self._grace = max(ABORT_GRACE, 2 * longest)  # a busy rank's longest delay, twice
        self._closed = False
        _CURRENT[0] = self
        self._watch_sigterm()

    def _watch_sigterm(self) -> None:
        """On SIGTERM, ship or spill the records and leave (``Flusher.terminated``),
        even while the program's thread is blocked inside MPI (where a Python
        signal handler would never run): the signal's wakeup byte is read by a
        watch thread.  A program that installs its own SIGTERM handler keeps it."""
        if threading.current_thread() is not threading.main_thread():
            return
        rd, wr = socket.socketpair()
        wr.setblocking(False)
        try:
            signal.set_wakeup_fd(wr.fileno(), warn_on_full_buffer=False)
        except ValueError:
            rd.close()
            wr.close()
            return
        self._wakeup = (rd, wr)  # kept open for the life of the process

        def on_sigterm(signum: int, frame: object) -> None:
            self.flusher.terminated(signum)

        signal.signal(signal.SIGTERM, on_sigterm)

        def watch() -> None:
            while data := rd.recv(64):
                if signal.SIGTERM in data and signal.getsignal(signal.SIGTERM) is on_sigterm:
                    self.flusher.terminated(signal.SIGTERM)

        threading.Thread(target=watch, name="mpvis-sigterm", daemon=True).start()

    def _ring(self, comm: Any) -> Any:
        """A ring checker for a new traced communicator (collective over it)."""
        from mpvis.instrument.ringcheck import RingChecker

        return RingChecker(self._MPI.Intracomm(comm), on_error=self.crash)

    def finish(self) -> None:
        """Normal end: ``final`` record, end-of-run ring check, flush, ``BYE final``.

        ``final`` comes first: the program did end normally, even if the ring
        check then finds a rank still waiting in a collective (Roy et al.,
        case 3) and aborts the job through :meth:`crash`.
        """
        if self._closed:
            return
        self.recorder.final()
        if not self._MPI.Is_finalized():
            from mpvis.instrument.traced_comm import reap_headers

            if self.ringcheck:
                self.world.mv_finalize_checks()
            reap_headers()
        self._closed = True
        self.flusher.close("final")

    def crash(self, detail: str) -> None:
        """Abnormal end: flush what was recorded and say ``BYE crashed``.

        Then waits :data:`ABORT_GRACE` (or twice ``MPVIS_FLUSH_MS`` if longer),
        so that the other ranks' flushers ship their last records before the
        caller aborts the job (a blocked rank ships within about 10 ms, a busy
        one within ``MPVIS_FLUSH_MS``).
        """
        if self._closed:
            return
        self._closed = True
        self.flusher.close("crashed", detail)
        time.sleep(self._grace)


def _machine() -> str:
    """What names this machine's monotonic clock: the kernel's boot id (shared by
    every process and container of one kernel), else the host name."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return socket.gethostname()


def _time_origin(world: Any, rank: int) -> float:
    """This rank's ``t0`` (``t = time.monotonic() - t0``): one origin for the run,
    rank 0's start, so a message never seems to arrive before it left merely
    because its receiver started later.

    Ranks on rank 0's machine use rank 0's monotonic reading itself: one clock,
    so ``t`` orders their events as they happened, by construction.  Elsewhere
    the origin is mapped through the wall clock (as far as the machines' clocks
    agree); reading the two clocks is not atomic, so a rank preempted between
    the readings would be off by the delay: the same-machine case, the one a
    debugger mostly sees, avoids that entirely.
    """
    here = _machine()
    wall0, mono0, machine0 = world.bcast(
        (time.time(), time.monotonic(), here) if rank == 0 else None, root=0)
    if machine0 == here:
        return float(mono0)
    now_mono, now_wall = time.monotonic(), time.time()
    return now_mono - max(0.0, now_wall - float(wall0))


def _ring_precheck(comm: Any, op: str, fields: dict[str, Any], site: str) -> None:
    ring = comm._mv_ring
    if ring is not None:
        ring.check(
            op,
            root=fields.get("root"),
            count=fields.get("count"),
            dtype=fields.get("dtype"),
            redop=fields.get("redop"),
            site=site,
        )


_CURRENT: list[Runtime | None] = [None]


def current() -> Runtime | None:
    """The trace library installed in this process by :func:`start`, if any."""
    return _CURRENT[0]


def start(program: str, env: dict[str, str] | None = None) -> Runtime:
    """Install the trace library in this rank (initialises MPI)."""
    return Runtime(program, dict(os.environ) if env is None else env)
