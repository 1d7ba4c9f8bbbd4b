"""Where a rank's records go, and the flusher thread that ships them.

Sinks (chosen by :func:`open_sink` from the environment that ``mpvis run`` sets):

* ``MPVIS_COLLECTOR=host:port`` (with ``MPVIS_TOKEN``): :class:`SocketSink`
  speaks the wire protocol of :mod:`mpvis.protocol.framing` to the collector
  of this machine: ``HELLO`` (role ``rank``), ``HEADER`` (rank 0 only),
  ``COMPACT`` batches (binary records, :mod:`mpvis.protocol.compact`)
  numbered from 0, and ``BYE`` with ``final`` or
  ``crashed`` (MPVisualizer, section 2: ranks report to a per-machine
  collector).  If the collector cannot be reached the rank says so on stderr
  and runs untraced rather than failing.
* else ``MPVIS_TRACE_DIR=DIR``: :class:`FileSink` writes ``DIR/rank-<r>.jsonl``
  (JSON Lines, this rank's events in ``seq`` order, expanded in this rank by
  :class:`~mpvis.protocol.compact.CompactDecoder`); rank 0's file starts with
  the header, so ``cat rank-0.jsonl rank-1.jsonl ...`` is a valid trace file.
  No central process sees these files, so buffer consumes keep ``chan`` (and
  buffer sends ``buf``) instead of ``send``:
  :func:`mpvis.protocol.chansend.resolve_sends` names the sends afterwards,
  and a reader that ignores them infers the same sends by the spec's rule.
* else: :class:`NullSink`, records are dropped (the program still runs with
  the wrappers, so its behaviour does not depend on being watched).

Leaving when the collector is gone (no orphans): the flusher checks every
:data:`WATCH_EVERY` seconds that the collector's connection is still open (a
non-blocking ``MSG_PEEK`` read: end of stream or an error other than "would
block" means it is closed), and treats a failed send the same way.  Then the
rank writes the records it has not shipped, and those it shipped during the
last :data:`KEEP_SHIPPED` seconds (the collector may have died holding them),
to its spill file (:func:`spill_path`, format in :mod:`mpvis.tracefile.spill`),
says so on stderr and leaves the process with status :data:`ORPHAN_EXIT`
(``os._exit``: a rank blocked in MPI never returns to Python), so nothing of
the run outlives the process that watched it.  ``mpvis run`` and ``mpvis
recover DIR`` merge spill files into the trace.

Flushing (:class:`Flusher`): the program's thread never encodes or writes.  A
daemon thread waits without the GIL (``Recorder.idle_wait``, polling the
recorder's counters) and ships the pending records,
one ``drain`` (bytes, no per-record work) and one frame per
:data:`BATCH_RECORDS` records, as soon as either

* the rank has recorded nothing for ``MPVIS_FLUSH_QUIET_MS`` (default 5,
  checked every as many milliseconds): it is blocked (mpi4py releases the GIL
  inside every blocking MPI call) or computing, so the live view shows where
  it stands within about 10 ms of it blocking; or
* ``MPVIS_FLUSH_MS`` (default 50) have passed while the rank keeps recording:
  a busy rank's view is at most that far behind.

A busy rank thus pays a flush (a GIL hand-over and a copy) twenty times a
second, not at every blocking call: a synchronous flush before each blocking
call would cost a syscall per message, several times the latency of a small
mpi4py message (see ``benchmarks/overhead_pingpong.py``).
:meth:`Flusher.close` drains everything synchronously (normal end and crash).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import orjson

from mpvis.instrument.recorder import Drained, Recorder
from mpvis.protocol.compact import CompactDecoder, compact_body
from mpvis.protocol.framing import MsgType, encode_frame_parts

__all__ = ["FileSink", "Flusher", "NullSink", "Sink", "SocketSink", "open_sink", "spill_path"]

from mpvis.protocol.record_types import Record

#: Records per ``COMPACT`` frame (56 bytes each); keeps a frame far below the 16 MiB bound.
BATCH_RECORDS = 50_000
#: Seconds between two checks that the collector's connection is still open.
WATCH_EVERY = 0.5
#: Shipped batches are kept this many seconds (and at most this many record
#: bytes), to be spilled if the collector dies holding them: a collector slowed
#: down (a loaded machine, a slow central process) may forward seconds late.
KEEP_SHIPPED = 10.0
KEEP_BYTES = 32 << 20
#: Exit status of a rank that left because its collector was gone (EX_TEMPFAIL).
ORPHAN_EXIT = 75
#: Seconds a rank lingers after spilling, before leaving: MPICH's mpiexec kills
#: every rank once one leaves, and the peers need time to spill too.
ORPHAN_LINGER = 1.5
#: Seconds a rank that got SIGTERM watches for its collector's connection to close.
TERM_LOOK = 0.5
#: The spill file format's first line (``kind``), see :mod:`mpvis.tracefile.spill`.
SPILL_KIND = "mpvis-spill"
#: Records written (and flushed) at a time to a spill file.
SPILL_PIECE = 2000


def spill_path(rank: int, env: dict[str, str]) -> Path:
    """``$MPVIS_SPILL_DIR/spill-<MPVIS_RUN>-rank-<rank>.jsonl`` (default directory:
    the system's temporary directory)."""
    directory = env.get("MPVIS_SPILL_DIR") or tempfile.gettempdir()
    run = env.get("MPVIS_RUN") or "run"
    return Path(directory) / f"spill-{run}-rank-{rank}.jsonl"


class Sink(Protocol):
    """A destination for one rank's header, record batches and goodbye."""

    def header(self, header: Record) -> None:
        """The run's trace header (rank 0 only)."""

    def compact(self, batch: Drained) -> None:
        """Records of this rank as drained, continuing the previous batch."""

    def bye(self, status: str, detail: str) -> None:
        """The rank is done (``final`` or ``crashed``); release resources."""

    def gone(self) -> bool:
        """Whether the receiving end has gone away (checked without blocking)."""

    def spill(self, pending: list[Drained], reason: str) -> tuple[Path, int] | None:
        """Write what may not have arrived (and ``pending``) to the spill file:
        its path and number of records, or ``None`` when nothing needs spilling."""


class _Local:
    """A sink whose receiving end cannot go away."""

    def gone(self) -> bool:
        return False

    def spill(self, pending: list[Drained], reason: str) -> tuple[Path, int] | None:
        return None


class NullSink(_Local):
    """Drops everything."""

    def header(self, header: Record) -> None:
        return None

    def compact(self, batch: Drained) -> None:
        return None

    def bye(self, status: str, detail: str) -> None:
        return None


class FileSink(_Local):
    """Writes ``rank-<r>.jsonl`` in a directory (header first on rank 0)."""

    def __init__(self, directory: Path, rank: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._file = open(directory / f"rank-{rank}.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self._decoder = CompactDecoder(rank)

    def header(self, header: Record) -> None:
        self._write([header])

    def compact(self, batch: Drained) -> None:
        records, error = self._decoder.decode(compact_body(0, *batch))
        if error is not None:  # the recorder wrote it: a bug, not a bad peer
            raise RuntimeError(f"mpvis: undecodable records: {error}")
        self._write(records)

    def _write(self, recs: list[Record]) -> None:
        self._file.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs))
        self._file.flush()

    def bye(self, status: str, detail: str) -> None:
        self._file.close()


class SocketSink:
    """Frames of the wire protocol over one TCP connection to the collector."""

    def __init__(self, address: str, token: str | None, rank: int,
                 spill_to: Path | None = None) -> None:
        host, _, port = address.rpartition(":")
        self._sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=30)
        self._sock.settimeout(None)
        self._rank = rank
        self._batch = 0
        self._spill_to = spill_to or spill_path(rank, {})
        self._sites: list[str] = []  # every site shipped, ids from 1
        self._recent: deque[tuple[float, Drained]] = deque()  # shipped lately
        self._kept = 0  # record bytes in _recent
        self._send(
            MsgType.HELLO,
            {
                "role": "rank",
                "token": token,
                "rank": rank,
                "pid": os.getpid(),
                "host": socket.gethostname(),
            },
        )

    def _send(self, msg_type: MsgType, body: dict[str, Any]) -> None:
        """Send one frame; its large pieces (the records) go without a copy."""
        parts = [memoryview(b) for b in encode_frame_parts(msg_type, body)]
        while parts:
            sent = self._sock.sendmsg(parts)
            while parts and sent >= len(parts[0]):
                sent -= len(parts[0])
                del parts[0]
            if parts:
                parts[0] = parts[0][sent:]

    def header(self, header: Record) -> None:
        self._send(MsgType.HEADER, header)

    def compact(self, batch: Drained) -> None:
        # Kept first: if the send fails, the batch is spilled with the rest.
        now = time.monotonic()
        recent = self._recent
        recent.append((now, batch))
        self._sites += batch[2]
        self._kept += len(batch[0])
        while len(recent) > 1 and (recent[0][0] < now - KEEP_SHIPPED or self._kept > KEEP_BYTES):
            self._kept -= len(recent.popleft()[1][0])
        self._send(MsgType.COMPACT, compact_body(self._batch, *batch))
        self._batch += 1

    def bye(self, status: str, detail: str) -> None:
        try:
            self._send(MsgType.BYE, {"rank": self._rank, "status": status, "detail": detail})
            self._sock.shutdown(socket.SHUT_WR)
        finally:
            self._sock.close()

    def gone(self) -> bool:
        """The collector closed the connection (or it broke); the collector never
        writes to a rank except to refuse it, so any readable state means that."""
        try:
            self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        return True  # end of stream, or a REFUSED frame (the collector then closes)

    def spill(self, pending: list[Drained], reason: str) -> tuple[Path, int] | None:
        """The batches shipped lately and ``pending`` as records (``seq`` order) in
        the spill file, after a first line ``{"kind": "mpvis-spill", ...}``."""
        with contextlib.suppress(OSError):
            self._sock.close()
        sites = self._sites + [s for b in pending for s in b[2]]
        decoder = CompactDecoder(self._rank, sites)
        records: list[Record] = []
        for batch in [b for _, b in self._recent] + pending:
            recs, _ = decoder.decode(compact_body(0, batch[0], batch[1], [], batch[3], batch[4]))
            records += recs
        if not records:
            return None
        path = self._spill_to
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"kind": SPILL_KIND, "version": 1, "rank": self._rank, "reason": reason}
        # Written in pieces, each flushed: if mpiexec kills this rank midway (a peer
        # left first), the lines written are kept; a reader drops a cut last line.
        # orjson, as the journal writes: a NaN or infinite state value becomes null
        # (json.dumps wrote NaN, which no trace reader accepts: the spill was refused).
        with open(path, "wb") as fh:
            fh.write(orjson.dumps(meta) + b"\n")
            for i in range(0, len(records), SPILL_PIECE):
                fh.write(b"".join(orjson.dumps(r) + b"\n" for r in records[i:i + SPILL_PIECE]))
                fh.flush()
        return path, len(records)


