"""Two ranks take two locks in opposite orders: a lock cycle.

Rank 0 takes ``table`` then ``log``; rank 1 takes ``log`` then ``table``.
Both get their first lock, then each waits for the lock the other holds.
Rank 2 asks for ``table`` and waits behind the cycle (a chain into it);
rank 3 only uses a lock nobody else needs and finishes.
"""

from __future__ import annotations

from mpvis.sim.ops import Ctx, Program, coll, lock, state, unlock
from mpvis.sim.scenario import Scenario


def locked_update(first: str, second: str, ctx: Ctx) -> Program:
    """Take ``first``, work, take ``second``, work, release both."""
    yield lock(first)
    yield state(holding=first)
    yield ctx.jitter(2.0, spread=0.2)
    yield lock(second)
    yield state(holding=f"{first}+{second}")
    yield ctx.jitter(0.5)
    yield unlock(second)
    yield unlock(first)


def program(ctx: Ctx) -> Program:
    """A barrier, then each rank's critical sections."""
    yield state(phase="start")
    yield coll("barrier")
    if ctx.rank == 0:
        yield from locked_update("table", "log", ctx)
    elif ctx.rank == 1:
        yield from locked_update("log", "table", ctx)
    elif ctx.rank == 2:
        yield ctx.jitter(1.0, spread=0.2)
        yield lock("table")
        yield unlock("table")
    else:
        yield lock("stats")
        yield ctx.jitter(0.3)
        yield unlock("stats")
    yield state(phase="done")


SCENARIO = Scenario(
    name="lock_cycle",
    summary="ranks 0 and 1 take two locks in opposite orders: lock deadlock",
    shows=(
        "A lock deadlock: rank 0 holds 'table' and waits for 'log', rank 1 holds 'log' "
        "and waits for 'table'; rank 2 waits for 'table' behind them."
    ),
    nprocs=4,
    program=program,
    ends_stuck=True,
)
