"""The in-rank event recorder: numbers events and builds trace records cheaply.

One :class:`Recorder` lives in each traced rank.  Every wrapper of
:mod:`mpvis.instrument.traced_comm` and :mod:`mpvis.instrument.traced_request`
calls one of its methods, which appends one record (a dict in the trace format
of ``shared/spec/trace-format.md``) to :attr:`Recorder.pending` and returns
the event's ``seq``.  Nothing here does I/O or touches MPI: the flusher thread
of :mod:`mpvis.instrument.transport` drains :attr:`pending` and ships it, so
the recording cost on the program's thread is one dict and one
``deque.append`` per event (MPVisualizer, section 2: the trace library must
disturb the traced program as little as possible).

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
        self.pending: deque[Record] = deque()
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

    def _next(self) -> int:
        seq = self.seq
        self.seq = seq + 1
        return seq

    def send(  # noqa: PLR0917 (hot path: positional)
        self, comm: int, dest: int, tag: int, blocking: bool, sync: bool, site: Site
    ) -> int:
        """A ``send`` record; a nonblocking send's ``req`` is its own ``seq``."""
        seq = self.seq
        self.seq = seq + 1
        rec = {
            "rank": self.rank,
            "seq": seq,
            "kind": "send",
            "t": _monotonic() - self._t0,
            "site": site,
            "comm": comm,
            "dest": dest,
            "tag": tag,
            "blocking": blocking,
            "sync": sync,
        }
        if not blocking:
            rec["req"] = seq
        self.pending.append(rec)
        return seq

    def recv(self, comm: int, src: int, tag: int, blocking: bool, site: Site) -> int:
        """A ``recv`` record (``src``/``tag`` already ``-1`` for wildcards)."""
        seq = self.seq
        self.seq = seq + 1
        rec = {
            "rank": self.rank,
            "seq": seq,
            "kind": "recv",
            "t": _monotonic() - self._t0,
            "site": site,
            "comm": comm,
            "src": src,
            "tag": tag,
            "blocking": blocking,
        }
        if not blocking:
            rec["req"] = seq
        self.pending.append(rec)
        return seq

    def consume(  # noqa: PLR0917 (hot path: positional)
        self, comm: int, recv: int, src: int, tag: int, send_seq: int | None, site: Site
    ) -> int:
        """A ``consume`` of the message sent as ``[src, send_seq]`` (omitted if unknown)."""
        seq = self.seq
        self.seq = seq + 1
        rec = {
            "rank": self.rank,
            "seq": seq,
            "kind": "consume",
            "t": _monotonic() - self._t0,
            "site": site,
            "comm": comm,
            "recv": recv,
            "src": src,
            "tag": tag,
        }
        if send_seq is not None:
            rec["send"] = [src, send_seq]
        self.pending.append(rec)
        return seq

    def wait(self, reqs: list[int], site: Site) -> int:
        """A ``wait`` record for the requests completed by one call."""
        seq = self._next()
        self.pending.append(
            {
                "rank": self.rank,
                "seq": seq,
                "kind": "wait",
                "t": _monotonic() - self._t0,
                "site": site,
                "reqs": reqs,
            }
        )
        return seq

    def coll(self, comm: int, op: str, args: dict[str, Any], site: Site) -> int:
        """A ``coll`` record on entry; ``args`` holds root/count/dtype/redop/group."""
        seq = self._next()
        rec = {
            "rank": self.rank,
            "seq": seq,
            "kind": "coll",
            "t": _monotonic() - self._t0,
            "site": site,
            "comm": comm,
            "op": op,
        }
        rec.update(args)
        self.pending.append(rec)
        return seq

    def coll_exit(self, comm: int, op: str, site: Site) -> int:
        """A ``coll_exit`` record on return from a collective."""
        seq = self._next()
        self.pending.append(
            {
                "rank": self.rank,
                "seq": seq,
                "kind": "coll_exit",
                "t": _monotonic() - self._t0,
                "site": site,
                "comm": comm,
                "op": op,
            }
        )
        return seq

    def state(self, variables: dict[str, Any], site: Site) -> int:
        """A ``state`` record; values that are not JSON scalars are stored as ``repr``."""
        clean = {
            str(k): v if v is None or type(v) in (int, float, str, bool) else repr(v)
            for k, v in variables.items()
        }
        seq = self._next()
        self.pending.append(
            {
                "rank": self.rank,
                "seq": seq,
                "kind": "state",
                "t": _monotonic() - self._t0,
                "site": site,
                "vars": clean,
            }
        )
        return seq

    def final(self) -> int:
        """The ``final`` record of a normal termination."""
        seq = self._next()
        self.pending.append(
            {"rank": self.rank, "seq": seq, "kind": "final", "t": _monotonic() - self._t0}
        )
        return seq

    def drain(self) -> list[Record]:
        """Remove and return every pending record, oldest first."""
        pop = self.pending.popleft
        return [pop() for _ in range(len(self.pending))]
