"""Unsafe sends: the zero-buffer re-execution against a brute-force oracle, and small cases."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.unsafe_sends import (
    CHUNK_EVENTS,
    potential_deadlocks,
    requirements,
    send_cycles,
    zero_buffer_run,
)
from mpvis.protocol.record_types import Record as Rec
from tests.analysis import zero_buffer_reference as reference
from tests.analysis.exec_generator import generate
from tests.analysis.zero_buffer_oracle import Oracle, has_send_cycle
from tests.fixtures import trace_model

HEADER: Rec = {"kind": "header", "format": "mpvis-trace", "version": 1}


def trace(nprocs: int, *per_rank: list[Rec]) -> list[Rec]:
    out: list[Rec] = [{**HEADER, "nprocs": nprocs}]
    for rank, recs in enumerate(per_rank):
        out.extend({"rank": rank, "seq": i, **r} for i, r in enumerate(recs))
    return out


def send(dest: int, tag: int = 0, **kw: Any) -> Rec:
    return {"kind": "send", "dest": dest, "tag": tag, "blocking": True, "sync": False, **kw}


def recv(src: int, tag: int = 0, **kw: Any) -> Rec:
    return {"kind": "recv", "src": src, "tag": tag, "blocking": True, **kw}


def consume(recv_seq: int, src: int, send_seq: int, tag: int = 0) -> Rec:
    return {"kind": "consume", "recv": recv_seq, "src": src, "tag": tag, "send": [src, send_seq]}


FINAL: Rec = {"kind": "final"}


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([(2, 8), (3, 6), (4, 3)]))
def test_re_execution_agrees_with_the_brute_force_oracle(seed: int, shape: tuple[int, int]
                                                         ) -> None:
    procs, msgs = shape
    records = generate(seed, max_procs=procs, max_messages=msgs)
    oracle = Oracle(records)
    (end,) = oracle.terminal_states()  # the waits only grow: one end state
    run, cycles = send_cycles(trace_model(records))
    assert tuple(run.pc) == end
    edges = oracle.edges(end)
    assert {r for r, _, _ in edges} == set(run.stuck)
    assert bool(cycles) == has_send_cycle(edges)
    known = {(a, b) for a, b, _ in edges}
    for cyc in cycles:
        assert cyc[0].kind == "send"
        assert all((e.src, e.dst) in known for e in cyc)
        assert [e.dst for e in cyc] == [e.src for e in cyc[1:]] + [cyc[0].src]


def test_send_send_cycle_is_a_potential_deadlock() -> None:
    recs = trace(2,
                 [send(1, site="a.c:10"), recv(1), consume(1, 1, 0), FINAL],
                 [send(0, site="a.c:20"), recv(0), consume(1, 0, 0), FINAL])
    (d,) = potential_deadlocks(trace_model(recs))
    assert d["kind"] == "p2p" and d["potential"] is True
    assert d["ranks"] == [0, 1] and d["cycle"] == [0, 1, 0]
    assert d["sends"] == ["0:0", "1:0"]
    assert "deadlock if sends are not buffered" in str(d["reason"]).lower()
    assert "a.c:10" in str(d["reason"])


def test_sendrecv_exchange_and_ordered_exchange_are_safe() -> None:
    sendrecv = trace(2,
                     [send(1, call=0), recv(1, call=0), consume(1, 1, 0), FINAL],
                     [send(0, call=0), recv(0, call=0), consume(1, 0, 0), FINAL])
    ordered = trace(2,
                    [send(1), recv(1), consume(1, 1, 2), FINAL],
                    [recv(0), consume(0, 0, 0), send(0), FINAL])
    assert potential_deadlocks(trace_model(sendrecv)) == []
    assert potential_deadlocks(trace_model(ordered)) == []


def test_buffered_sends_and_nonblocking_ring_are_safe() -> None:
    bsend = trace(2,
                  [send(1, mode="buffered"), recv(1), consume(1, 1, 0), FINAL],
                  [send(0, mode="buffered"), recv(0), consume(1, 0, 0), FINAL])
    isend: list[list[Rec]] = [
        [{"kind": "recv", "src": 1 - r, "tag": 0, "blocking": False, "req": 0},
         {"kind": "send", "dest": 1 - r, "tag": 0, "blocking": False, "sync": False, "req": 1},
         consume(0, 1 - r, 1), {"kind": "wait", "reqs": [0, 1]}, FINAL]
        for r in range(2)]
    assert potential_deadlocks(trace_model(bsend)) == []
    assert potential_deadlocks(trace_model(trace(2, *isend))) == []


def test_isend_waited_before_the_receive_is_unsafe() -> None:
    ranks: list[list[Rec]] = [
        [{"kind": "send", "dest": 1 - r, "tag": 0, "blocking": False, "sync": False, "req": 0},
         {"kind": "wait", "reqs": [0]}, recv(1 - r), consume(2, 1 - r, 0), FINAL]
        for r in range(2)]
    (d,) = potential_deadlocks(trace_model(trace(2, *ranks)))
    assert d["sends"] == ["0:0", "1:0"]


def test_send_before_barrier_received_after_it() -> None:
    enter: Rec = {"kind": "coll", "op": "barrier"}
    leave: Rec = {"kind": "coll_exit", "op": "barrier"}
    recs = trace(2, [send(1), enter, leave, FINAL],
                 [enter, leave, recv(0), consume(2, 0, 0), FINAL])
    (d,) = potential_deadlocks(trace_model(recs))
    assert d["cycle"] == [0, 1, 0] and d["sends"] == ["0:0"]


def test_a_run_that_hung_in_the_cycle_is_left_to_the_proven_deadlock() -> None:
    recs = trace(2, [send(1)], [send(0)])
    assert potential_deadlocks(trace_model(recs)) == []


def test_an_unreceived_send_is_no_cycle() -> None:
    recs = trace(2, [send(1), FINAL], [FINAL])
    assert potential_deadlocks(trace_model(recs)) == []


def test_a_cycle_through_an_unreceived_send_is_a_lost_message_not_a_deadlock() -> None:
    enter: Rec = {"kind": "coll", "op": "barrier"}
    leave: Rec = {"kind": "coll_exit", "op": "barrier"}
    recs = trace(2, [send(1, tag=9), enter, leave, FINAL], [enter, leave, FINAL])
    assert potential_deadlocks(trace_model(recs)) == []


def _with_calls(records: list[Rec], seed: int) -> list[Rec]:
    """``records`` with some blocking send + blocking receive neighbours of a rank
    marked as one Sendrecv (``call`` on both, or on the send only)."""
    rng = random.Random(seed)
    last: dict[int, Rec] = {}
    out = [records[0]]
    for rec in records[1:]:
        rec = dict(rec)
        prev = last.get(rec["rank"])
        if (prev is not None and prev["kind"] == "send" and prev["blocking"]
                and rec["kind"] == "recv" and rec["blocking"] and rng.random() < 0.6):
            prev["call"] = rec["seq"]
            if rng.random() < 0.8:
                rec["call"] = rec["seq"] + rng.choice([0, 0, 0, 1])
        last[rec["rank"]] = rec
        out.append(rec)
    return out


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([(2, 12), (3, 10), (4, 8), (5, 16)]),
       st.booleans(), st.sampled_from([1, 4, 9, CHUNK_EVENTS]))
def test_columnar_pass_equals_the_per_record_pass(seed: int, shape: tuple[int, int],
                                                  calls: bool, chunk: int) -> None:
    """The columnar requirements and re-execution give the per-record pass's end
    state and unmet requirements (in its order), so the same cycles and report,
    whether the run's ranks are read all at once or a few (or one) at a time."""
    procs, msgs = shape
    records = generate(seed, max_procs=procs, max_messages=msgs)
    if calls:
        records = _with_calls(records, seed)
    m = trace_model(records)
    events, reqs = reference.requirements(m)
    want = reference.zero_buffer_run(m.nprocs, [len(e) for e in events], reqs)
    got = zero_buffer_run(m, requirements(m, chunk_events=chunk))
    assert got.pc == want.pc
    assert got.stuck == want.stuck


