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

import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from mpvis.instrument.recorder import Drained, Recorder
from mpvis.protocol.compact import CompactDecoder, compact_body
from mpvis.protocol.framing import MsgType, encode_frame_parts

__all__ = ["FileSink", "Flusher", "NullSink", "Sink", "SocketSink", "open_sink"]

Record = dict[str, Any]

#: Records per ``COMPACT`` frame (56 bytes each); keeps a frame far below the 16 MiB bound.
BATCH_RECORDS = 50_000


class Sink(Protocol):
    """A destination for one rank's header, record batches and goodbye."""

    def header(self, header: Record) -> None:
        """The run's trace header (rank 0 only)."""

    def compact(self, batch: Drained) -> None:
        """Records of this rank as drained, continuing the previous batch."""

    def bye(self, status: str, detail: str) -> None:
        """The rank is done (``final`` or ``crashed``); release resources."""


class NullSink:
    """Drops everything."""

    def header(self, header: Record) -> None:
        return None

    def compact(self, batch: Drained) -> None:
        return None

    def bye(self, status: str, detail: str) -> None:
        return None


class FileSink:
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

    def __init__(self, address: str, token: str | None, rank: int) -> None:
        host, _, port = address.rpartition(":")
        self._sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=30)
        self._sock.settimeout(None)
        self._rank = rank
        self._batch = 0
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
        self._send(MsgType.COMPACT, compact_body(self._batch, *batch))
        self._batch += 1

    def bye(self, status: str, detail: str) -> None:
        try:
            self._send(MsgType.BYE, {"rank": self._rank, "status": status, "detail": detail})
            self._sock.shutdown(socket.SHUT_WR)
        finally:
            self._sock.close()


def open_sink(rank: int, env: dict[str, str] | None = None) -> Sink:
    """The sink the environment asks for (see the module docstring)."""
    env = dict(os.environ) if env is None else env
    address = env.get("MPVIS_COLLECTOR", "")
    if address:
        try:
            return SocketSink(address, env.get("MPVIS_TOKEN") or None, rank)
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

    def __init__(self, recorder: Recorder, sink: Sink, quiet: float, longest: float) -> None:
        """Flush after ``quiet`` seconds without a record, or ``longest`` seconds at most."""
        self._recorder = recorder
        self._sink = sink
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
            print(
                f"mpvis: trace output failed ({exc}); the rest of this rank is untraced",
                file=sys.stderr,
            )
            self._sink = NullSink()

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
