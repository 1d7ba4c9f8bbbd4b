"""The exact detector run after the model is built (the window's post-mortem path)."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest

from mpvis.analysis.exact_offline import all_conflicts
from mpvis.analysis.pipeline import Analyses
from mpvis.tracefile.reader import iter_records, load_trace, read_header
from tests.model.random_traces import interleave, random_execution

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample_traces").rglob("*.jsonl"))


def _both(header: dict, recs: list[dict]) -> tuple[Analyses, Analyses]:
    live = Analyses.for_header(header)
    live.model.add_batch(copy.deepcopy(recs))
    live.model.finish()
    later = Analyses.for_header(header, exact=False)
    later.model.add_batch(copy.deepcopy(recs))
    later.model.finish()
    later.add_exact_afterwards(batch=7)
    return live, later


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples_same_verdict_and_real_conflicts(path: Path) -> None:
    header = read_header(path)
    recs = [r for _, r in iter_records(path)]
    live, later = _both(header, recs)
    assert live.exact is not None and later.exact is not None
    assert bool(live.exact.races) == bool(later.exact.races)
    every = set(all_conflicts(recs, header["nprocs"]))
    assert set(later.exact.races) <= every
    assert load_trace(path).event_count == later.model.event_count


@pytest.mark.slow
def test_random_executions_same_verdict() -> None:
    for seed in range(200):
        header, recs = random_execution(seed, 3, steps=18)
        live, later = _both(header, interleave(recs, random.Random(seed)))
        assert live.exact is not None and later.exact is not None
        assert bool(live.exact.races) == bool(later.exact.races), seed
        assert set(later.exact.races) <= set(all_conflicts(recs, 3)), seed
