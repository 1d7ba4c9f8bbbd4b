"""A token travels around a ring of ranks three times.

Deterministic point-to-point communication (named sources and tags): no
race, no deadlock.  Each rank records the ``token`` it passes on; an
``allreduce`` agrees on the final value.
"""

from __future__ import annotations

from mpvis.sim.ops import Ctx, Program, coll, recv, send, state
from mpvis.sim.scenario import Scenario

TAG_TOKEN = 0
ROUNDS = 3


def program(ctx: Ctx) -> Program:
    """Rank 0 starts each round; every rank adds one and passes it right."""
    right = (ctx.rank + 1) % ctx.size
    left = (ctx.rank - 1) % ctx.size
    token = 0
    for rnd in range(ROUNDS):
        yield state(round=rnd, token=token)
        if ctx.rank == 0:
            yield ctx.jitter(0.2)
            yield send(right, TAG_TOKEN, token + 1, size=4)
            msg = yield recv(left, TAG_TOKEN)
        else:
            msg = yield recv(left, TAG_TOKEN)
            yield ctx.jitter(0.2)
            yield send(right, TAG_TOKEN, msg.data + 1, size=4)
        token = msg.data
        yield state(token=token)
    final = yield coll("allreduce", token, count=1, dtype="int", redop="max")
    yield state(round=ROUNDS, token=final)


SCENARIO = Scenario(
    name="ring",
    summary="a token passed around a ring of 6 ranks, three times: no race",
    shows="A clean staircase of messages; no race and no deadlock. The variable token grows.",
    nprocs=6,
    program=program,
)
