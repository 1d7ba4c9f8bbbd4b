"""The exact race detector in C (``_cexact.c``): properties, sample traces, bad input.

The detector's results are checked against the brute-force Theorem 2.2 oracle
(``exact_oracle``, independent of ``mpvis.analysis``) on random executions drawn
by hypothesis and on every sample trace: every conflict it lists is one, and it
lists one whenever there is one.  The batches a stream arrives in never change
what it lists, nor the order.  Records the model would refuse raise a clear
error instead of crashing the interpreter.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpvis.analysis.exact_races import ExactRaceDetector
from mpvis.protocol.record_types import Record
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.reader import iter_records, read_header
from tests.analysis.exact_oracle import oracle_conflicts
from tests.analysis.exec_generator import generate

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_traces").glob("**/*.jsonl"))


def _feed(records: list[Record], nprocs: int, sizes: list[int]) -> ExactRaceDetector:
    """The detector after ``records`` in batches of the given sizes (cycled), then finish."""
    det = ExactRaceDetector(nprocs)
    i = k = 0
    while i < len(records):
        step = sizes[k % len(sizes)] if sizes else len(records)
        det.feed(records[i : i + step])
        i += step
        k += 1
    det.finish()
    return det


def _key(det: ExactRaceDetector) -> set[tuple[int, int, tuple[int, int], tuple[int, int]]]:
    return {(r.rank, r.recv, r.s1, r.s2) for r in det.races}


def _check_against_oracle(records: list[Record], nprocs: int, sizes: list[int]) -> None:
    expected = oracle_conflicts(records)
    whole = _feed(records, nprocs, [])
    found = _key(whole)
    assert found <= expected, f"not conflicts: {found - expected}"
    assert bool(found) == bool(expected), f"found {found}, oracle {expected}"
    batched = _feed(records, nprocs, sizes)
    assert batched.races == whole.races  # same conflicts, same order
    assert batched.held() == whole.held()
    entries = whole.report_entries()
    assert entries == [r.to_report() for r in whole.races]
    assert [tuple(row) for row in whole.conflict_array().tolist()] == list(whole.conflicts())
    live = whole.conflicts()
    assert len(live) == len(entries)
    for r in whole.races:
        assert (r.rank, r.recv, *r.s1, *r.s2) in live
    assert (-5, 0, 0, 0, 0, 0) not in live
    assert object() not in live


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**9),
    procs=st.sampled_from([2, 3, 4, 5]),
    messages=st.sampled_from([6, 12, 18]),
    shuffle=st.booleans(),
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=5),
)
@pytest.mark.slow
def test_random_executions_against_the_oracle_in_any_batches(
    seed: int, procs: int, messages: int, shuffle: bool, sizes: list[int]
) -> None:
    records = generate(seed, shuffle=shuffle, max_procs=procs, max_messages=messages)
    _check_against_oracle(records[1:], records[0]["nprocs"], sizes)


def test_a_few_random_executions_against_the_oracle() -> None:
    """The fast suite's share of the property above (fixed seeds)."""
    for seed in range(40):
        rng = random.Random(seed)
        records = generate(seed, shuffle=seed % 2 == 0, max_procs=rng.choice([2, 3, 4]),
                           max_messages=12)
        _check_against_oracle(records[1:], records[0]["nprocs"], [rng.randint(1, 5)])


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_sample_traces_against_the_oracle(path: Path) -> None:
    body = [rec for _, rec in iter_records(path)]
    _check_against_oracle(body, read_header(path)["nprocs"], [3, 1, 4])


def test_the_set_of_conflicts_grows_a_little_at_a_time_and_loses_none() -> None:
    """Thousands of conflicts: the set that keeps them unique doubles five times,
    moving its old slots a few per conflict added (``found_add``).  Asked after
    every batch, mid-move included, it holds every conflict listed and nothing
    else, lists none twice, and lists what one whole feed does."""
    body = list(generate_records(20_000, 8, seed=1))
    whole = ExactRaceDetector(8)
    whole.feed(body)
    whole.finish()
    det = ExactRaceDetector(8)
    for i in range(0, len(body), 97):
        det.feed(body[i : i + 97])
        found = det.conflicts()
        listed = list(found)
        assert len(set(listed)) == len(listed) == len(found)
        assert all(key in found for key in listed)
        assert not any((rank + 1000, *rest) in found for rank, *rest in listed[-50:])
    det.finish()
    assert list(det.conflicts()) == list(whole.conflicts())
    assert len(whole.conflicts()) > 2_880  # past the set's fifth doubling (256 slots, 70%)


# -- bad input: a clear error, never a crash ---------------------------------------


def _send(**kw: Any) -> Record:
    rec: Record = {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 0, "comm": 0}
    rec.update(kw)
    return rec


@pytest.mark.parametrize(
    ("record", "error", "text"),
    [
        ({"rank": 0, "seq": 0, "kind": "send", "tag": 0}, ValueError, "'dest'"),
        (_send(seq="0"), TypeError, "'seq'"),
        (_send(tag=1.5), TypeError, "'tag'"),
        (_send(dest=2**70), ValueError, "'dest' out of range"),
        (_send(seq=2**31), ValueError, "seq 2147483648 out of range"),
        (_send(seq=-1), ValueError, "seq -1 out of range"),
        (_send(blocking=False), ValueError, "'req'"),
        ({"rank": 0, "seq": 0, "kind": "consume", "recv": 0, "send": [1]}, ValueError, "'send'"),
        ({"rank": 0, "seq": 0, "kind": "consume", "recv": 0, "send": 5}, TypeError, "'send'"),
        ({"rank": 0, "seq": 0, "kind": "consume", "recv": 0, "send": [1, 0]}, ValueError,
         "'tag'"),
        ({"rank": 0, "seq": 0, "kind": "wait", "reqs": 3}, TypeError, "'reqs'"),
        ({"rank": 0, "seq": 0, "kind": "coll", "op": "bcast", "root": "0"}, TypeError, "'root'"),
        ({"rank": "0", "seq": 0, "kind": "recv"}, TypeError, "'rank'"),
        ("not a record", TypeError, "must be a dict"),
    ],
)
def test_a_record_the_model_would_refuse_raises_a_clear_error(
    record: Any, error: type[Exception], text: str
) -> None:
    det = ExactRaceDetector(2)
    with pytest.raises(error, match=text):
        det.feed([record])
    det.feed([_send(seq=0)])  # the detector is still usable
    det.finish()


