"""The zoomed-out levels of :class:`BinnedItems` against a brute-force oracle,
whatever the chunks their representatives are picked in (issue 16: picked a
chunk at a time to bound the build's temporaries)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.scene import binned
from mpvis.scene.binned import BinnedItems


def _levels_oracle(b: BinnedItems, group: np.ndarray, cls: np.ndarray) -> dict[int, list[int]]:
    """Level ``nb``'s ids, from the items in ``x`` order (``b.full``): per (group,
    bucket), the first item of the highest class, by a plain Python pass."""
    ids, x = b.full.ids.astype(np.int64), b.full.x
    span = max(b.hi - b.lo, 1e-300)
    out: dict[int, list[int]] = {}
    for nb, _ in b.levels:
        bucket = np.minimum(((x - b.lo) / span * nb).astype(np.int64), nb - 1)
        best: dict[tuple[int, int], int] = {}  # (group, bucket) -> position in x order
        for pos, (i, k) in enumerate(zip(ids.tolist(), bucket.tolist(), strict=True)):
            key = (int(group[i]), k)
            if key not in best or cls[i] > cls[ids[best[key]]]:
                best[key] = pos
        out[nb] = [int(ids[p]) for p in sorted(best.values())]
    return out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shape=st.tuples(st.integers(1, 4000), st.integers(1, 6)),  # items, groups
    distinct=st.sampled_from([3, 50, 10**6]),  # few distinct x: long runs of one bucket
    chunk=st.sampled_from([1, 2, 7, 64, 1 << 16]),
    extents=st.booleans(),
    shuffled=st.booleans(),  # ids other than 0..n-1, some x NaN (not laid out yet)
)
def test_levels_are_the_first_of_the_highest_class_per_group_and_bucket(
    seed: int, shape: tuple[int, int], distinct: int, chunk: int, *, extents: bool,
    shuffled: bool,
) -> None:
    n, groups = shape
    rng = np.random.default_rng(seed)
    x = rng.integers(0, distinct, n).astype(np.float64) / 7.0
    if shuffled:
        x[rng.random(n) < 0.1] = np.nan
    x_hi = x + rng.exponential(0.5, n) * (rng.random(n) < 0.3) if extents else x
    group = rng.integers(0, groups, n)
    cls = rng.integers(0, 4, n).astype(np.int8)
    ids = rng.permutation(n) if shuffled else np.arange(n)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(binned, "RUN_CHUNK", chunk)
        b = BinnedItems(ids, x, x_hi, group, cls)
    at = np.empty(n, dtype=np.int64)
    at[ids] = np.arange(n)  # an id's position in the inputs
    assert sorted(b.full.ids.tolist() + b.long.ids.tolist()) == sorted(ids[~np.isnan(x_hi)])
    oracle = _levels_oracle(b, group[at], cls[at])
    for nb, level in b.levels:
        assert level.ids.astype(np.int64).tolist() == oracle[nb]
        assert np.array_equal(level.x, x[at[level.ids]])  # sorted by x, as the full set


def test_one_chunk_or_many_give_the_same_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    n = 200_000
    x = np.cumsum(rng.exponential(1.0, n))
    group, cls = rng.integers(0, 16, n), rng.integers(0, 8, n).astype(np.int8)
    whole = BinnedItems(np.arange(n), x, x, group, cls)
    monkeypatch.setattr(binned, "RUN_CHUNK", 997)
    chunked = BinnedItems(np.arange(n), x, x, group, cls)
    assert [nb for nb, _ in whole.levels] == [nb for nb, _ in chunked.levels]
    for (_, a), (_, b) in zip(whole.levels, chunked.levels, strict=True):
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.x, b.x)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 3000), extents=st.booleans(),
       nan_share=st.sampled_from([0.0, 0.1, 1.0]))
def test_no_ids_means_the_ids_0_to_n(seed: int, n: int, *, extents: bool,
                                     nan_share: float) -> None:
    """``ids=None`` (the frame index's: no array of every id held through the
    build) builds what ``np.arange(n)`` does, NaN ``x`` (not laid out yet) included."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 500, n).astype(np.float64)
    x[rng.random(n) < nan_share] = np.nan
    x_hi = x + rng.exponential(2.0, n) * (rng.random(n) < 0.3) if extents else x
    group, cls = rng.integers(0, 5, n), rng.integers(0, 4, n).astype(np.int8)
    given_ids = BinnedItems(np.arange(n), x, x_hi, group, cls)
    implicit = BinnedItems(None, x, x_hi, group, cls)
    for a, b in [(given_ids.full, implicit.full), (given_ids.long, implicit.long)] + [
            (la, lb) for (_, la), (_, lb) in zip(given_ids.levels, implicit.levels, strict=True)]:
        assert np.array_equal(a.ids.astype(np.int64), b.ids.astype(np.int64))
        assert np.array_equal(a.x, b.x, equal_nan=True)
    assert [nb for nb, _ in given_ids.levels] == [nb for nb, _ in implicit.levels]
