"""The report's classifier table read from the tracker's columns equals the
one built from its Race objects (same columns, same string ids), on random
executions in random arrival orders, finished or not, and on synthetic
traces (many wildcard receives, every verdict)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis.race_table import COLUMNS, RaceTable
from mpvis.model.manager import ModelManager
from mpvis.sim.synthetic import generate_records
from tests.model.random_traces import interleave, random_execution


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.booleans())
def test_from_race_columns_equals_from_classifier(seed: int, nprocs: int, end: bool) -> None:
    rng = random.Random(seed)
    header, records = random_execution(seed, nprocs=nprocs, steps=30)
    m = ModelManager(header)
    for rec in interleave(records, rng)[: None if end else len(records) // 2]:
        m.add(rec)
    if end:
        m.finish()
    _compare(m)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10**9), st.integers(3, 6), st.booleans())
def test_from_race_columns_on_synthetic_traces(seed: int, nprocs: int, end: bool) -> None:
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": nprocs}
    records = list(generate_records(400, nprocs, seed))
    m = ModelManager(header)
    for i in range(0, len(records) if end else len(records) // 2, 50):
        m.add_batch(records[i:i + 50] if end else records[i:min(i + 50, len(records) // 2)])
    if end:
        m.finish()
    assert len(m.potential_races()) > 0 or not end
    _compare(m)


def _compare(m: ModelManager) -> None:
    fast = RaceTable.from_race_columns(m.races.races, m.races.potential_rows())
    slow = RaceTable.from_classifier(m.potential_races())
    assert fast.strings == slow.strings
    for c in COLUMNS:
        assert fast.cols[c].dtype == slow.cols[c].dtype
        assert np.array_equal(fast.cols[c], slow.cols[c]), c
    assert fast.entries() == [r.to_report() for r in m.potential_races()]
