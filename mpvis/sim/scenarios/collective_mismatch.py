"""An iterative solver where one rank leaves the loop early: a collective mismatch.

Every iteration all ranks agree on the residual with an ``allreduce``.  Rank 3
tests convergence on its *local* residual (the bug) and goes on to the final
``barrier`` while the others call the next ``allreduce``: the k-th collectives
of the communicator differ, and every rank hangs.
"""

from __future__ import annotations

from mpvis.sim.ops import Ctx, Program, coll, state
from mpvis.sim.scenario import Scenario

ITERATIONS = 6
BUGGY_RANK = 3


def program(ctx: Ctx) -> Program:
    """Iterate until the global residual is small; rank 3 checks its local one."""
    residual = 1.0
    for it in range(ITERATIONS):
        local = round(residual * ctx.rng.uniform(0.3, 0.6), 4)
        yield state(iter=it, residual=local, phase="solve")
        yield ctx.jitter(1.0)
        if ctx.rank == BUGGY_RANK and it == 2:
            break
        residual = yield coll("allreduce", local, count=1, dtype="double", redop="max")
    yield state(phase="finish")
    yield coll("barrier")
    yield state(phase="done")


SCENARIO = Scenario(
    name="collective_mismatch",
    summary="rank 3 leaves a loop of allreduce early and calls barrier: every rank hangs",
    shows=(
        "A collective deadlock: ranks 0-2 wait in their third allreduce while rank 3 "
        "waits in a barrier."
    ),
    nprocs=4,
    program=program,
    ends_stuck=True,
)
