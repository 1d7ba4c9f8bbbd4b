"""rebuild_records: the same dicts as rebuild_record, one batch at a time."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.entities import rebuild_record
from mpvis.model.manager import ModelManager
from mpvis.model.record_batch import rank_records, rebuild_records
from mpvis.tracefile.reader import load_trace
from tests.model.random_traces import interleave, random_execution

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample_traces").rglob("*.jsonl"))


def _same(m: ModelManager) -> None:
    n = m.event_count
    order = np.random.default_rng(0).permutation(n)
    one_by_one = [rebuild_record(m, int(g)) for g in order]
    assert rebuild_records(m, order) == one_by_one
    with_comm = rebuild_records(m, order, comm_always=True)
    assert with_comm == [{**r, "comm": r.get("comm", 0)} for r in one_by_one]
    assert all(list(a) == list(b) for a, b in zip(rebuild_records(m, order), one_by_one,
                                                   strict=True))  # same key order too


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples(path: Path) -> None:
    _same(load_trace(path))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 5))
def test_random_executions(seed: int, nprocs: int) -> None:
    header, recs = random_execution(seed, nprocs=nprocs, steps=20)
    m = ModelManager(header)
    m.add_batch(interleave(recs, random.Random(seed)))
    m.finish()
    _same(m)


def test_empty() -> None:
    m = ModelManager({"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2})
    assert rebuild_records(m, np.zeros(0, dtype=np.int64)) == []


@pytest.mark.parametrize("path", SAMPLES[:8], ids=[p.stem for p in SAMPLES[:8]])
def test_rank_records(path: Path) -> None:
    m = load_trace(path)
    for r in range(m.nprocs):
        assert rank_records(m, r) == [m.record(r, s) for s in range(m.count(r))]
