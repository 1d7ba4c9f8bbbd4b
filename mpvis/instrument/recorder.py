"""The in-rank event recorder: numbers events and builds trace records cheaply.

One :class:`Recorder` lives in each traced rank.  Every wrapper of
:mod:`mpvis.instrument.traced_comm` and :mod:`mpvis.instrument.traced_request`
calls one of its methods, which appends one compact tuple to
:attr:`Recorder.pending` and returns the event's ``seq``.  Nothing here does
I/O or touches MPI: the flusher thread of :mod:`mpvis.instrument.transport`
calls :meth:`Recorder.drain`, which turns the tuples into records (dicts in the
trace format of ``shared/spec/trace-format.md``), and ships them.  The cost
on the program's thread is one tuple and one ``deque.append`` per event,
about five times less than building the dict there (MPVisualizer, section 2:
the trace library must disturb the traced program as little as possible).

Call sites (``"file:line"``, the first frame outside the library and mpi4py)
are formatted once per line and cached.  Nothing is validated on the hot
path; tests check records with :func:`mpvis.protocol.records.check_record`.

Ranks in records are ``MPI_COMM_WORLD`` ranks (the header's ``0..nprocs-1``);
wildcards (``MPI_ANY_SOURCE``, ``MPI_ANY_TAG``) are written ``-1``; translating
them is the caller's job.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from types import FrameType
from typing import Any

__all__ = ["UNKNOWN_SITE", "Record", "Recorder", "Site"]

Record = dict[str, Any]
Site = str

#: The site of a call with no frame outside the library (never expected).
UNKNOWN_SITE = "<unknown>:0"
_UNSEEN: Any = object()

_monotonic = time.monotonic


class Recorder:
    """Numbers the events of one rank and appends their records to :attr:`pending`.

    ``internal_dirs`` are path prefixes of code that is not the user's (the
    trace library itself, mpi4py): :meth:`site` reports the first frame outside
    them.  The program's thread is the only writer; a flusher thread may drain
    :attr:`pending` concurrently (``deque.append``/``popleft`` are atomic).
    """

    __slots__ = ("_files", "_prefixes", "_t0", "pending", "rank", "seq")

    def __init__(self, rank: int, internal_dirs: tuple[str, ...]) -> None:
        self.rank = rank
        self.seq = 0
        self.pending: deque[tuple[Any, ...]] = deque()
        self._t0 = _monotonic()
        self._prefixes = internal_dirs
        self._files: dict[str, dict[int, str] | None] = {}

    # -- call sites -----------------------------------------------------------

    def site(self) -> str:
        """``"file:line"`` of the innermost frame outside the internal dirs.

        Per file name (strings hash once) the recorder caches whether it is
        internal (``None``) or else its formatted sites by line, so a call
        costs a few dict lookups per frame walked.
        """
        f: FrameType | None = sys._getframe(1)
        files = self._files
        while f is not None:
            fn = f.f_code.co_filename
            lines = files.get(fn, _UNSEEN)
            if lines is _UNSEEN:
                lines = files[fn] = None if fn.startswith(self._prefixes) else {}
            if lines is not None:
                line = f.f_lineno
                text = lines.get(line)
                if text is None:
                    text = lines[line] = f"{fn}:{line}"
                return text
            f = f.f_back
        return UNKNOWN_SITE

    # -- one method per record kind ---------------------------------------------
    # Each appends a tuple (builder, seq, monotonic time, site, fields...);
    # :meth:`drain` turns it into the spec's dict (see _BUILDERS).

    def send(  # noqa: PLR0917 (hot path: positional)
        self, comm: int, dest: int, tag: int, blocking: bool, sync: bool, site: Site
    ) -> int:
        """A ``send`` record; a nonblocking send's ``req`` is its own ``seq``."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_send, seq, _monotonic(), site, comm, dest, tag, blocking, sync))
        return seq

    def recv(self, comm: int, src: int, tag: int, blocking: bool, site: Site) -> int:
        """A ``recv`` record (``src``/``tag`` already ``-1`` for wildcards)."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_recv, seq, _monotonic(), site, comm, src, tag, blocking))
        return seq

    def consume(  # noqa: PLR0917 (hot path: positional)
        self, comm: int, recv: int, src: int, tag: int, send_seq: int | None, site: Site
    ) -> int:
        """A ``consume`` of the message sent as ``[src, send_seq]`` (omitted if unknown)."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_consume, seq, _monotonic(), site, comm, recv, src, tag, send_seq))
        return seq

    def wait(self, reqs: list[int], site: Site) -> int:
        """A ``wait`` record for the requests completed by one call."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_plain, seq, _monotonic(), site, "wait", "reqs", reqs))
        return seq

    def coll(self, comm: int, op: str, args: dict[str, Any], site: Site) -> int:
        """A ``coll`` record on entry; ``args`` holds root/count/dtype/redop/group."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_coll, seq, _monotonic(), site, comm, op, args))
        return seq

    def coll_exit(self, comm: int, op: str, site: Site) -> int:
        """A ``coll_exit`` record on return from a collective."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_coll, seq, _monotonic(), site, comm, op, None))
        return seq

    def state(self, variables: dict[str, Any], site: Site) -> int:
        """A ``state`` record; values that are not JSON scalars are stored as ``repr``."""
        clean = {
            str(k): v if v is None or type(v) in (int, float, str, bool) else repr(v)
            for k, v in variables.items()
        }
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_plain, seq, _monotonic(), site, "state", "vars", clean))
        return seq

    def final(self) -> int:
        """The ``final`` record of a normal termination."""
        seq = self.seq
        self.seq = seq + 1
        self.pending.append((_final, seq, _monotonic(), None))
        return seq

    def drain(self) -> list[Record]:
        """Remove every pending record and return them as trace dicts, oldest first."""
        pop = self.pending.popleft
        rank, t0 = self.rank, self._t0
        out: list[Record] = []
        for _ in range(len(self.pending)):
            r = pop()
            out.append(r[0](rank, r[1], r[2] - t0, r))
        return out


# -- builders: pending tuple -> record dict (run by the flusher thread) ----------------


def _send(rank: int, seq: int, t: float, r: tuple[Any, ...]) -> Record:
    rec = {
        "rank": rank,
        "seq": seq,
        "kind": "send",
        "t": t,
        "site": r[3],
        "comm": r[4],
        "dest": r[5],
        "tag": r[6],
        "blocking": r[7],
        "sync": r[8],
    }
    if not r[7]:
        rec["req"] = seq
    return rec


def _recv(rank: int, seq: int, t: float, r: tuple[Any, ...]) -> Record:
    rec = {
        "rank": rank,
        "seq": seq,
        "kind": "recv",
        "t": t,
        "site": r[3],
        "comm": r[4],
        "src": r[5],
        "tag": r[6],
        "blocking": r[7],
    }
    if not r[7]:
        rec["req"] = seq
    return rec


def _consume(rank: int, seq: int, t: float, r: tuple[Any, ...]) -> Record:
    rec = {
        "rank": rank,
        "seq": seq,
        "kind": "consume",
        "t": t,
        "site": r[3],
        "comm": r[4],
        "recv": r[5],
        "src": r[6],
        "tag": r[7],
    }
    if r[8] is not None:
        rec["send"] = [r[6], r[8]]
    return rec


def _coll(rank: int, seq: int, t: float, r: tuple[Any, ...]) -> Record:
    args = r[6]
    rec = {
        "rank": rank,
        "seq": seq,
        "kind": "coll" if args is not None else "coll_exit",
        "t": t,
        "site": r[3],
        "comm": r[4],
        "op": r[5],
    }
    if args:
        rec.update(args)
    return rec


def _plain(rank: int, seq: int, t: float, r: tuple[Any, ...]) -> Record:
    return {"rank": rank, "seq": seq, "kind": r[4], "t": t, "site": r[3], r[5]: r[6]}


def _final(rank: int, seq: int, t: float, r: tuple[Any, ...]) -> Record:
    return {"rank": rank, "seq": seq, "kind": "final", "t": t}
