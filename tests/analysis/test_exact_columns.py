"""The exact race detector's column entry (``feed_columns``) against its record entry.

Attached to a model, the detector reads each released batch from the store's
columns in C (:meth:`ExactRaceDetector.feed_columns`); the reference is a
second detector fed the very same batches as records
(:meth:`ExactRaceDetector.feed`, the batches a plain record analyzer of the
model got: :meth:`ReleasedColumns.records
<mpvis.model.stream.ReleasedColumns.records>`).  Random executions added in
random batches, with one rank killed part-way in some (lost sends, forced
consumes): the same conflicts in the same order, the same storage, after every
batch and at the end.  The detector's answers themselves are checked against
the brute-force oracle in ``test_exact_races.py``.
"""

from __future__ import annotations

import random
from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis import _cexact
from mpvis.analysis.exact_races import ExactRaceDetector
from mpvis.model.collectives import ALL_TO_ALL, FROM_ROOT, TO_ROOT
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from tests.analysis.batch_feeding import Recorder, add_in_random_batches, killed
from tests.analysis.exec_generator import generate
from tests.model.random_traces import interleave, random_execution


class _Counting(ExactRaceDetector):
    """The detector under test, counting the batches its column entry took."""

    columns = 0

    def feed_columns(self, cols: object) -> None:  # type: ignore[override]  # counts, then the real entry
        self.columns += 1
        super().feed_columns(cols)  # type: ignore[arg-type]  # the model passes ReleasedColumns


def _compare(header: Record, records: list[Record], rng: random.Random) -> None:
    nprocs = header["nprocs"]
    m = ModelManager(header)
    det, rec = _Counting(nprocs), Recorder()
    m.analyzers.extend([det, rec])
    ref = ExactRaceDetector(nprocs)

    def check() -> None:
        assert list(det.conflicts()) == list(ref.conflicts())
        assert det.held() == ref.held()

    add_in_random_batches(m, rec, records, rng, ref_feed=ref.feed, check=check)
    ref.finish()
    assert list(det.conflicts()) == list(ref.conflicts())
    assert det.held() == ref.held()
    assert det.columns == len(rec.batches)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.booleans())
def test_columns_equal_records_on_random_executions(seed: int, kill: bool) -> None:
    rng = random.Random(seed)
    header, *records = generate(seed, max_procs=4, max_messages=14)
    if kill:
        records = killed(records, rng)
    _compare(header, records, rng)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9), st.integers(2, 5), st.booleans())
def test_columns_equal_records_on_interleavings(seed: int, nprocs: int, kill: bool) -> None:
    rng = random.Random(seed)
    header, records = random_execution(seed, nprocs=nprocs, steps=30)
    records = interleave(records, rng)
    if kill:
        records = killed(records, rng)
    _compare(header, records, rng)


def _columns(n: int) -> list[array[int]]:
    """Store-like columns of ``n`` rows, in the types the entry expects."""
    return [array(c, [0] * n) for c in "biiiiibiiq"]  # kind ... partner


def test_bad_columns_are_clear_errors() -> None:
    det = _cexact.Detector(2, ALL_TO_ALL, FROM_ROOT, TO_ROOT)
    cols = _columns(1)
    gidx = np.zeros(1, dtype=np.int64).data
    waits = (array("q"), array("q", [0]), array("q"))
    with pytest.raises(ValueError, match="global index 5 out of range"):
        det.feed_columns((np.array([5], dtype=np.int64).data, *cols), {}, {}, waits)
    wide = list(cols)
    wide[1] = array("q", [0])  # rank as int64
    with pytest.raises(TypeError, match="column 'rank' must hold 4-byte"):
        det.feed_columns((gidx, *wide), {}, {}, waits)
    with pytest.raises(TypeError, match="must be dict"):
        det.feed_columns((gidx, *cols), [], {}, waits)  # type: ignore[arg-type]  # the bad call under test
    with pytest.raises(TypeError, match="takes 11 columns"):
        det.feed_columns(tuple(cols), {}, {}, waits)
    with pytest.raises(ValueError, match="wait offsets must be one more"):
        det.feed_columns((gidx, *cols), {}, {}, (array("q"), array("q"), array("q")))
    with pytest.raises(ValueError, match="wait offsets out of range"):
        det.feed_columns((gidx, *cols), {}, {}, (array("q", [0]), array("q", [0, 2]),
                                                  array("q", [7])))
    det.feed_columns((gidx, *cols), {}, {}, waits)  # a send of rank 0: still usable
    det.finish()
    assert det.count() == 0
