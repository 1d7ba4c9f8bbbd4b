"""In-rank collective check: Roy et al.'s ring algorithm (Sec. III, Algorithm A1) over MPI.

The ranks of a communicator form a ring; before each collective, every rank
sends the *signature* of the collective it is about to call (its number ``n``
on this communicator, the operation, and the single-valued arguments ``root``,
``count``, ``dtype``, ``redop``) to its right neighbour and compares it with
the signature its left neighbour sent for its own n-th collective.  Each rank
thus sends one message and receives one per collective: O(1) cost whatever the
number of ranks (the paper's Theorem 3.6).  If every neighbour pair agrees, all
ranks agree (Theorem 3.4); if any two ranks differ, some neighbour pair differs
and one of its ranks reports (Theorem 3.5), before entering the collective
that would hang or silently compute garbage.  The paper's shared variables
``s_j``/``ds_j`` become a message in flight: the neighbour's signature waits in
MPI's queue until this rank reaches its n-th collective, and MPI's
non-overtaking order pairs the n-th signatures with each other (Lemma 3.3).

:meth:`RingChecker.finalize` is the paper's ``check_final``: it sends an
end-of-execution signature around the ring, so a rank waiting in a collective
whose neighbour has finished (case 3) is reported instead of hanging, and a
finishing rank whose neighbour is still in a collective reports too.

The check runs on a duplicate of the communicator, so user messages and tags
are untouched.  Signatures travel as JSON bytes of at most 1 KiB (never pickle),
exchanged with one ``Sendrecv`` per collective (eager in every MPI).  On a
mismatch the checker writes a message naming the ranks, collectives and call
sites to stderr, flushes it, calls the ``on_error`` hook (the trace library
flushes its trace there), then calls ``Abort`` on the communicator (or raises
:class:`CollectiveMismatchError` when built with ``abort=False``).

This module imports only mpi4py and the standard library.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from mpvis.errors import MpvisError

__all__ = ["ABORT_GRACE", "END", "CollectiveMismatchError", "RingChecker"]

#: Seconds between writing the mismatch to stderr and aborting the job.
ABORT_GRACE = 0.5

#: The signature operation a rank sends when it finishes (``end_of_execution``).
END = "end_of_execution"
_TAG = 7
_MAX = 1024  # bytes of one signature message (eager in every MPI)
_ARGS = ("root", "count", "dtype", "redop")


class CollectiveMismatchError(MpvisError, RuntimeError):
    """Ranks of one communicator disagree on their n-th collective."""


def _describe(sig: dict[str, Any]) -> str:
    if sig["op"] == END:
        return f"rank {sig['rank']} has finished (MPI_Finalize) after {sig['n']} collective(s)"
    args = ", ".join(f"{a}={sig[a]}" for a in _ARGS if sig.get(a) is not None)
    site = f" at {sig['site']}" if sig.get("site") else ""
    return f"rank {sig['rank']} calls {sig['op']}({args}){site} as collective #{sig['n'] + 1}"


def _differs(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    if a["op"] != b["op"]:
        return ["operation"]
    if a["op"] == END:
        return []
    return [f for f in _ARGS if a.get(f) is not None and b.get(f) is not None and a[f] != b[f]]


class RingChecker:
    """Check every collective on ``comm`` against the left neighbour's, O(1) per call.

    Construct it on every rank of ``comm`` at the same point (it duplicates the
    communicator, a collective call).  Call :meth:`check` before each
    collective on ``comm`` and :meth:`finalize` before MPI_Finalize (or before
    freeing ``comm``).
    """

    def __init__(
        self,
        comm: MPI.Comm,
        *,
        on_error: Callable[[str], None] | None = None,
        abort: bool = True,
    ) -> None:
        self._user = comm
        self._ring = comm.Dup()
        self._ring.Set_name(f"mpvis-ringcheck({comm.Get_name()})")
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._right = (self.rank + 1) % self.size
        self._left = (self.rank - 1) % self.size
        self._n = 0
        self._buf = bytearray(_MAX)
        self._on_error = on_error
        self._abort = abort
        self._done = False

    @property
    def collectives(self) -> int:
        """How many collectives this rank has checked."""
        return self._n

    def check(
        self,
        op: str,
        *,
        root: int | None = None,
        count: int | None = None,
        dtype: object = None,
        redop: object = None,
        site: str | None = None,
    ) -> None:
        """Compare this rank's next collective with its left neighbour's; report a mismatch.

        ``dtype`` and ``redop`` may be names or MPI handles (compared by name).
        Returns once the left neighbour has reached its collective of the same
        number with the same signature.
        """
        if self.size == 1:
            self._n += 1
            return
        sig = {
            "n": self._n,
            "rank": self.rank,
            "op": op,
            "root": root,
            "count": count,
            "dtype": _name(dtype),
            "redop": _name(redop),
            "site": site,
        }
        self._n += 1
        self._exchange(sig)

    def finalize(self) -> None:
        """``check_final``: tell the right neighbour this rank ends; check the left one."""
        if self._done:
            return
        self._done = True
        if self.size > 1:
            self._exchange({"n": self._n, "rank": self.rank, "op": END})
        self._ring.Free()

    def _exchange(self, sig: dict[str, Any]) -> None:
        payload = json.dumps(sig, separators=(",", ":")).encode()
        if len(payload) > _MAX:  # long names: keep the comparison fields, shorten the rest
            sig = {**sig, "site": str(sig.get("site"))[:80]}
            sig = {k: (v[:100] if isinstance(v, str) else v) for k, v in sig.items()}
            payload = json.dumps(sig, separators=(",", ":")).encode()[:_MAX]
        status = MPI.Status()
        self._ring.Sendrecv(
            [payload, MPI.BYTE],
            dest=self._right,
            sendtag=_TAG,
            recvbuf=[self._buf, MPI.BYTE],
            source=self._left,
            recvtag=_TAG,
            status=status,
        )
        theirs = json.loads(self._buf[: status.Get_count(MPI.BYTE)].decode())
        fields = _differs(theirs, sig)
        if fields:
            self._report(sig, theirs, fields)

    def _report(self, mine: dict[str, Any], theirs: dict[str, Any], fields: list[str]) -> None:
        name = self._user.Get_name() or "communicator"
        msg = (
            f"mpvis ringcheck: collective mismatch on {name} (size {self.size}), "
            f"different {'/'.join(fields)}: {_describe(theirs)}, but {_describe(mine)}. "
            "All ranks must call the same collectives in the same order with the same "
            "root/count/datatype/op; aborting before the run hangs.\n"
        )
        sys.stderr.write(msg)
        sys.stderr.flush()
        if self._on_error is not None:
            self._on_error(msg)
        if not self._abort:
            raise CollectiveMismatchError(msg.strip())
        # MPI_Abort can take the process manager down before it has forwarded
        # this rank's stderr: give it a moment, so the user sees why.
        time.sleep(ABORT_GRACE)
        self._user.Abort(1)


def _name(v: object) -> object:
    """A JSON scalar for an argument: MPI handles by their name."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    get_name = getattr(v, "Get_name", None)
    if callable(get_name):
        try:
            return str(get_name())
        except MPI.Exception:
            return repr(v)
    return str(v)