def open_sink(rank: int, env: dict[str, str] | None = None) -> Sink:
    """The sink the environment asks for (see the module docstring)."""
    env = dict(os.environ) if env is None else env
    address = env.get("MPVIS_COLLECTOR", "")
    if address:
        try:
            return SocketSink(address, env.get("MPVIS_TOKEN") or None, rank,
                              spill_path(rank, env))
        except OSError as exc:
            print(
                f"mpvis: rank {rank}: cannot reach collector {address}: {exc}; running untraced",
                file=sys.stderr,
            )
            return NullSink()
    directory = env.get("MPVIS_TRACE_DIR", "")
    if directory:
        return FileSink(Path(directory), rank)
    return NullSink()


class Flusher:
    """A daemon thread that moves records from the recorder to a sink periodically.

    A sink that fails (the collector went away) is replaced by a
    :class:`NullSink` after one message on stderr: the program keeps running.
    """

    def __init__(self, recorder: Recorder, sink: Sink, quiet: float, longest: float,
                 *, leave: Callable[[int], None] = os._exit) -> None:
        """Flush after ``quiet`` seconds without a record, or ``longest`` seconds at most.

        ``leave(status)`` ends the process when the sink's receiver is gone
        (see the module docstring); tests pass their own."""
        self._recorder = recorder
        self._sink = sink
        self._leave = leave
        self._terminating = False
        self._next_watch = time.monotonic() + WATCH_EVERY
        self._quiet = quiet
        self._longest = longest
        self._lock = threading.Lock()  # serialises flushes (thread vs close)
        self._stop = threading.Event()
        self._running = threading.Event()  # cleared: park the thread (paused)
        self._running.set()
        self._parked = threading.Event()  # the thread is parked
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mpvis-flusher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            if not self._running.is_set():
                self._parked.set()
                self._running.wait()
                self._parked.clear()
            self._recorder.idle_wait(self._quiet, self._longest)
            if self._stop.is_set():
                return
            now = time.monotonic()
            if now >= self._next_watch:
                self._next_watch = now + WATCH_EVERY
                if self._sink.gone():
                    self._orphaned("the collector closed the connection", leave=True)
                    return
            self.flush()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No flushing (not even polling) for the duration: records wait.  For
        measurements: the untraced baseline of ``benchmarks/overhead_pingpong.py``.

        Returns once the pending records are shipped and the thread is parked,
        so that none of its work falls into the duration.
        """
        self._running.clear()
        self._recorder.wake()
        self.flush()
        self._parked.wait(timeout=5)
        try:
            yield
        finally:
            self._running.set()

    def flush(self) -> None:
        """Ship every pending record now."""
        with self._lock:
            if self._closed:
                return
            rec = self._recorder
            while rec.pending():
                self._call(self._sink.compact, rec.drain(BATCH_RECORDS))

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except OSError as exc:
            if isinstance(self._sink, SocketSink):
                self._orphaned(f"sending to the collector failed: {exc}",
                               leave=not self._stop.is_set(), locked=True)
                return
            print(
                f"mpvis: trace output failed ({exc}); the rest of this rank is untraced",
                file=sys.stderr,
            )
            self._sink = NullSink()

    def terminated(self, signum: int) -> None:
        """The process got ``signum`` (SIGTERM: the run is being stopped, e.g. by
        mpiexec whose ``mpvis run`` died): ship everything and say ``BYE crashed``
        if the collector is there, else spill; linger :data:`ORPHAN_LINGER` (the
        peers got the signal too, and MPICH kills them once one rank leaves);
        then leave with ``128 + signum``."""
        with self._lock:
            if self._terminating:
                return
            self._terminating = True
        # When mpvis run dies, mpiexec's SIGTERM (PR_SET_PDEATHSIG) may come before
        # the kernel has closed the dying process's sockets: look a little longer.
        deadline = time.monotonic() + TERM_LOOK
        while not self._sink.gone() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self._sink.gone():
            self._orphaned(f"got signal {signum} and the collector is gone", leave=False)
        else:
            self.close("crashed", f"stopped by signal {signum}")
        time.sleep(ORPHAN_LINGER)
        self._leave(128 + signum)

    def _orphaned(self, why: str, *, leave: bool, locked: bool = False) -> None:
        """The collector is gone: spill what it may not have, then (``leave``) end
        the process with :data:`ORPHAN_EXIT`; at the rank's own end, just spill."""
        with contextlib.nullcontext() if locked else self._lock:
            sink, self._sink = self._sink, NullSink()
            rec = self._recorder
            pending = []
            while rec.pending():
                pending.append(rec.drain(BATCH_RECORDS))
            try:
                spilled = sink.spill(pending, why)
                where = (f"{spilled[1]} records spilled to {spilled[0]}" if spilled
                         else "nothing to spill")
            except OSError as exc:
                where = f"the spill file could not be written ({exc})"
        print(f"mpvis: rank {rec.rank}: {why}; {where}"
              + ("; leaving (its run is gone)" if leave else ""), file=sys.stderr, flush=True)
        if leave:
            time.sleep(ORPHAN_LINGER)
            self._leave(ORPHAN_EXIT)

    def close(self, status: str, detail: str = "") -> None:
        """Stop the thread, ship the rest, say goodbye with ``status`` (once)."""
        self._stop.set()
        self._running.set()
        self._recorder.wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        self.flush()
        with self._lock:
            if not self._closed:
                self._closed = True
                self._call(self._sink.bye, status, detail)
