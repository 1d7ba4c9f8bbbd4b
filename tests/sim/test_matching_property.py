"""Property: the simulator's matching equals a brute-force model of MPI matching.

Latency is constant and send times are distinct per sender, so arrival order is
known in advance.  The oracle then matches by the rules of MPI directly:

* receives posted *after* every message arrived (blocking ``recv``) each take
  the earliest-arrived remaining message they match;
* receives posted *before* any message arrives (``irecv``) are matched by the
  messages in arrival order, each going to the first unmatched receive it fits.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.sim.engine import simulate_program
from mpvis.sim.ops import ANY, Ctx, Program, compute, irecv, recv, send, wait

LATENCY = 0.5

messages_st = st.lists(  # per sender: (delay before the send, tag)
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=4),
    min_size=1,
    max_size=3,
)
receives_st = st.lists(
    st.tuples(st.sampled_from([ANY, 1, 2, 3]), st.sampled_from([ANY, 0, 1, 2])), max_size=8
)


def _fits(src: int, tag: int, msg: tuple[float, int, int, int]) -> bool:
    _, sender, _, mtag = msg
    return src in (ANY, sender) and tag in (ANY, mtag)


def _arrivals(senders: list[list[tuple[int, int]]]) -> list[tuple[float, int, int, int]]:
    """(arrival time, sender, send index, tag), in arrival order."""
    out = []
    for r, msgs in enumerate(senders, start=1):
        t = 0.01 * r  # distinct start offsets: no two senders send at the same time
        for i, (delay, tag) in enumerate(msgs):
            t += delay
            out.append((t + LATENCY, r, i, tag))
    return sorted(out)


def oracle(
    senders: list[list[tuple[int, int]]], receives: list[tuple[int, int]], early: bool
) -> list[tuple[int, int]]:
    arrived = _arrivals(senders)
    result: list[tuple[int, int]] = []
    if not early:
        pool = list(arrived)
        for src, tag in receives:
            hit = next((m for m in pool if _fits(src, tag, m)), None)
            if hit is None:
                break
            pool.remove(hit)
            result.append((hit[1], hit[2]))
        return result
    matched: list[tuple[int, int] | None] = [None] * len(receives)
    for msg in arrived:
        for i, (src, tag) in enumerate(receives):
            if matched[i] is None and _fits(src, tag, msg):
                matched[i] = (msg[1], msg[2])
                break
    for m in matched:  # waited for in posting order: stops at the first unmatched
        if m is None:
            break
        result.append(m)
    return result


@settings(max_examples=80, deadline=None)
@given(senders=messages_st, receives=receives_st, early=st.booleans(), seed=st.integers(0, 9))
def test_matching_equals_the_oracle(
    senders: list[list[tuple[int, int]]], receives: list[tuple[int, int]], early: bool, seed: int
) -> None:
    nprocs = len(senders) + 1
    receives = [(src if src < nprocs else ANY, tag) for src, tag in receives]

    def prog(ctx: Ctx) -> Program:
        if ctx.rank > 0:
            yield compute(0.01 * ctx.rank)
            for delay, tag in senders[ctx.rank - 1]:
                yield compute(float(delay))
                yield send(0, tag)
        elif early:
            reqs = []
            for src, tag in receives:
                reqs.append((yield irecv(src, tag)))
            for req in reqs:
                yield wait(req)
        else:
            yield compute(100.0)
            for src, tag in receives:
                yield recv(src, tag)

    recs, _ = simulate_program(prog, nprocs, seed, latency=(LATENCY, LATENCY), overhead=0.0)
    got: list[Any] = [tuple(r["send"]) for r in recs if r["kind"] == "consume"]
    assert got == oracle(senders, receives, early)
