"""``Waitany``: which request completes is a choice to record and replay too.

Netzer and Miller replay message deliveries; their footnote 1 notes that every
other nondeterministic interaction must be reproduced as well.  With
nonblocking receives one such interaction remains even when every message goes
to the same receive: ``MPI_Waitany`` returns *a* completed request, so the order
in which a program sees its receives complete (and the order of their
``consume`` records) may differ between runs.  Record mode logs the index
returned by each ``Waitany``/``waitany`` that had two or more active requests,
keyed by the event number the call starts at; replay waits on that request
alone, which records the same events (the trace library's ``Wait``/``wait``).

``Testany``, ``Waitsome`` and ``Testsome`` are not handled: a replay of a
program that relies on them is checked, and a difference is reported, but not
forced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mpi4py import MPI

__all__ = ["force_waitany", "log_waitany"]


def _active(requests: Sequence[MPI.Request]) -> int:
    return sum(1 for r in requests if r)


def log_waitany(
    request_cls: Any, next_seq: Callable[[], int], log: Callable[[int, int], None]
) -> None:
    """Wrap ``request_cls.Waitany``/``waitany`` to call ``log(start seq, index)``."""
    upper, lower = request_cls.Waitany, request_cls.waitany

    def Waitany(cls: Any, requests: Sequence[MPI.Request], status: MPI.Status | None = None) -> int:
        at, choice = next_seq(), _active(requests) > 1
        index: int = upper(requests, status)
        if choice and index != MPI.UNDEFINED:
            log(at, index)
        return index

    def waitany(
        cls: Any, requests: Sequence[MPI.Request], status: MPI.Status | None = None
    ) -> tuple[int, Any]:
        at, choice = next_seq(), _active(requests) > 1
        index, obj = lower(requests, status)
        if choice and index != MPI.UNDEFINED:
            log(at, index)
        return index, obj

    request_cls.Waitany = classmethod(Waitany)
    request_cls.waitany = classmethod(waitany)


def force_waitany(
    request_cls: Any, next_seq: Callable[[], int], recorded: Callable[[int], int | None]
) -> None:
    """Wrap ``request_cls.Waitany``/``waitany`` to wait on the index ``recorded(start seq)``."""
    upper, lower = request_cls.Waitany, request_cls.waitany

    def Waitany(cls: Any, requests: Sequence[MPI.Request], status: MPI.Status | None = None) -> int:
        index = recorded(next_seq())
        if index is None or not 0 <= index < len(requests) or not requests[index]:
            found: int = upper(requests, status)
            return found
        requests[index].Wait(status)
        return index

    def waitany(
        cls: Any, requests: Sequence[MPI.Request], status: MPI.Status | None = None
    ) -> tuple[int, Any]:
        index = recorded(next_seq())
        if index is None or not 0 <= index < len(requests) or not requests[index]:
            found_obj: tuple[int, Any] = lower(requests, status)
            return found_obj
        return index, requests[index].wait(status)

    request_cls.Waitany = classmethod(Waitany)
    request_cls.waitany = classmethod(waitany)
