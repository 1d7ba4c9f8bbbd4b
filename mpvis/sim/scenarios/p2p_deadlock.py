"""Two ranks exchange with ``ssend`` first: a point-to-point deadlock.

After a correct warm-up exchange, ranks 0 and 1 both call ``ssend`` to each
other before their ``recv``; a synchronous send completes only when matched,
so each waits for the other forever.  Rank 2 waits for a result from rank 1
and is blocked behind the cycle; rank 3 finishes normally.  Ranks 0, 1 and 2
end without ``final``.
"""

from __future__ import annotations

from mpvis.sim.ops import Ctx, Program, recv, send, ssend, state
from mpvis.sim.scenario import Scenario

TAG_WARMUP, TAG_SWAP, TAG_RESULT = 1, 2, 3


def program(ctx: Ctx) -> Program:
    """Warm-up pairs (0<->1, 2<->3), then the head-to-head ssend."""
    partner = ctx.rank ^ 1
    yield state(phase="warmup", x=ctx.rank)
    if ctx.rank % 2 == 0:
        yield send(partner, TAG_WARMUP, ctx.rank)
        yield recv(partner, TAG_WARMUP)
    else:
        yield recv(partner, TAG_WARMUP)
        yield send(partner, TAG_WARMUP, ctx.rank)
    yield ctx.jitter(2.0)
    if ctx.rank in (0, 1):
        yield state(phase="swap")
        yield ssend(partner, TAG_SWAP, ctx.rank, size=4096)
        swapped = yield recv(partner, TAG_SWAP)
        if ctx.rank == 1:
            yield send(2, TAG_RESULT, swapped.data)
    elif ctx.rank == 2:
        yield state(phase="wait-result")
        yield recv(1, TAG_RESULT)
    yield state(phase="done")


SCENARIO = Scenario(
    name="p2p_deadlock",
    summary="ranks 0 and 1 both ssend to each other first: deadlock (rank 2 blocked behind)",
    shows=(
        "A point-to-point deadlock: ranks 0 and 1 are stuck in ssend, rank 2 in a "
        "recv from rank 1; rank 3 ends normally."
    ),
    nprocs=4,
    program=program,
    ends_stuck=True,
)
