"""A master hands out tasks; workers return results to ``recv(ANY, TAG_RESULT)``.

The classic pattern of the MPVisualizer paper's examples: the master's
receives take whichever result arrives first, so consecutive receives race
whenever two workers were computing at the same time (benign races: the
program is correct in every order).  Workers record ``x`` (their task) and
``phase``; the master records ``done`` and ``x`` (the last result).
"""

from __future__ import annotations

from mpvis.sim.ops import ANY, Ctx, Program, coll, recv, send, state
from mpvis.sim.scenario import Scenario

TAG_WORK, TAG_RESULT, TAG_STOP = 1, 2, 3
TASKS = 40


def master(ctx: Ctx) -> Program:
    """Rank 0: seed every worker, then one new task per result, then stop."""
    yield coll("bcast", TASKS, root=0, count=1, dtype="int")
    yield state(phase="distribute", done=0)
    next_task = 0
    for worker in range(1, ctx.size):
        yield send(worker, TAG_WORK, next_task, size=64)
        next_task += 1
    for done in range(1, TASKS + 1):
        result = yield recv(ANY, TAG_RESULT)
        yield state(done=done, x=result.data)
        if next_task < TASKS:
            yield send(result.src, TAG_WORK, next_task, size=64)
            next_task += 1
        else:
            yield send(result.src, TAG_STOP, size=0)
    yield state(phase="summarize")
    total = yield coll("reduce", 0, root=0, count=1, dtype="int", redop="sum")
    yield state(phase="done", x=total)


def worker(ctx: Ctx) -> Program:
    """Ranks 1..: compute each task received until told to stop."""
    yield coll("bcast", root=0, count=1, dtype="int")
    count = 0
    while True:
        yield state(phase="idle")
        task = yield recv(0, ANY)
        if task.tag == TAG_STOP:
            break
        yield state(phase="compute", x=task.data)
        yield ctx.jitter(1.5, spread=0.6)
        yield send(0, TAG_RESULT, task.data * task.data, size=8)
        count += 1
    yield coll("reduce", count, root=0, count=1, dtype="int", redop="sum")
    yield state(phase="done", x=count)


def program(ctx: Ctx) -> Program:
    """SPMD entry point."""
    return master(ctx) if ctx.rank == 0 else worker(ctx)


SCENARIO = Scenario(
    name="master_worker",
    summary="8 ranks, 40 tasks: a master receives results with a wildcard (benign races)",
    shows=(
        "Many legitimate but benign races on the master's recv(ANY, TAG_RESULT), "
        "state variables x/phase/done for predicates, a bcast and a reduce."
    ),
    nprocs=8,
    program=program,
)
