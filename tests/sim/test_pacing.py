"""Pacing: batches keep order, are never early, and are at most one interval late."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.sim.pacing import paced_batches

times_st = st.lists(st.floats(0, 30, allow_nan=False), max_size=200).map(sorted)


@settings(max_examples=100, deadline=None)
@given(
    times=times_st, speed=st.sampled_from([0.5, 1.0, 4.0]), interval=st.sampled_from([0.05, 0.2])
)
def test_batches_release_each_record_in_its_tick(
    times: list[float], speed: float, interval: float
) -> None:
    recs = [{"rank": 0, "seq": i, "t": t} for i, t in enumerate(times)]
    batches = paced_batches(recs, speed, interval, max_batch=7)
    assert [r for _, b in batches for r in b] == recs
    dues = [d for d, _ in batches]
    assert dues == sorted(dues)
    for due, batch in batches:
        assert 0 < len(batch) <= 7
        for r in batch:
            assert due <= r["t"] / speed + 1e-9
            assert r["t"] / speed < due + interval + 1e-9


def test_speed_zero_releases_everything_at_once_in_bounded_batches() -> None:
    recs = [{"rank": 0, "seq": i, "t": float(i)} for i in range(25)]
    batches = paced_batches(recs, 0, max_batch=10)
    assert [d for d, _ in batches] == [0.0, 0.0, 0.0]
    assert [len(b) for _, b in batches] == [10, 10, 5]
