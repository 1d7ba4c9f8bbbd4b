"""MPI semantics of the simulator, against hand-computed expectations."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mpvis.protocol.record_types import Record as Rec
from mpvis.sim.engine import SimulationError, Simulator, simulate_program
from mpvis.sim.ops import (
    ANY,
    Ctx,
    Program,
    coll,
    compute,
    irecv,
    issend,
    lock,
    recv,
    send,
    ssend,
    state,
    unlock,
    wait,
)


def by_rank(records: list[Rec], rank: int) -> list[Rec]:
    return [r for r in records if r["rank"] == rank]


def kinds(records: list[Rec], rank: int) -> list[str]:
    return [r["kind"] for r in by_rank(records, rank)]


def consumed(records: list[Rec], rank: int) -> list[tuple[int, int]]:
    return [tuple(r["send"]) for r in by_rank(records, rank) if r["kind"] == "consume"]


def data_of(records: list[Rec], rank: int) -> list[Any]:
    return [r["vars"]["v"] for r in by_rank(records, rank) if r["kind"] == "state"]


@pytest.mark.parametrize("seed", range(5))
def test_non_overtaking_on_one_channel(seed: int) -> None:
    """Five sends on one channel with random latencies arrive in send order."""

    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 0:
            for i in range(5):
                yield send(1, 3, i)
        else:
            for i in range(5):
                m = yield (recv(0, 3) if i % 2 else recv(ANY, ANY))
                yield state(v=m.data)

    recs, stuck = simulate_program(prog, 2, seed, latency=(0.0, 1.0), overhead=0.0)
    assert stuck == {}
    assert data_of(recs, 1) == [0, 1, 2, 3, 4]
    assert consumed(recs, 1) == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]


def test_wildcard_takes_the_earliest_arrived_eligible_message() -> None:
    """Rank 0 sends at t=0, rank 2 at t=1; rank 1 receives long after both arrived."""

    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 0:
            yield send(1, 1, "a")
        elif ctx.rank == 2:
            yield compute(1.0)
            yield send(1, 2, "b")
            yield send(1, 1, "c")
        else:
            yield compute(10.0)
            m1 = yield recv(ANY, 2)  # skips the earlier tag-1 message
            m2 = yield recv(ANY, ANY)
            m3 = yield recv(2, ANY)
            yield state(v=[m1.data, m2.data, m3.data].__str__())

    recs, _ = simulate_program(prog, 3, 0, latency=(0.01, 0.05))
    assert consumed(recs, 1) == [(2, 0), (0, 0), (2, 1)]
    assert data_of(recs, 1) == ["['b', 'a', 'c']"]


def test_arriving_message_goes_to_the_first_posted_matching_receive() -> None:
    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 0:
            a = yield irecv(ANY, 5)
            b = yield irecv(ANY, ANY)
            got = yield wait(b, a)
            yield state(v=f"{got[0].tag},{got[1].tag}")
        else:
            yield compute(1.0)
            yield send(0, 5)
            yield compute(1.0)
            yield send(0, 6)

    recs, _ = simulate_program(prog, 2, 0)
    # The tag-5 message arrives first and goes to the first posted receive (a);
    # the consumes come in the order of the wait's requests (b, then a).
    r0 = by_rank(recs, 0)
    assert [r["kind"] for r in r0[2:5]] == ["consume", "consume", "wait"]
    assert [(r["recv"], r["tag"]) for r in r0[2:4]] == [(1, 6), (0, 5)]
    assert r0[4]["reqs"] == [1, 0]
    assert r0[2]["t"] == r0[3]["t"] == r0[4]["t"]
    assert data_of(recs, 0) == ["6,5"]


def test_standard_send_completes_at_once_and_ssend_waits_for_the_match() -> None:
    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 0:
            yield send(1, 1)
            yield state(v="after send")
            yield ssend(1, 2)
            yield state(v="after ssend")
        else:
            yield compute(5.0)
            yield recv(0, 1)
            yield compute(5.0)
            yield recv(0, 2)

    recs, stuck = simulate_program(prog, 2, 0)
    assert stuck == {}
    r0 = by_rank(recs, 0)
    consume_2 = [r for r in by_rank(recs, 1) if r["kind"] == "consume"][1]
    assert r0[1]["t"] < 1.0  # the standard send did not wait for the receiver
    assert r0[3]["t"] >= consume_2["t"] > 10.0  # the ssend did


def test_issend_request_completes_only_when_matched() -> None:
    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 0:
            r = yield issend(1, 1)
            yield state(v="posted")
            yield wait(r)
        else:
            yield compute(3.0)
            yield recv(0, 1)

    recs, _ = simulate_program(prog, 2, 0)
    r0 = by_rank(recs, 0)
    assert [r["kind"] for r in r0] == ["send", "state", "wait", "final"]
    assert r0[0]["blocking"] is False and r0[0]["sync"] is True and r0[0]["req"] == 0
    assert r0[1]["t"] < 1.0
    assert r0[2]["t"] > 3.0  # the receiver matched at 3.0


def test_head_to_head_ssend_deadlocks_without_final() -> None:
    def prog(ctx: Ctx) -> Program:
        yield ssend(1 - ctx.rank, 0)
        yield recv(1 - ctx.rank, 0)

    recs, stuck = simulate_program(prog, 2, 0)
    assert kinds(recs, 0) == ["send"] and kinds(recs, 1) == ["send"]
    assert set(stuck) == {0, 1} and "ssend" in stuck[0]


def test_receive_without_sender_leaves_the_rank_blocked() -> None:
    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 1:
            yield recv(0, 9)

    recs, stuck = simulate_program(prog, 2, 0)
    assert kinds(recs, 0) == ["final"]
    assert kinds(recs, 1) == ["recv"]
    assert list(stuck) == [1] and "recv" in stuck[1]


def test_collective_mismatch_blocks_every_member() -> None:
    def prog(ctx: Ctx) -> Program:
        yield coll("allreduce", 1, count=1)
        yield (coll("barrier") if ctx.rank == 2 else coll("allreduce", 1, count=1))

    recs, stuck = simulate_program(prog, 3, 0)
    assert set(stuck) == {0, 1, 2}
    for r in range(3):
        assert kinds(recs, r) == ["coll", "coll_exit", "coll"]


def test_argument_mismatch_blocks_too() -> None:
    def prog(ctx: Ctx) -> Program:
        yield coll("bcast", root=0, count=1 if ctx.rank else 2)

    recs, stuck = simulate_program(prog, 3, 0)
    assert set(stuck) >= {1, 2}
    assert all(r["kind"] == "coll" for r in recs if r["rank"] in (1, 2))


def test_collective_data_dependencies_and_values() -> None:
    """bcast waits for the root only; reduce lets non-roots go; barrier waits for all."""

    def prog(ctx: Ctx) -> Program:
        yield compute(float(ctx.rank))  # rank r enters at t = r
        v = yield coll("bcast", "cfg" if ctx.rank == 1 else None, root=1)
        yield state(v=v)
        s = yield coll("reduce", ctx.rank + 1, root=0, redop="sum")
        yield state(v=s)
        a = yield coll("allreduce", ctx.rank, redop="max")
        yield state(v=a)
        g = yield coll("scan", ctx.rank + 1, redop="sum")
        yield state(v=g)

    recs, stuck = simulate_program(prog, 3, 0, latency=(0.01, 0.02), overhead=0.0)
    assert stuck == {}
    assert [data_of(recs, r) for r in range(3)] == [
        ["cfg", 6, 2, 1],
        ["cfg", None, 2, 3],
        ["cfg", None, 2, 6],
    ]
    exits = {(r["rank"], r["op"]): r["t"] for r in recs if r["kind"] == "coll_exit"}
    # Rank 0 waited for the root (rank 1 enters at 1.0), not for rank 2 (at 2.0).
    assert 1.0 < exits[(0, "bcast")] < 2.0
    assert exits[(1, "reduce")] < exits[(0, "reduce")]  # the root waited for everyone
    assert min(t for (_, op), t in exits.items() if op == "allreduce") > 2.0


def test_locks_are_exclusive_and_granted_in_request_order() -> None:
    def prog(ctx: Ctx) -> Program:
        yield compute(0.1 * ctx.rank)
        yield lock("L")
        yield compute(1.0)
        yield unlock("L")

    recs, stuck = simulate_program(prog, 4, 0)
    assert stuck == {}
    held = sorted((r["t"], r["rank"], r["kind"]) for r in recs if r["kind"] in ("locked", "unlock"))
    owners = [rank for _, rank, kind in held if kind == "locked"]
    assert owners == [0, 1, 2, 3]
    depth = 0
    for _, _, kind in held:
        depth += 1 if kind == "locked" else -1
        assert depth in (0, 1)


def test_lock_cycle_blocks_both_ranks() -> None:
    def prog(ctx: Ctx) -> Program:
        a, b = ("A", "B") if ctx.rank == 0 else ("B", "A")
        yield lock(a)
        yield compute(1.0)
        yield lock(b)

    recs, stuck = simulate_program(prog, 2, 0)
    assert set(stuck) == {0, 1}
    assert kinds(recs, 0) == ["lock", "locked", "lock"]


def test_unlocking_a_lock_not_held_is_an_error() -> None:
    def prog(ctx: Ctx) -> Program:
        yield unlock("L")

    with pytest.raises(SimulationError, match="does not hold"):
        simulate_program(prog, 1, 0)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (lambda: send(ANY, 0), "real destination"),
        (lambda: send(5, 0), "not in communicator"),
        (lambda: recv(0, -3), ">= -1"),
        (lambda: coll("bcast"), "needs a root"),
        (lambda: coll("barrier", comm=4), "not in communicator"),
    ],
)
def test_misuse_is_an_error(bad: Any, message: str) -> None:
    def prog(ctx: Ctx) -> Program:
        yield bad()

    with pytest.raises(SimulationError, match=message):
        simulate_program(prog, 2, 0)


def test_waiting_twice_for_a_request_is_an_error() -> None:
    def prog(ctx: Ctx) -> Program:
        r = yield irecv(0, 0)
        yield wait(r, r)

    with pytest.raises(SimulationError, match="waited twice"):
        simulate_program(prog, 1, 0)


def test_a_runaway_program_is_stopped() -> None:
    def prog(ctx: Ctx) -> Program:
        while True:
            yield state(v=1)

    with pytest.raises(SimulationError, match="runaway"):
        Simulator(prog, 1, max_records=100).run()


def test_yielding_something_else_is_an_error() -> None:
    def prog(ctx: Ctx) -> Program:
        yield "send"  # type: ignore[misc]

    with pytest.raises(SimulationError, match="not an operation"):
        simulate_program(prog, 1, 0)


def test_site_is_the_line_of_the_yield_even_through_yield_from() -> None:
    def helper() -> Program:
        yield send(0, 4)  # the helper's send

    def prog(ctx: Ctx) -> Program:
        if ctx.rank == 1:
            yield from helper()
        else:
            yield recv(1, 4)  # the receive

    recs, _ = simulate_program(prog, 2, 0)
    lines = Path(__file__).read_text().splitlines()
    for rec in recs:
        if rec["kind"] == "final":
            assert "site" not in rec
            continue
        m = re.fullmatch(r"demo/test_engine\.py:(\d+)", rec["site"])
        assert m is not None
        text = lines[int(m.group(1)) - 1]
        expected = "# the helper's send" if rec["rank"] == 1 else "# the receive"
        assert expected in text


def test_same_seed_same_trace_and_times_are_monotone() -> None:
    def prog(ctx: Ctx) -> Program:
        for _ in range(5):
            yield ctx.jitter(0.3)
            if ctx.rank:
                yield send(0, 1)
            else:
                for _ in range(ctx.size - 1):
                    yield recv()

    a, _ = simulate_program(prog, 4, 7)
    b, _ = simulate_program(prog, 4, 7)
    c, _ = simulate_program(prog, 4, 8)
    assert a == b
    assert a != c
    ts = [r["t"] for r in a]
    assert ts == sorted(ts)
