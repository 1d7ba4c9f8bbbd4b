"""The demo ``mpvis`` opens with: a short run that shows most of what mpvis sees.

Eight ranks, about half a minute at real-time speed, ending normally:

1. ``bcast`` of the configuration.
2. *Tasks*: rank 0 hands out tasks and receives everything with
   ``recv(ANY, ANY)`` (results, and one progress note per worker): adjacent and
   non-adjacent races on a ``recv(-1, -1)``.  Variables ``x``, ``phase``.
3. *Handoff*: rank 0 consumes rank 1's ``ready`` and only then tells rank 2 to
   reply: a false race.
4. *Halo*: the workers, on their own communicator 1, exchange halos with
   ``irecv``/``isend``/``issend`` and ``waitall`` and agree on a norm with
   ``allreduce``; rank 1 reports each norm to rank 0 with ``ssend``.
5. *Checkpoint*: every rank writes under the lock ``checkpoint`` (a queue of
   lock waits), then a ``reduce`` and a ``barrier``.
"""

from __future__ import annotations

from mpvis.sim.ops import (
    ANY,
    Ctx,
    Program,
    coll,
    compute,
    irecv,
    isend,
    issend,
    lock,
    recv,
    send,
    ssend,
    state,
    unlock,
    wait,
)
from mpvis.sim.scenario import Scenario

TAG_WORK, TAG_RESULT, TAG_STOP, TAG_PROGRESS = 1, 2, 3, 4
TAG_READY, TAG_GO, TAG_REPLY = 5, 6, 7
TAG_HALO, TAG_NORM = 8, 9
TASKS = 28
HALO_ITERATIONS = 4
WORKERS_COMM = 1


def tasks_master(ctx: Ctx) -> Program:
    """Hand out tasks; take results and progress notes in arrival order."""
    yield state(phase="tasks", done=0)
    handed = 0
    for w in range(1, ctx.size):
        yield send(w, TAG_WORK, handed, size=256)
        handed += 1
    done = notes = 0
    while done < TASKS or notes < ctx.size - 1:
        msg = yield recv(ANY, ANY)
        if msg.tag == TAG_PROGRESS:
            notes += 1
            yield state(notes=notes)
            continue
        done += 1
        yield state(done=done, x=msg.data)
        if handed < TASKS:
            yield send(msg.src, TAG_WORK, handed, size=256)
            handed += 1
        else:
            yield send(msg.src, TAG_STOP, size=0)
    return done


def tasks_worker(ctx: Ctx) -> Program:
    """Compute tasks until told to stop; note progress after the first one."""
    count = 0
    while True:
        yield state(phase="idle")
        task = yield recv(0, ANY)
        if task.tag == TAG_STOP:
            return count
        yield state(phase="compute", x=task.data)
        yield ctx.jitter(3.0, spread=0.5)
        if count == 0:
            yield send(0, TAG_PROGRESS, ctx.rank, size=16)
        yield send(0, TAG_RESULT, task.data * 3, size=64)
        count += 1


def handoff(ctx: Ctx) -> Program:
    """Rank 1 says ready; only then does rank 0 ask rank 2 to reply."""
    if ctx.rank == 0:
        yield state(phase="handoff")
        ready = yield recv(ANY, ANY)
        yield send(2, TAG_GO, ready.data)
        reply = yield recv(ANY, TAG_REPLY)
        yield state(x=reply.data)
    elif ctx.rank == 1:
        yield ctx.jitter(0.4)
        yield send(0, TAG_READY, 1)
    elif ctx.rank == 2:
        go = yield recv(0, TAG_GO)
        yield ctx.jitter(0.3)
        yield send(0, TAG_REPLY, go.data + 1)


def halo_worker(ctx: Ctx, x: float) -> Program:
    """One worker of the halo exchange on communicator 1."""
    workers = list(range(1, ctx.size))
    i = workers.index(ctx.rank)
    left, right = workers[i - 1], workers[(i + 1) % len(workers)]
    for it in range(HALO_ITERATIONS):
        yield state(phase="halo", iter=it, x=round(x, 3))
        from_left = yield irecv(left, TAG_HALO, comm=WORKERS_COMM)
        from_right = yield irecv(right, TAG_HALO, comm=WORKERS_COMM)
        to_left = yield isend(left, TAG_HALO, x, size=4096, comm=WORKERS_COMM)
        to_right = yield issend(right, TAG_HALO, x, size=4096, comm=WORKERS_COMM)
        yield ctx.jitter(1.2, spread=0.4)
        got = yield wait(from_left, from_right, to_left, to_right)
        x = (got[0].data + 2 * x + got[1].data) / 4.0
        norm = yield coll(
            "allreduce", x * x, count=1, dtype="double", redop="sum", comm=WORKERS_COMM
        )
        if ctx.rank == 1:
            yield ssend(0, TAG_NORM, norm, size=8)


def halo_master(ctx: Ctx) -> Program:
    """Rank 0 collects the norm of every halo iteration from rank 1."""
    for it in range(HALO_ITERATIONS):
        yield state(phase="halo", iter=it)
        yield compute(0.5)
        norm = yield recv(1, TAG_NORM)
        yield state(x=round(norm.data, 3))


def checkpoint(ctx: Ctx) -> Program:
    """Every rank writes its part of the checkpoint under one lock."""
    yield ctx.jitter(0.3)
    yield lock("checkpoint")
    yield state(phase="checkpoint")
    yield ctx.jitter(0.4, spread=0.2)
    yield unlock("checkpoint")


def program(ctx: Ctx) -> Program:
    """The five phases, in order."""
    yield state(phase="init")
    yield coll("bcast", TASKS, root=0, count=1, dtype="int")
    if ctx.rank == 0:
        tasks = yield from tasks_master(ctx)
    else:
        tasks = yield from tasks_worker(ctx)
    yield coll("bcast", tasks, root=0, count=1, dtype="int")
    yield from handoff(ctx)
    if ctx.rank == 0:
        yield from halo_master(ctx)
    else:
        yield from halo_worker(ctx, float(ctx.rank))
    yield from checkpoint(ctx)
    total = yield coll(
        "reduce", tasks if ctx.rank else 0, root=0, count=1, dtype="int", redop="sum"
    )
    yield coll("barrier")
    yield state(phase="done", x=total if ctx.rank == 0 else tasks)


SCENARIO = Scenario(
    name="showcase",
    summary="the default: races on recv(-1,-1), a false race, halos, locks (8 ranks, ~30 s)",
    shows=(
        "Legitimate races, adjacent and non-adjacent, on rank 0's recv(ANY, ANY); a false "
        "race in the handoff; nonblocking and synchronous sends; a second communicator; "
        "lock waits; state variables x, phase, iter, done."
    ),
    nprocs=8,
    program=program,
    comms={WORKERS_COMM: (1, 2, 3, 4, 5, 6, 7)},
)
