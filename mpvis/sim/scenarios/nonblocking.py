"""Halo exchange with nonblocking and synchronous operations.

Each iteration every rank posts ``irecv`` from both neighbours, sends with
``isend`` to the left and ``issend`` to the right, computes, and completes
all four requests with one ``waitall``.  Then a safe ``ssend`` pipeline (even
ranks send first, odd ranks receive first) and a wildcard ``irecv`` at rank 0
collecting ``done`` notices (those receives race).
"""

from __future__ import annotations

from mpvis.sim.ops import (
    ANY,
    Ctx,
    Program,
    coll,
    irecv,
    isend,
    issend,
    recv,
    send,
    ssend,
    state,
    wait,
)
from mpvis.sim.scenario import Scenario

TAG_HALO, TAG_PIPE, TAG_DONE = 10, 20, 30
ITERATIONS = 4


def program(ctx: Ctx) -> Program:
    """Halo iterations, an ssend pipeline, then done notices to rank 0."""
    left = (ctx.rank - 1) % ctx.size
    right = (ctx.rank + 1) % ctx.size
    x = float(ctx.rank)
    for it in range(ITERATIONS):
        yield state(iter=it, x=round(x, 3), phase="exchange")
        from_left = yield irecv(left, TAG_HALO)
        from_right = yield irecv(right, TAG_HALO)
        to_left = yield isend(left, TAG_HALO, x, size=800)
        to_right = yield issend(right, TAG_HALO, x, size=800)
        yield ctx.jitter(1.0)
        got = yield wait(from_left, from_right, to_left, to_right)
        x = (got[0].data + x + got[1].data) / 3.0
    yield state(iter=ITERATIONS, x=round(x, 3), phase="pipeline")
    if ctx.rank % 2 == 0:
        if ctx.rank + 1 < ctx.size:
            yield ssend(ctx.rank + 1, TAG_PIPE, x)
        if ctx.rank > 0:
            yield recv(ctx.rank - 1, TAG_PIPE)
    else:
        yield recv(ctx.rank - 1, TAG_PIPE)
        if ctx.rank + 1 < ctx.size:
            yield ssend(ctx.rank + 1, TAG_PIPE, x)
    if ctx.rank == 0:
        notices = []
        for _ in range(1, ctx.size):
            notices.append((yield irecv(ANY, TAG_DONE)))
        yield wait(*notices)
    else:
        yield ctx.jitter(0.3)
        yield send(0, TAG_DONE, ctx.rank)
    yield coll("barrier")
    yield state(phase="done")


SCENARIO = Scenario(
    name="nonblocking",
    summary="halo exchange with irecv/isend/issend/waitall and an ssend pipeline",
    shows=(
        "Nonblocking requests completed by waitall (consumes appear at the wait), "
        "synchronous sends that wait for their receiver, and racing wildcard irecvs."
    ),
    nprocs=4,
    program=program,
)
