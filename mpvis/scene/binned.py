"""Items sorted by ``x`` with a pyramid of pre-binned representatives (Qt-free).

The diagram's frame must not cost a pass over every event.  A
:class:`BinnedItems` holds items (events or messages) sorted by their left
``x`` once per layout, so the items meeting a viewport's ``x`` range are one
slice found by two binary searches.  For zoomed-out views it also keeps
*levels*: level ``k`` cuts the whole ``x`` span into ``2**k`` buckets and keeps
one item of every (group, bucket): the one of highest class (for events the
symbol drawn on top, so a ``recv(-1,-1)`` star survives), the first in ``x``
among equals; a group is a rank for events and a (source rank, destination
rank) pair for messages.  A coarser level's representatives are a subset of
the finer level's (the best of a bucket is the best of its two halves' best),
so each level is built from the one below it.  A frame picks the finest
level whose buckets are at least ``bucket_px`` wide on screen and slices it
like the full set: its cost is bounded by the number of pixels, not of events.

Items carry a right end ``x_hi`` (``x_hi >= x``; equal for points).  Items
whose extent exceeds the 99th percentile of extents are kept aside
(``long``) and tested one by one, so the slice of the others is
``[x0 - max extent, x1]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The coarsest level has this many buckets over the whole span.
MIN_LEVEL_BUCKETS = 64
#: The finest level has about this many items per (group, bucket) on average (finer
#: levels would hardly thin anything out).
MIN_ITEMS_PER_BUCKET = 2
#: Up to this many times the budget, the items in range are counted exactly.
EXACT_COUNT_FACTOR = 8
#: A level is built only while it keeps at most this share of the items below it.
LEVEL_SHRINK = 0.6
#: A level's representatives are picked this many items at a time (bounded temporaries).
RUN_CHUNK = 1 << 16


@dataclass(frozen=True)
class _Sorted:
    """Item ids sorted by ``x`` with their extents; ``reach`` = max ``x_hi - x``.
    The ids are held as ``int32`` when they fit (4 bytes an item less: 1M events
    and their levels) and handed out as ``int64``."""

    ids: npt.NDArray[np.integer]
    x: FloatArray
    x_hi: FloatArray
    reach: float

    def clip(self, x0: float, x1: float) -> IntArray:
        """Ids of the items whose ``[x, x_hi]`` meets ``[x0, x1]``, in ``x`` order."""
        i0 = int(np.searchsorted(self.x, x0 - self.reach, side="left"))
        i1 = int(np.searchsorted(self.x, x1, side="right"))
        if self.reach > 0:
            sel = np.flatnonzero(self.x_hi[i0:i1] >= x0) + i0
            return self.ids[sel].astype(np.int64)
        return self.ids[i0:i1].astype(np.int64)

    def count(self, x0: float, x1: float) -> int:
        """An upper bound of ``len(self.clip(x0, x1))`` in two binary searches."""
        i0 = int(np.searchsorted(self.x, x0 - self.reach, side="left"))
        return int(np.searchsorted(self.x, x1, side="right")) - i0


def _narrow_ids(ids: npt.NDArray[np.integer]) -> npt.NDArray[np.integer]:
    """``ids`` as ``int32`` when every value fits (no copy if they are already)."""
    if len(ids) and int(ids.max()) < 2**31 and int(ids.min()) >= -(2**31):
        return ids.astype(np.int32, copy=False)
    return ids


def _is_range(ids: npt.NDArray[np.integer]) -> bool:
    """Are ``ids`` ``0, 1, ..., n - 1``?  (Read a chunk at a time: no copy.)"""
    return all(np.array_equal(ids[i:i + RUN_CHUNK], np.arange(i, min(i + RUN_CHUNK, len(ids))))
               for i in range(0, len(ids), RUN_CHUNK))


def _counts(group: npt.NDArray[np.integer]) -> IntArray:
    """``np.bincount(group)`` a chunk at a time (it reads ``int64``: a copy of
    every item's group otherwise)."""
    n_groups = int(group.max()) + 1 if len(group) else 0
    counts = np.zeros(n_groups, dtype=np.int64)
    for i in range(0, len(group), RUN_CHUNK):
        counts += np.bincount(group[i:i + RUN_CHUNK], minlength=n_groups)
    return counts


def _grouped(group: npt.NDArray[np.integer], counts: IntArray) -> npt.NDArray[np.integer]:
    """The positions ``0..n-1`` ordered by ``group``, ascending within a group:
    ``np.argsort(group, kind="stable")`` as ``int32``, by a counting sort (with
    ``counts``, :func:`_counts`) a chunk of :data:`RUN_CHUNK` at a time (no
    ``int64`` array of every item)."""
    n, n_groups = len(group), len(counts)
    if n >= 2**31:
        return np.argsort(group, kind="stable")
    nxt = np.concatenate([[0], np.cumsum(counts)[:-1]])  # next free place of each group
    out = np.empty(n, dtype=np.int32)
    small = n_groups < 2**15  # a radix sort
    for i in range(0, n, RUN_CHUNK):
        g = group[i:i + RUN_CHUNK]
        o = np.argsort(g.astype(np.int16) if small else g, kind="stable")
        gs = g[o]
        heads = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
        rank = np.arange(len(gs)) - np.repeat(heads, np.diff(np.r_[heads, len(gs)]))
        out[nxt[gs] + rank] = o + i
        nxt += np.bincount(g, minlength=n_groups)
    return out


def _sorted(ids: npt.NDArray[np.integer], x: FloatArray, x_hi: FloatArray) -> _Sorted:
    ids = _narrow_ids(ids)
    reach = float((x_hi - x).max()) if len(x) and x_hi is not x else 0.0  # points: none
    return _Sorted(ids, x, x_hi, max(reach, 0.0))


@dataclass(frozen=True)
class _Items:
    """The short items in ``x`` order, as the levels are picked from: ``x``,
    group and class at each position, and the span the buckets cut."""

    x: FloatArray
    group: npt.NDArray[np.integer]
    cls: npt.NDArray[np.integer]
    lo: float
    span: float

    def keys(self, pos: npt.NDArray[np.integer], nb: int) -> IntArray:
        """The (group, bucket of ``nb``) key of the items at ``pos``."""
        b = np.minimum(((self.x[pos] - self.lo) / self.span * nb).astype(np.int64), nb - 1)
        key: IntArray = self.group[pos].astype(np.int64) * nb + b
        return key

    def runs_best(self, pos: npt.NDArray[np.integer], nb: int) -> npt.NDArray[np.integer]:
        """Of ``pos`` (positions grouped by group, ascending within a group), the
        first of the highest class in every run of one key (:meth:`keys`)."""
        key = self.keys(pos, nb)
        heads = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        run = np.repeat(np.arange(len(heads)), np.diff(np.r_[heads, len(key)]))
        del key
        c = self.cls[pos]
        cand = np.flatnonzero(np.maximum.reduceat(c, heads)[run] == c)
        del c, heads
        first = cand[np.r_[True, run[cand[1:]] != run[cand[:-1]]]]
        return pos[first]

    def best_of_runs(self, keep: npt.NDArray[np.integer], nb: int) -> npt.NDArray[np.integer]:
        """:meth:`runs_best` of ``keep``, a chunk of :data:`RUN_CHUNK` items at a
        time: its temporaries (about 50 bytes an item) are bounded by the chunk
        (over 1M events they were the window's peak at the end of a load).  A
        run cut by a chunk's edge leaves a candidate on each side: the later one
        replaces the earlier only if of a higher class (the first of the highest
        class of the run, as in one pass); a run over several chunks is merged
        from chunk to chunk."""
        if len(keep) <= RUN_CHUNK:
            return self.runs_best(keep, nb)
        parts: list[npt.NDArray[np.integer]] = []
        held: npt.NDArray[np.integer] | None = None  # the part ending with the last candidate
        last_key = -1  # and its key
        for i in range(0, len(keep), RUN_CHUNK):
            part = self.runs_best(keep[i:i + RUN_CHUNK], nb)
            ends = self.keys(part[[0, -1]], nb)
            if held is not None and int(ends[0]) == last_key:  # the run goes on
                if self.cls[part[0]] > self.cls[held[-1]]:
                    held[-1] = part[0]
                part = part[1:]
            if len(part):
                held, last_key = part, int(ends[1])
            parts.append(part)
        return np.concatenate(parts)


class BinnedItems:
    """Items (ids with ``x``, ``x_hi``, a group and a class) for fast viewport queries.

    ``ids`` None: the items are ``0..n-1`` (no array of them is made: a caller's
    argument stays referenced until the build returns, 8 bytes an event of the
    frame index as ``int64``)."""

    def __init__(
        self,
        ids: npt.NDArray[np.integer] | None,
        x: FloatArray,
        x_hi: FloatArray,
        group: npt.NDArray[np.integer],
        cls: npt.NDArray[np.integer],
    ) -> None:
        point = x_hi is x  # items without extent (events): one array serves both
        # (copies kept few and small: the index of 1M events is rebuilt while the
        # previous one serves frames, and their sum was the window's peak)
        ok = ~np.isnan(x) if point else ~(np.isnan(x) | np.isnan(x_hi))
        if not ok.all():
            # (no ids: the positions kept are the ids)
            ids = _narrow_ids(np.flatnonzero(ok)) if ids is None else ids[ok]
            x, group, cls = x[ok], group[ok], cls[ok]
            x_hi = x if point else x_hi[ok]
        del ok
        # permuted one array at a time, by int32 positions; ids 0..n-1 (the frame
        # index's events) sorted are the positions themselves
        order = _narrow_ids(np.argsort(x))
        ids = order if ids is None or _is_range(ids) else _narrow_ids(ids)[order]
        hi_sorted = None if point else x_hi[order]
        x = x[order]
        x_hi = x if hi_sorted is None else hi_sorted
        del hi_sorted
        group = _narrow_ids(group)[order]  # (messages: int64 pair keys)
        cls = cls[order]
        del order
        if point:  # no extents: none is long
            is_long = np.zeros(len(x), dtype=bool)
        else:
            ext = x_hi - x
            cut = float(np.percentile(ext, 99)) if len(ext) > 100 else np.inf
            is_long = ext > cut
            del ext
        self.n = len(ids)
        self.lo = float(x[0]) if len(x) else 0.0
        self.hi = float(x[-1]) if len(x) else 1.0
        span = max(self.hi - self.lo, 1e-300)
        lx = x[is_long]
        self.long = _sorted(ids[is_long], lx, lx if point else x_hi[is_long])
        if len(lx):  # the short ones, an array at a time (its whole is dropped at once)
            short = ~is_long
            sids = ids[short]
            del ids
            sg = group[short]
            del group
            sc = cls[short]
            del cls
            shi = x_hi[short]  # (items with extents: x_hi is not x)
            del x_hi
            sx = x[short]
            del x
        else:
            sx, sg, sc, sids, shi = x, group, cls, ids, x_hi
            del x, x_hi, ids, group, cls
        self.full = _sorted(sids, sx, shi)
        del is_long, lx
        # levels, finest first: (buckets over the span, sorted representatives)
        self.levels: list[tuple[int, _Sorted]] = []
        counts = _counts(sg)  # items per group
        present = int(np.count_nonzero(counts)) if len(sg) else 1
        nb = MIN_LEVEL_BUCKETS
        while nb * 2 <= len(sx) / (present * MIN_ITEMS_PER_BUCKET):
            nb *= 2
        keep = _grouped(sg, counts)  # positions in x order, grouped: keys ascend
        del counts
        prev = len(sx)
        items = _Items(sx, sg, sc, self.lo, span)
        while nb >= MIN_LEVEL_BUCKETS and len(keep):
            keep = items.best_of_runs(keep, nb)
            if len(keep) <= prev * LEVEL_SHRINK:
                at = np.sort(keep)
                lx = sx[at]
                self.levels.append((nb, _sorted(sids[at], lx, lx if point else shi[at])))
                prev = len(keep)
            nb //= 2

    def query(
        self, x0: float, x1: float, width_px: float, bucket_px: float, budget: int
    ) -> tuple[IntArray, int]:
        """Ids to draw for the ``x`` range ``[x0, x1]`` shown ``width_px`` pixels wide.

        All items meeting the range when at most ``budget`` do; otherwise the
        representatives of the finest level whose buckets are at least
        ``bucket_px`` pixels wide and which keeps at most ``budget`` items in
        range; a level's representatives may lie up to one bucket outside the
        range (the best of a bucket across its edge), and an item that only
        reaches into the range from a bucket outside it is represented by that
        bucket's best, which need not reach as far.  Returns ``(ids,
        buckets)`` where ``buckets`` is the level used (0: all items).  Long
        items are always all returned.
        """
        longs = self.long.clip(x0, x1)
        bound = self.full.count(x0, x1)  # counts items reaching back up to ``reach``
        if bound <= budget * EXACT_COUNT_FACTOR:
            every = self.full.clip(x0, x1)
            if len(every) <= budget:
                return np.concatenate([every, longs]), 0
        px_per_x = width_px / max(x1 - x0, 1e-300)
        span = max(self.hi - self.lo, 1e-300)
        for nb, level in self.levels:  # finest first
            if span / nb * px_per_x >= bucket_px and level.count(x0, x1) <= budget:
                return self._level(nb, level, x0, x1, longs), nb
        if self.levels:
            nb, level = self.levels[-1]
            return self._level(nb, level, x0, x1, longs), nb
        return np.concatenate([self.full.clip(x0, x1), longs]), 0

    def _level(self, nb: int, level: _Sorted, x0: float, x1: float, longs: IntArray) -> IntArray:
        # a bucket across an edge of the range may have its representative just outside
        bw = (self.hi - self.lo) / nb
        return np.concatenate([level.clip(x0 - bw, x1 + bw), longs])
