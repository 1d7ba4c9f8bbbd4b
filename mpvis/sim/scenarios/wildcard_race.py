"""Three workers report to rank 0, which receives with ``recv(ANY, ANY)``.

Situation 16 of the MPVisualizer table (wildcard source and tag on both
receives), three times over: whichever report arrives first is consumed first,
and with another ``--seed`` another worker wins.  Rank 0 records the winner as
the variable ``winner`` and broadcasts it.
"""

from __future__ import annotations

from mpvis.sim.ops import ANY, Ctx, Program, coll, recv, send, state
from mpvis.sim.scenario import Scenario

TAG_REPORT = 7


def program(ctx: Ctx) -> Program:
    """Workers compute about as long as each other, then report to rank 0."""
    if ctx.rank == 0:
        yield state(phase="collect", winner=-1)
        order = []
        for _ in range(ctx.size - 1):
            msg = yield recv(ANY, ANY)
            order.append(msg.src)
            yield state(got=msg.src, winner=order[0])
        winner = yield coll("bcast", order[0], root=0, count=1, dtype="int")
    else:
        yield state(phase="compute", x=ctx.rank * 10)
        yield ctx.jitter(3.0, spread=0.3)
        yield send(0, TAG_REPORT, ctx.rank * 10, size=8)
        winner = yield coll("bcast", root=0, count=1, dtype="int")
    yield state(phase="done", winner=winner)


SCENARIO = Scenario(
    name="wildcard_race",
    summary="three workers race to reach one recv(ANY, ANY): legitimate races",
    shows=(
        "Rank 0's three wildcard receives race: every report could have been "
        "consumed first. Run with another --seed and another worker wins."
    ),
    nprocs=4,
    program=program,
)