def _collectives_on_subcommunicators(seed: int, nprocs: int) -> list[Rec]:
    """Ranks entering collectives on ``comm`` 0 and on two sub-communicators (some
    entries giving the ``group``, some not: then the ranks seen on it count),
    with each rank's own op and root, so entries of an instance may disagree."""
    rng = random.Random(seed)
    comms = {0: list(range(nprocs))}
    for c in (1, 2):
        comms[c] = sorted(rng.sample(range(nprocs), rng.randint(1, nprocs)))
    ops = ["barrier", "allreduce", "bcast", "reduce", "gather", "scatter"]
    per_rank: list[list[Rec]] = []
    for rank in range(nprocs):
        mine = [c for c, ranks in comms.items() if rank in ranks]
        recs: list[Rec] = []
        for _ in range(rng.randint(0, 6)):
            comm = rng.choice(mine)
            op = rng.choice(ops)
            entry: Rec = {"kind": "coll", "op": op, "comm": comm}
            if op in ("bcast", "reduce", "gather", "scatter"):
                entry["root"] = rng.choice(comms[comm])
            if comm and rng.random() < 0.5:
                entry["group"] = comms[comm]
            recs += [entry, {"kind": "coll_exit", "op": op, "comm": comm}]
        per_rank.append(recs)
    return trace(nprocs, *per_rank)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 5), st.sampled_from([1, 5, CHUNK_EVENTS]))
def test_collective_waits_on_subcommunicators_equal_the_per_record_pass(
        seed: int, nprocs: int, chunk: int) -> None:
    """The collectives' requirements read as arrays (instances numbered per
    communicator, members from a ``group`` or the ranks seen) give the per-record
    pass's end state and unmet requirements."""
    m = trace_model(_collectives_on_subcommunicators(seed, nprocs))
    events, reqs = reference.requirements(m)
    want = reference.zero_buffer_run(m.nprocs, [len(e) for e in events], reqs)
    got = zero_buffer_run(m, requirements(m, chunk_events=chunk))
    assert got.pc == want.pc
    assert got.stuck == want.stuck
