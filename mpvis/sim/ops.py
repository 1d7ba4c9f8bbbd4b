"""The operations a simulated process yields, and what it gets back.

A simulated process is a generator function ``program(ctx) -> Program``.  It
``yield``\\ s one operation at a time; the simulator (:mod:`mpvis.sim.engine`)
performs it with MPI semantics, records the trace events it causes (spec
``trace-format.md``) and resumes the generator with the operation's result:

============================  =====================================================
operation                     result sent back into the generator
============================  =====================================================
``send``/``ssend``            ``None`` (after the buffer is copied, or matched)
``isend``/``issend``/``irecv``  a :class:`Request` to pass to ``wait``/``waitall``
``recv``                      the consumed :class:`Msg`
``wait``/``waitall``          list, one per request: a :class:`Msg` or ``None``
``coll``                      the collective's value (see :mod:`mpvis.sim.engine`)
``lock``/``unlock``/``state``/``compute``   ``None``
============================  =====================================================

Returning from the generator records ``final``.  ``ANY`` (``-1``) is the
wildcard source or tag of a receive, as in the spec.

The source line of each ``yield`` becomes the record's ``site``, so a
scenario's trace points at the very line of ``mpvis/sim/scenarios/*.py`` that
performed the call.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Final

ANY: Final = -1


@dataclass(frozen=True)
class Msg:
    """A consumed message: its real source and tag, and the data it carried."""

    src: int
    tag: int
    data: Any = None


@dataclass(frozen=True)
class Request:
    """A nonblocking request; ``req`` is the number written in the trace."""

    req: int


@dataclass(frozen=True)
class Send:
    """A point-to-point send (the four MPI send modes are the two flags)."""

    dest: int
    tag: int
    data: Any = None
    blocking: bool = True
    sync: bool = False
    size: int | None = None
    comm: int = 0


@dataclass(frozen=True)
class Recv:
    """A receive; ``src`` and ``tag`` may be :data:`ANY`."""

    src: int = ANY
    tag: int = ANY
    blocking: bool = True
    comm: int = 0


@dataclass(frozen=True)
class Wait:
    """Complete the given requests (MPI_Wait / MPI_Waitall)."""

    requests: tuple[Request, ...]


@dataclass(frozen=True)
class Coll:
    """A collective call on ``comm``; ``value`` is this rank's contribution."""

    op: str
    root: int | None = None
    count: int | None = None
    dtype: str | None = None
    redop: str | None = None
    value: Any = None
    comm: int = 0


@dataclass(frozen=True)
class Lock:
    """Request the exclusive lock ``name`` (blocks until acquired)."""

    name: str


@dataclass(frozen=True)
class Unlock:
    """Release the lock ``name`` (the caller must hold it)."""

    name: str


@dataclass(frozen=True)
class State:
    """Record program variables for predicates (JSON scalars)."""

    vars: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Compute:
    """Local computation lasting ``seconds`` of simulated time (no record)."""

    seconds: float


Op = Send | Recv | Wait | Coll | Lock | Unlock | State | Compute
#: What a simulated process is: a generator of operations (its return value is free).
Program = Generator[Op, Any, Any]


@dataclass(frozen=True)
class Ctx:
    """What a simulated process knows about itself.

    ``rng`` is the process's own seeded generator: scenario code draws its
    random choices (compute times, data) from it, never from ``random``.
    """

    rank: int
    size: int
    rng: random.Random

    def jitter(self, seconds: float, spread: float = 0.5) -> Compute:
        """A computation of ``seconds`` times a random factor in ``1 ± spread``."""
        return Compute(seconds * self.rng.uniform(1.0 - spread, 1.0 + spread))


def send(
    dest: int, tag: int = 0, data: Any = None, *, size: int | None = None, comm: int = 0
) -> Send:
    """MPI_Send: standard mode, completes once the buffer is copied."""
    return Send(dest, tag, data, blocking=True, sync=False, size=size, comm=comm)


def ssend(
    dest: int, tag: int = 0, data: Any = None, *, size: int | None = None, comm: int = 0
) -> Send:
    """MPI_Ssend: completes only when a receive has matched the message."""
    return Send(dest, tag, data, blocking=True, sync=True, size=size, comm=comm)


def isend(
    dest: int, tag: int = 0, data: Any = None, *, size: int | None = None, comm: int = 0
) -> Send:
    """MPI_Isend: returns a request, complete at once (buffered)."""
    return Send(dest, tag, data, blocking=False, sync=False, size=size, comm=comm)


def issend(
    dest: int, tag: int = 0, data: Any = None, *, size: int | None = None, comm: int = 0
) -> Send:
    """MPI_Issend: returns a request, complete once the message is matched."""
    return Send(dest, tag, data, blocking=False, sync=True, size=size, comm=comm)


def recv(src: int = ANY, tag: int = ANY, *, comm: int = 0) -> Recv:
    """MPI_Recv: blocks until a matching message is consumed."""
    return Recv(src, tag, blocking=True, comm=comm)


def irecv(src: int = ANY, tag: int = ANY, *, comm: int = 0) -> Recv:
    """MPI_Irecv: posts the receive and returns a request."""
    return Recv(src, tag, blocking=False, comm=comm)


def wait(*requests: Request) -> Wait:
    """MPI_Wait / MPI_Waitall on the given requests."""
    return Wait(tuple(requests))


def coll(
    op: str,
    value: Any = None,
    *,
    root: int | None = None,
    count: int | None = None,
    dtype: str | None = None,
    redop: str | None = None,
    comm: int = 0,
) -> Coll:
    """A collective (``barrier``, ``bcast``, ``allreduce``, ...)."""
    return Coll(op, root, count, dtype, redop, value, comm)


def lock(name: str) -> Lock:
    """Acquire the exclusive lock ``name``."""
    return Lock(name)


def unlock(name: str) -> Unlock:
    """Release the lock ``name``."""
    return Unlock(name)


def state(**variables: Any) -> State:
    """Record program variables (``x=3, phase="update"``)."""
    return State(dict(variables))


def compute(seconds: float) -> Compute:
    """Spend ``seconds`` of simulated time computing."""
    return Compute(seconds)
