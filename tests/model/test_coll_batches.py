"""Collectives on the batch paths against the record-by-record, Python ones.

The record rules check a batch's collective entries and exits with
whole-array operations when they keep the rules
(``mpvis.model.rule_plans.CollPlan``; ``RecordRules.batch_colls``), and the
walk in C counts the entries of the instances whose members are known and
makes ranks wait at the exits of incomplete ones
(``mpvis.model.clocks.CollectiveCounts``; ``CausalRelease.c_collectives``).
The reference is the same model with both off: every entry handed to Python
and every exit decided there, as before.  Random executions with collectives
on three communicators (the world, one whose entries carry its ``group``,
one with no group: its members are the ranks seen at the end), every kind of
operation, messages in between, ranks that never finish or stop short of a
collective, valid and broken (an exit naming another op, an exit or an entry
dropped, a group without the rank), in random arrival orders and batches:
every configuration must raise the same errors at the same records, release
the events to the analyzers in the same order and end with the same clocks,
Lamport clocks, statuses and races.  A single communicator's executions are
also checked against the spec's happened-before graph (the brute-force
oracle of ``test_happened_before``).
"""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from tests.model.random_traces import feed_in_cuts, interleave, model_outcome, random_execution
from tests.model.test_happened_before import assert_clocks_match_graph

_OPS = ["barrier", "allreduce", "alltoall", "scan", "bcast", "scatter", "reduce", "gather",
        "comm_dup"]


def coll_execution(seed: int, nprocs: int, steps: int) -> tuple[Record, list[Record]]:
    """A random execution: collectives on communicators 0 (every rank), 1
    (ranks 0..nprocs-2, each entry with its ``group``) and 2 (ranks 1.., no
    group), messages between them; some ranks stop early (no ``final``, the
    last collectives' entries or exits missing)."""
    rng = random.Random(seed)
    seq = [0] * nprocs
    out: list[Record] = []
    comms = {0: list(range(nprocs)), 1: list(range(nprocs - 1)), 2: list(range(1, nprocs))}

    def ev(rank: int, kind: str, **f: Any) -> None:
        out.append({"rank": rank, "seq": seq[rank], "kind": kind, **f})
        seq[rank] += 1

    for _ in range(steps):
        if rng.random() < 0.3:
            src = rng.randrange(nprocs)
            dst = rng.choice([q for q in range(nprocs) if q != src])
            ev(src, "send", dest=dst, tag=0, blocking=True, sync=False)
            ssq = seq[src] - 1
            ev(dst, "recv", src=src, tag=0, blocking=True)
            ev(dst, "consume", recv=seq[dst] - 1, src=src, tag=0, send=[src, ssq])
            continue
        comm = rng.choice([0, 0, 1, 2])
        members = comms[comm]
        op = rng.choice(_OPS)
        root = rng.choice(members)
        extra: dict[str, Any] = {"comm": comm} if comm else {}
        if op in ("bcast", "scatter", "reduce", "gather"):
            extra["root"] = root
        if comm == 1:
            extra["group"] = list(members)
        order = list(members)
        rng.shuffle(order)
        for q in order:
            ev(q, "coll", op=op, **copy.deepcopy(extra))
        rng.shuffle(order)
        for q in order:
            ev(q, "coll_exit", op=op, **({"comm": comm} if comm else {}))
    for q in range(nprocs):
        if rng.random() < 0.75:
            ev(q, "final")
    stop = {q: rng.choice([seq[q], seq[q], rng.randrange(seq[q] + 1)]) for q in range(nprocs)}
    kept = [x for x in out if x["seq"] < stop[x["rank"]]]
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": nprocs}
    return header, kept


def break_colls(records: list[Record], rng: random.Random) -> list[Record]:
    """The records with one collective made wrong: an exit naming another
    op, an exit or an entry dropped (the rank's later seqs moved down), or a
    group without the entry's rank."""
    records = copy.deepcopy(records)
    colls = [x for x in records if x["kind"] in ("coll", "coll_exit")]
    if not colls:
        return records
    c = rng.choice(colls)
    how = rng.randrange(4)
    if how == 0:
        c["op"] = "allgather" if c["op"] != "allgather" else "barrier"
    elif how in (1, 2):
        kind = "coll_exit" if how == 1 else "coll"
        c = rng.choice([x for x in colls if x["kind"] == kind] or [c])
        records.remove(c)
        for x in records:
            if x["rank"] == c["rank"] and x["seq"] > c["seq"]:
                x["seq"] -= 1
                if x["kind"] == "consume":
                    x["recv"] -= 1
                    # a send of the rank moved too: its consume names the new seq
            if x["kind"] == "consume" and x["send"][0] == c["rank"] and x["send"][1] > c["seq"]:
                x["send"] = [x["send"][0], x["send"][1] - 1]
    elif c["kind"] == "coll":
        c["group"] = [q for q in c.get("group", [0, 1]) if q != c["rank"]]
    return records


class _Order:
    """An analyzer recording the order in which events are released."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def feed(self, batch: list[Record]) -> None:
        self.seen.extend((x["rank"], x["seq"]) for x in batch)

    def finish(self) -> None:
        pass


def _run(header: Record, records: list[Record], cuts: list[int], plan: bool, walk: bool
         ) -> Any:
    m = ModelManager(header)
    m.rules.batch_colls = plan
    m.causal.c_collectives = walk
    order = _Order()
    m.analyzers.append(order)
    errors = feed_in_cuts(m, records, cuts)
    cols = [list(c.data) for c in (m.c_lamport, m.c_rank, m.c_seq)]
    book = m.colls
    instances = [(key, list(i.entries.items()), list(i.ops.items()), list(i.roots.items()))
                 for key, i in book.instances.items()]  # in the order they were made
    return (errors, order.seen, cols, model_outcome(m), list(m.done), instances, book.groups,
            {c: sorted(s) for c, s in book.seen.items()},
            [book.open_collective(r, c) for r in range(m.nprocs) for c in range(3)])


def _compare(header: Record, records: list[Record], rng: random.Random) -> None:
    cuts = [rng.randint(1, 24) for _ in range(len(records))]
    reference = _run(header, records, cuts, False, False)
    assert _run(header, records, cuts, True, True) == reference
    assert _run(header, records, cuts, True, False) == reference
    assert _run(header, records, cuts, False, True) == reference


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.booleans())
def test_collectives_batched_and_in_c_equal_the_python_path(seed: int, nprocs: int,
                                                             broken: bool) -> None:
    rng = random.Random(seed)
    header, records = coll_execution(seed, nprocs, steps=rng.randint(1, 14))
    if broken:
        records = break_colls(records, rng)
    _compare(header, interleave(records, rng), rng)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 4))
def test_collectives_in_random_batches_match_the_graph(seed: int, nprocs: int) -> None:
    """The spec's happened-before (reachability), one communicator, the
    records in random arrival order and batches."""
    rng = random.Random(seed)
    header, recs = random_execution(seed, nprocs, steps=16)
    arrived = interleave(copy.deepcopy(recs), rng)
    m = ModelManager(header)
    i = 0
    while i < len(arrived):
        k = rng.randint(1, 12)
        m.add_batch(arrived[i:i + k])
        i += k
    m.finish()
    assert_clocks_match_graph(m, recs, nprocs)
