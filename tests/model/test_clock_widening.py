"""Vector clock rows stored narrow, widened when a count no longer fits.

The store keeps rows as 16-bit counts until an event's count exceeds what
they hold (:mod:`mpvis.model.clocks`).  Real runs reach that only past 65,535
events on a rank, so these tests lower the narrow limit and check, against
brute-force reachability in the spec's happened-before graph, that clocks and
the relation are right before, during and after the widening, whenever in the
run it happens.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import clocks
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from tests.model.random_traces import interleave, random_execution
from tests.model.test_happened_before import assert_clocks_match_graph


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 4), st.integers(0, 12))
def test_clocks_widened_mid_run_match_graph_reachability(seed: int, nprocs: int,
                                                          limit: int) -> None:
    header, recs = random_execution(seed, nprocs, steps=16)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(clocks, "_NARROW_MAX", limit)
        m = ModelManager(header)
        m.add_batch(interleave(copy.deepcopy(recs), random.Random(seed)))
        m.finish()
    assert_clocks_match_graph(m, recs, nprocs)


def test_counts_past_16_bits_widen_the_rows() -> None:
    """Seqs past 65,535 in a real model: earlier narrow rows keep their values,
    every query answers 32-bit values, Lamport clocks jump at the consumes."""
    big = 70_000
    seq = [0, 0]
    recs: list[Record] = []

    def ev(rank: int, kind: str, **f: Any) -> None:
        recs.append({"rank": rank, "seq": seq[rank], "kind": kind, **f})
        seq[rank] += 1

    def local(rank: int, until: int) -> None:
        while seq[rank] < until:
            ev(rank, "state", vars={"x": 0})

    def message(src: int, dest: int, consume_at: int) -> None:
        sent = seq[src]
        ev(src, "send", dest=dest, tag=0, blocking=True, sync=False)
        local(dest, consume_at - 1)
        ev(dest, "recv", src=src, tag=0, blocking=True)
        ev(dest, "consume", recv=consume_at - 1, src=src, tag=0, send=[src, sent])

    local(0, 10)
    message(0, 1, 3)  # (0, 10) -> (1, 3): a narrow row
    message(1, 0, big)  # (1, 4) -> (0, big): needs 70,001, widens
    message(0, 1, big + 5)  # (0, big + 1) -> (1, big + 5)
    m = ModelManager({"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2})
    m.add_batch(recs)
    m.finish()
    cs = m.clocks
    assert cs.clock(1, 3).tolist() == [11, 4]
    assert cs.clock(0, big).tolist() == [big + 1, 5]
    assert cs.clock(1, big + 5).tolist() == [big + 2, big + 6]
    assert cs.clock(1, 3).dtype == np.int32
    assert cs.happened_before((0, big + 1), (1, big + 5))
    assert not cs.happened_before((0, big + 2), (1, big + 5))
    assert cs.rows(1).tolist() == [[11, 4], [big + 2, big + 6]]
    assert cs.column(1, 0, 5).tolist() == [0, 0, 0, 11, 11]
    assert [m.event(*k).lamport for k in ((0, 10), (1, 3), (1, 4), (0, big), (1, big + 5))] == [
        10, 11, 12, big, big + 13]
