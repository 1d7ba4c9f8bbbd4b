"""The record rules' batch check of consumes against the record-by-record check.

:class:`~mpvis.model.rules.RecordRules` checks a batch's consumes with
whole-array operations when they all name a send already in the store
(``mpvis.model.rule_plans.ConsumePlan``), and writes their effects after the batch's other records
are checked.  The reference is the same model with ``batch_consumes`` off.
Random executions, valid and broken (a consume naming the wrong receive or
send, a receive or send consumed twice, a wait before the consume of its
receive, a consume without ``send``), in random arrival orders and random
batches: both models must raise the same errors at the same records and end
with the same columns, messages (in the order observers get them), clocks and
races.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.model.observer import ModelChange
from mpvis.protocol.record_types import Record
from tests.analysis.exec_generator import generate
from tests.model.random_traces import feed_in_cuts, interleave, model_outcome, random_execution


class _Messages:
    def __init__(self) -> None:
        self.seen: list[tuple[int, ...]] = []

    def model_changed(self, change: ModelChange) -> None:
        self.seen.append(change.messages)


def _break(records: list[Record], rng: random.Random) -> list[Record]:
    """The records with one consume (or one wait) made wrong in some way."""
    records = copy.deepcopy(records)
    consumes = [x for x in records if x["kind"] == "consume"]
    if not consumes:
        return records
    c = rng.choice(consumes)
    how = rng.randrange(7)
    mine = [x for x in records if x["rank"] == c["rank"]]
    peers = [x for x in consumes if x["rank"] == c["rank"] and x is not c]
    if how == 0:  # another receive, or an event that is not one
        c["recv"] = rng.randrange(c["seq"] + 1)
    elif how == 1 and "send" in c:  # another event of the sender
        c["send"] = [c["send"][0], rng.randrange(c["send"][1] + 3)]
    elif how == 2 and peers:  # the receive of another consume (a nonblocking one if any)
        seqs = {x["seq"] for x in mine if x["kind"] == "recv" and not x["blocking"]}
        c["recv"] = rng.choice([p for p in peers if p["recv"] in seqs] or peers)["recv"]
    elif how == 5 and peers:  # the message of another consume
        other = rng.choice(peers)
        c.update(src=other["src"], tag=other["tag"])
        if "send" in other:
            c["send"] = list(other["send"])
    elif how == 3:  # the wait just after comes first
        after = [x for x in mine if x["seq"] == c["seq"] + 1 and x["kind"] == "wait"]
        if after:
            after[0]["seq"], c["seq"] = c["seq"], after[0]["seq"]
    elif how == 4:  # no 'send': matched by the non-overtaking rule
        c.pop("send", None)
    else:  # another tag
        c["tag"] = c["tag"] + 1
    return records


def _run(header: Record, records: list[Record], cuts: list[int], batch: bool,
         requests: bool = True) -> Any:
    m = ModelManager(header)
    m.rules.batch_consumes = batch
    m.rules.batch_requests = requests
    obs = _Messages()
    m.observers.append(obs)
    errors = feed_in_cuts(m, records, cuts)
    cols = [list(c.data) for c in (m.c_ref, m.c_partner, m.c_lamport, m.c_rank, m.c_seq)]
    return errors, obs.seen, cols, model_outcome(m)


def _compare(header: Record, records: list[Record], rng: random.Random) -> None:
    cuts = [rng.randint(1, 16) for _ in range(len(records))]
    assert _run(header, records, cuts, True) == _run(header, records, cuts, False)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.booleans())
def test_batch_consumes_equal_record_by_record(seed: int, broken: bool) -> None:
    rng = random.Random(seed)
    header, *records = generate(seed, max_procs=4, max_messages=14)
    if broken:
        records = _break(records, rng)
    _compare(header, records, rng)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.booleans())
def test_batch_consumes_equal_record_by_record_interleaved(seed: int, nprocs: int,
                                                          broken: bool) -> None:
    _interleaved(seed, nprocs, broken)


def _interleaved(seed: int, nprocs: int, broken: bool) -> None:
    rng = random.Random(seed)
    header, records = random_execution(seed, nprocs=nprocs, steps=30)
    records = interleave(records, rng)
    if broken:
        records = _break(records, rng)
    _compare(header, records, rng)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.booleans())
def test_batch_consumes_equal_record_by_record_many(seed: int, nprocs: int,
                                                   broken: bool) -> None:
    """More examples: some breakages (a nonblocking receive consumed again in a
    later batch, a send named early and consumed again) are rare."""
    _interleaved(seed, nprocs, broken)
