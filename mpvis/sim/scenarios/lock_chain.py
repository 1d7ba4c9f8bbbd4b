"""Ranks queue for locks held by ranks that themselves wait: a chain that resolves.

Rank 0 holds ``a`` for a while; rank 1 holds ``b`` and asks for ``a``; rank 2
asks for ``b``; rank 3 asks for ``a`` too.  For a moment rank 2 waits for
rank 1, which waits for rank 0: a lock chain, not a cycle, and it drains as
soon as rank 0 releases ``a``.  Every rank ends normally.
"""

from __future__ import annotations

from mpvis.sim.ops import Ctx, Program, coll, compute, lock, state, unlock
from mpvis.sim.scenario import Scenario


def program(ctx: Ctx) -> Program:
    """Staggered lock requests forming the chain 2 -> 1 -> 0."""
    yield coll("barrier")
    yield state(phase="work", x=0)
    if ctx.rank == 0:
        yield lock("a")
        yield state(x=1)
        yield compute(4.0)
        yield unlock("a")
    elif ctx.rank == 1:
        yield compute(1.0)
        yield lock("b")
        yield lock("a")
        yield state(x=2)
        yield ctx.jitter(0.3)
        yield unlock("a")
        yield unlock("b")
    elif ctx.rank == 2:
        yield compute(2.0)
        yield lock("b")
        yield state(x=3)
        yield unlock("b")
    else:
        yield compute(3.0)
        yield lock("a")
        yield state(x=4)
        yield unlock("a")
    yield coll("barrier")
    yield state(phase="done")


SCENARIO = Scenario(
    name="lock_chain",
    summary="a chain of lock waits (2 -> 1 -> 0) that resolves: no deadlock",
    shows=(
        "Lock waits that chain across ranks and then drain: every rank ends "
        "normally, so no deadlock is reported."
    ),
    nprocs=4,
    program=program,
)
