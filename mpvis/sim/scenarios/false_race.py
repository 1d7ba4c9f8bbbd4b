"""Wildcard receives that look racy but are not: false and spurious races.

Rank 0 receives everything with ``recv(ANY, ANY)``.  Rank 1 asks for work;
only after consuming the request does rank 0 tell rank 2 to answer, so
rank 2's message is sent after the first consumption: the two receives form
a *false* race (the classifier's ``false`` verdict).  Rank 1 asks again only
when rank 0 says so, so no pair of rank 0's receives can race.  At the end
rank 1 sends two messages in a row: the same origin cannot overtake itself, a *spurious* race.
"""

from __future__ import annotations

from mpvis.sim.ops import ANY, Ctx, Program, coll, recv, send, state
from mpvis.sim.scenario import Scenario

TAG_ASK, TAG_GO, TAG_ANSWER, TAG_MORE, TAG_NEXT = 1, 2, 3, 4, 5
ROUNDS = 3


def program(ctx: Ctx) -> Program:
    """Three rounds of ask / go / answer, then two back-to-back messages."""
    for rnd in range(ROUNDS):
        yield state(round=rnd)
        if ctx.rank == 0:
            ask = yield recv(ANY, ANY)
            yield state(x=ask.data, phase="dispatch")
            yield send(2, TAG_GO, ask.data)
            answer = yield recv(ANY, ANY)
            yield state(x=answer.data, phase="answered")
            yield send(1, TAG_NEXT, rnd + 1)
        elif ctx.rank == 1:
            yield ctx.jitter(1.0)
            yield send(0, TAG_ASK, rnd)
            yield recv(0, TAG_NEXT)
        else:
            go = yield recv(0, TAG_GO)
            yield ctx.jitter(0.8)
            yield send(0, TAG_ANSWER, go.data + 100)
    if ctx.rank == 0:
        yield recv(ANY, ANY)
        yield recv(ANY, ANY)
    elif ctx.rank == 1:
        yield send(0, TAG_MORE, 1)
        yield send(0, TAG_MORE, 2)
    yield coll("barrier")


SCENARIO = Scenario(
    name="false_race",
    summary="wildcard receives whose order is forced: false and spurious races",
    shows=(
        "Rank 0's receives look racy but the second message is always sent after "
        "the first is consumed (verdict 'false'), and the last two come from the "
        "same sender (verdict 'spurious'). None is shown as a race by default."
    ),
    nprocs=3,
    program=program,
)
