"""The typed records (mpvis.protocol.record_types) describe what mpvis really writes:
every record of every sample trace, of every simulated scenario and rebuilt from
the model has its kind's required fields and no field its kind's class does not
declare (the traced runs' records are checked in tests/instrument)."""

from __future__ import annotations

import typing
from pathlib import Path

import numpy as np
import pytest

from mpvis.model.record_batch import rebuild_records
from mpvis.protocol import record_types as T
from mpvis.protocol.records import EVENT_KINDS
from mpvis.sim.api import scenario_names, simulate
from mpvis.tracefile.reader import iter_records, read_header
from tests.fixtures import RECORD_CLASSES, shape_error, simulated_model

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
FILES = sorted(p for p in SAMPLES.rglob("*.jsonl*") if p.suffix in (".jsonl", ".gz", ".zst"))


def test_every_kind_has_one_class() -> None:
    assert set(RECORD_CLASSES) == set(EVENT_KINDS)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SAMPLES)) for p in FILES])
def test_sample_trace_records_fit_their_class(path: Path) -> None:
    header = read_header(path)
    assert set(header) <= set(typing.get_type_hints(T.HeaderRecord)), path
    bad = [(n, m) for n, rec in iter_records(path) if (m := shape_error(rec)) is not None]
    assert bad[:3] == []


@pytest.mark.parametrize("name", scenario_names())
def test_simulated_records_fit_their_class(name: str) -> None:
    _, records = simulate(name, 0)
    bad = [m for rec in records if (m := shape_error(rec)) is not None]
    assert bad[:3] == []


@pytest.mark.parametrize("name", scenario_names())
def test_records_rebuilt_from_the_model_fit_their_class(name: str) -> None:
    # what analyzers and the details panel get back from the model's columns
    m = simulated_model(name)
    recs = rebuild_records(m, np.arange(m.event_count), comm_always=True)
    assert len(recs) == m.event_count
    assert [e for r in recs if (e := shape_error(r)) is not None][:3] == []


@pytest.mark.parametrize("name", scenario_names())
def test_the_models_typed_records_fit_their_class(name: str) -> None:
    # ModelManager.record and Event.fields are typed EventRecord (one cast, in
    # EventStore.event_record): what they give must be what the classes promise
    m = simulated_model(name)
    by_key = [m.record(r, s) for r in range(m.nprocs) for s in range(m.count(r))]
    by_view = [e.fields for e in m.events]
    assert len(by_key) == len(by_view) == m.event_count
    assert [e for r in by_key + by_view if (e := shape_error(r)) is not None][:3] == []
    assert sorted((r["rank"], r["seq"]) for r in by_view) == [(r["rank"], r["seq"]) for r in by_key]
