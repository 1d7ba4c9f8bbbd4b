"""The record rules' batch check of requests and waits against the
record-by-record check.

:class:`~mpvis.model.rules.RecordRules` checks a batch's nonblocking sends
and receives and its waits with whole-array operations when they keep the
rules (``mpvis.model.rule_plans.RequestPlan``).  The reference is the same model with
``batch_requests`` off.  Random executions, valid and broken (a consume made
wrong, as in ``test_consume_batches``, or a wait made wrong: naming a request
twice, one that is not live, one of another rank, or coming before the
consume of its receive; a request made live twice), in random arrival orders
and random batches: both models must raise the same errors at the same
records and end with the same columns, messages, clocks and races.
"""

from __future__ import annotations

import copy
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.protocol.record_types import Record
from tests.model.random_traces import interleave, random_execution
from tests.model.test_consume_batches import _break, _run


def _break_requests(records: list[Record], rng: random.Random) -> list[Record]:
    """The records with one wait or one request made wrong in some way."""
    records = copy.deepcopy(records)
    waits = [x for x in records if x["kind"] == "wait" and x["reqs"]]
    nonblocking = [x for x in records if x["kind"] in ("send", "recv") and not x["blocking"]]
    how = rng.randrange(5)
    if how == 0 and waits:  # a request named twice
        w = rng.choice(waits)
        w["reqs"] = [*w["reqs"], w["reqs"][0]]
    elif how == 1 and waits:  # a request that was never made
        rng.choice(waits)["reqs"][0] = 10_000
    elif how == 2 and len(nonblocking) > 1:  # two live requests with one number
        a, b = rng.sample(nonblocking, 2)
        b["req"] = a["req"]
    elif how == 3 and waits:  # the wait moves to just after the request's event
        w = rng.choice(waits)
        mine = sorted((x for x in records if x["rank"] == w["rank"]), key=lambda x: x["seq"])
        before = [x for x in mine if x["seq"] < w["seq"]]
        if before:
            other = rng.choice(before)
            other["seq"], w["seq"] = w["seq"], other["seq"]
    elif nonblocking:  # a request number another rank uses
        x = rng.choice(nonblocking)
        x["req"] = x["req"] + 1
    return records


def _compare(header: Record, records: list[Record], rng: random.Random) -> None:
    cuts = [rng.randint(1, 16) for _ in range(len(records))]
    assert _run(header, records, cuts, True) == _run(header, records, cuts, True, False)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.integers(0, 2))
def test_batch_requests_equal_record_by_record(seed: int, nprocs: int, broken: int) -> None:
    rng = random.Random(seed)
    header, records = random_execution(seed, nprocs=nprocs, steps=30)
    records = interleave(records, rng)
    if broken == 1:
        records = _break(records, rng)
    elif broken == 2:
        records = _break_requests(records, rng)
    _compare(header, records, rng)