def test_what_the_detector_ignores() -> None:
    """Other kinds, ranks out of range and unknown requests are not errors."""
    det = ExactRaceDetector(2)
    det.feed([
        {"rank": 0, "seq": 0, "kind": "state", "vars": {}},
        {"rank": 7, "seq": "x", "kind": "send"},  # rank out of range: ignored, not read
        {"rank": -1, "seq": 0, "kind": "recv"},
        {"kind": 3},
        {"seq": 0},
        {"rank": 0, "seq": 1, "kind": "wait", "reqs": [None, "a", 2**80, 5]},
        {"rank": 0, "seq": 2, "kind": "consume", "recv": 9, "send": None},
    ])
    det.finish()
    assert det.races == []
    with pytest.raises(TypeError):
        det.feed(42)  # type: ignore[arg-type]  # the bad call under test
    with pytest.raises(TypeError):
        ExactRaceDetector("3")  # type: ignore[arg-type]  # the bad call under test
    with pytest.raises(ValueError, match="nprocs"):
        ExactRaceDetector(-1)


_INTS = st.one_of(st.integers(-2, 6), st.integers(-(2**70), 2**70))
_VALUES = st.one_of(_INTS, st.none(), st.booleans(), st.text(max_size=3),
                    st.lists(_INTS, max_size=3))
_KINDS = st.sampled_from(["send", "recv", "consume", "wait", "coll", "coll_exit", "final"])


@st.composite
def _records(draw: st.DrawFn) -> Record:
    rec: Record = {"kind": draw(_KINDS), "rank": draw(st.integers(-1, 3)),
                   "seq": draw(st.integers(0, 12))}
    for name in ("dest", "src", "tag", "comm", "recv", "req", "root"):
        if draw(st.booleans()):
            rec[name] = draw(st.integers(-1, 4) if draw(st.booleans()) else _VALUES)
    for name in ("send", "reqs", "op", "sync", "blocking"):
        if draw(st.booleans()):
            rec[name] = draw(st.one_of(
                _VALUES, st.lists(st.integers(-1, 4), min_size=2, max_size=2),
                st.sampled_from(["barrier", "bcast", "reduce", "gather"])))
    return rec


@settings(max_examples=100, deadline=None)
@given(st.lists(_records(), max_size=40), st.integers(1, 5))
@pytest.mark.slow
def test_garbage_never_crashes(records: list[Record], size: int) -> None:
    """Arbitrary (mostly inconsistent) records: each feed either works or raises
    ValueError/TypeError; finish always ends; what is listed is well formed."""
    det = ExactRaceDetector(3)
    for i in range(0, len(records), size):
        with contextlib.suppress(ValueError, TypeError):
            det.feed(records[i : i + size])
    det.finish()
    for entry in det.report_entries():
        assert entry["method"] == "exact"
    assert det.held() >= 0


def test_python_code_run_while_reading_a_record_cannot_crash_it() -> None:
    """A value whose ``__bool__`` or ``__hash__`` empties the batch or the record
    (reads are bounds-checked and hold their objects)."""
    batch: list[Any] = []

    class Shrinks:
        def __bool__(self) -> bool:
            batch.clear()
            return True

    coll: Record = {"rank": 0, "seq": 0, "kind": "coll", "comm": 0, "root": 0}

    class Drops(str):
        def __hash__(self) -> int:
            coll.clear()
            return str.__hash__(self)

    coll["op"] = Drops("bcast")
    batch += [_send(sync=Shrinks()), _send(seq=1), _send(seq=2)]
    det = ExactRaceDetector(2)
    det.feed(batch)
    det.feed([coll])
    det.finish()
    assert det.held() == 2  # the first send and the collective, nothing after them


def test_feeding_while_another_thread_copies_the_conflicts_waits_its_turn() -> None:
    """``found_bytes`` copies without the GIL (the window's loader thread copies
    while the GUI thread runs): a feed meanwhile is refused with a clear error
    and may be retried; nothing is corrupted or lost."""
    body = list(generate_records(20_000, 8, seed=1))
    alone = ExactRaceDetector(8)
    alone.feed(body)
    alone.finish()
    det = ExactRaceDetector(8)
    copies: list[Any] = []

    def copy() -> None:
        for _ in range(300):
            copies.append(det.conflict_array())
            time.sleep(0.0005)

    copier = threading.Thread(target=copy)
    copier.start()
    try:
        for i in range(0, len(body), 50):
            while True:
                try:
                    det.feed(body[i : i + 50])
                    break
                except RuntimeError as exc:
                    assert "being copied on another thread" in str(exc)
                    time.sleep(0.0001)
    finally:
        copier.join()
    det.finish()
    found = det.conflict_array()
    assert list(det.conflicts()) == list(alone.conflicts())
    for got in copies:  # each copy a whole prefix of the list as found
        assert np.array_equal(got, found[: len(got)])
