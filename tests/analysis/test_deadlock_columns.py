"""The deadlock monitor's batch path (``feed_columns``) against its record path.

The model hands the monitor each released batch as columns
(:class:`~mpvis.model.stream.ReleasedColumns`); the monitor then skips the
sends and consumes that cancel out inside the batch and the blocking
receives, and builds records only for the others.  The reference is the same
monitor fed the very same batches as records (:meth:`DeadlockMonitor.feed`,
the batches a plain record analyzer of the model got).  Random executions (which may
deadlock, leave messages unconsumed and requests open), added to the model in
random batches, with one rank killed part-way in some (lost sends: the batch
path must fall back to the record path): after every batch the live check,
the messages in flight and the open requests agree, and at the end the
deadlocks.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.deadlock_monitor import DeadlockMonitor
from mpvis.model.manager import ModelManager
from mpvis.model.stream import ReleasedColumns
from mpvis.protocol.record_types import Record
from tests.analysis.batch_feeding import Recorder, add_in_random_batches, killed
from tests.analysis.exec_generator import generate
from tests.model.random_traces import interleave, random_execution


class _Counting(DeadlockMonitor):
    """The monitor under test, counting the batches its column path took."""

    columns = 0

    def feed_columns(self, cols: ReleasedColumns) -> None:
        self.columns += 1
        super().feed_columns(cols)


def _state(mon: DeadlockMonitor, nprocs: int) -> Any:
    live = [d.to_report() for d in mon.check(final=False)]
    reqs = [sorted(mon._p2p.open_requests(r)) for r in range(nprocs)]
    return live, mon._p2p.in_flight(), reqs


def _compare(header: Record, records: list[Record], rng: random.Random) -> None:
    nprocs = header["nprocs"]
    m = ModelManager(header)
    mon, rec = _Counting(nprocs), Recorder()
    m.analyzers.extend([mon, rec])
    ref = DeadlockMonitor(nprocs)

    def check() -> None:
        assert _state(mon, nprocs) == _state(ref, nprocs)

    add_in_random_batches(m, rec, records, rng, ref_feed=ref.feed, check=check)
    for r in m.rules.lost_senders():
        ref.mark_dead(r, m.dead[r])
    ref.finish()
    assert [d.to_report() for d in mon.deadlocks] == [d.to_report() for d in ref.deadlocks]
    assert _state(mon, nprocs) == _state(ref, nprocs)
    assert mon.columns == len(rec.batches)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.booleans())
def test_batch_path_equals_record_path_on_random_executions(seed: int, kill: bool) -> None:
    rng = random.Random(seed)
    header, *records = generate(seed, max_procs=4, max_messages=14)
    if kill:
        records = killed(records, rng)
    _compare(header, records, rng)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.booleans())
def test_batch_path_equals_record_path_on_interleavings(seed: int, nprocs: int,
                                                        kill: bool) -> None:
    rng = random.Random(seed)
    header, records = random_execution(seed, nprocs=nprocs, steps=30)
    records = interleave(records, rng)
    if kill:
        records = killed(records, rng)
    _compare(header, records, rng)


def _collectives(seed: int) -> tuple[Record, list[Record]]:
    """Ranks entering collectives with arguments that sometimes differ (order
    and argument mismatches), some ranks finishing after fewer collectives
    than others (case 3 of Roy et al., Sec. III), some blocked in their last
    one; on comm 0 or on a comm whose records carry its group.  A rank
    returns from the n-th collective only when every member entered it."""
    rng = random.Random(seed)
    nprocs = rng.randint(2, 4)
    base = rng.randint(0, 3)
    comm = rng.choice([0, 7])
    recs: list[Record] = []
    for rank in range(nprocs):
        seq = 0
        count = base + rng.randint(0, 1)
        for n in range(count):
            fields: dict[str, Any] = {"op": rng.choice(["allreduce", "allreduce", "barrier"]),
                                      "comm": comm, "site": f"c.py:{n}"}
            if fields["op"] == "allreduce":
                fields.update(count=rng.choice([1, 1, 2]), root=rng.choice([0, 0, 1]),
                              dtype=rng.choice(["int", "int", "float"]))
            if comm:
                fields["group"] = list(range(nprocs))
            recs.append({"rank": rank, "seq": seq, "kind": "coll", **fields})
            seq += 1
            if n < base:
                recs.append({"rank": rank, "seq": seq, "kind": "coll_exit", "op": fields["op"],
                             "comm": comm})
                seq += 1
        if count == base and rng.random() < 0.6:
            recs.append({"rank": rank, "seq": seq, "kind": "final"})
    header: Record = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": nprocs}
    return header, recs


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9))
def test_batch_path_equals_record_path_on_collectives(seed: int) -> None:
    rng = random.Random(seed)
    header, records = _collectives(seed)
    _compare(header, interleave(records, rng), rng)
