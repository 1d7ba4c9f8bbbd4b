"""The zoomed-out view's numbers kept incrementally: a frame costs binary searches.

:func:`~mpvis.scene.density.activity_density` makes a pass over every event in
view: for a whole run of ten million events, seconds of the GUI thread per
frame while a trace loads (issue 16).  :class:`DensityIndex` keeps instead,
per rank,

* the ``x`` of its events of each point activity (sending, receiving,
  other; :func:`~mpvis.scene.density.event_activities`), sorted;
* the begins and the ends of its blocked and collective intervals
  (:func:`~mpvis.scene.density.intervals`), each sorted, with their prefix sums,

extended by :meth:`DensityIndex.update` as the layout grows (work in
proportion to the new events).  The events of a rank in an ``x`` range are
then two binary searches, and so is the time its intervals cover there: with
``a`` the sorted begins and ``b`` the sorted ends, the length of the
intervals' union-with-repeats left of ``t`` is
``F(t) = sum(t - a_i for a_i < t) - sum(t - b_j for b_j < t)``, two binary
searches and two prefix sums; a column ``[t0, t1)`` is covered
``F(t1) - F(t0)``.  :meth:`DensityIndex.grid` gives the same
:class:`~mpvis.scene.density.DensityGrid` as ``activity_density`` (up to
rounding at column edges) for any range and width, at a cost in proportion
to ranks times columns.  (A column's covered share is exact up to rounding,
below :data:`COVER_EPS` it is taken as none.)

Events without an ``x`` yet (a logical layout's events not causally processed)
wait, and so do intervals with an end without one: each update looks at them
again.  Within a rank, ``x`` is normally non-decreasing as events come (real
time per process, Lamport clocks), so new values are appended; a value below
a rank's last one re-sorts that rank's column (a clock going back).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mpvis.model.races import gather_gidx
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING
from mpvis.scene import _cdensity
from mpvis.scene.density import (
    BLOCKED,
    COLLECTIVE,
    OTHER,
    RECEIVING,
    SENDING,
    DensityGrid,
    empty_grid,
    event_activities,
)
from mpvis.scene.layout import Layout

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_K = R.KIND_CODE
_RECV, _CONSUME = _K[R.RECV], _K[R.CONSUME]
_COLL, _COLL_EXIT = _K[R.COLL], _K[R.COLL_EXIT]
#: A column covered less than this share by a rank's intervals counts as not
#: covered: ``F(t1) - F(t0)`` subtracts prefix sums of large values, whose
#: rounding leaves about ``1e-10`` in columns no interval meets.
COVER_EPS = 1e-6
#: Point activities and interval activities, in the order of the index's columns.
_POINTS = (SENDING, RECEIVING, OTHER)
_SPANS = (COLLECTIVE, BLOCKED)
_POINT_ACTS, _SPAN_ACTS = (np.array(acts, dtype=np.int64) for acts in (_POINTS, _SPANS))


def _key(x: FloatArray) -> IntArray:
    """Floats as integers in the same order (consecutive floats: consecutive keys)."""
    i = x.view(np.int64)
    return np.where(i >= 0, i, -(i & _MAGNITUDE))


def _float(k: IntArray) -> FloatArray:
    """The inverse of :func:`_key`."""
    bits = np.where(k >= 0, k, (-k) | _SIGN)
    return bits.view(np.float64)


_MAGNITUDE = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_SIGN = np.int64(-0x8000_0000_0000_0000)


def column_edges(x0: float, scale: float, width: int) -> FloatArray:
    """``edges[c]``: the least float ``x`` with ``(x - x0) * scale >= c``, for
    ``c = 0..width``: the events of column ``c`` as
    :func:`~mpvis.scene.density.activity_density` bins them (``int((x - x0) *
    scale)``) are exactly those in ``[edges[c], edges[c + 1])``.  The binning
    is monotone in ``x``, so the edge is found by bisection over the floats
    around ``x0 + c / scale`` (rounding of ``x - x0`` can put it many ulps of
    ``x`` away).  Next to ``x0 = 0``, where ``x - x0`` underflows, the edge of
    column 0 may be a subnormal number below zero: no event's ``x``."""
    c = np.arange(width + 1, dtype=np.float64)

    def past(k: IntArray) -> npt.NDArray[np.bool_]:
        with np.errstate(invalid="ignore", over="ignore"):
            return (_float(k) - x0) * scale >= c

    k = _key(x0 + c / scale)
    lo, hi = k - 1, k + 1  # bracket: past(lo) false, past(hi) true
    step = 1
    for _ in range(62):
        low_bad, high_bad = past(lo), ~past(hi)
        if not (low_bad.any() or high_bad.any()):
            break
        lo = np.where(low_bad, lo - step, lo)
        hi = np.where(high_bad, hi + step, hi)
        step *= 2
    while (hi - lo > 1).any():
        mid = lo + (hi - lo) // 2
        p = past(mid)
        hi, lo = np.where(p, mid, hi), np.where(p, lo, mid)
    return _float(hi)


class DensityIndex:
    """The sorted columns of one layout on one time axis (see the module docstring)."""

    def __init__(self, layout: Layout, logical: bool) -> None:
        self.layout = layout
        self.logical = logical
        p = layout.nprocs
        #: rank r's events of point activity ``_POINTS[a]``: column ``r * 3 + a``
        self.points = _cdensity.Columns(p * len(_POINTS), False)
        #: the begins and the ends of rank r's intervals of ``_SPANS[a]``, with
        #: their prefix sums: column ``r * 2 + a`` of each
        self.begins = _cdensity.Columns(p * len(_SPANS), True)
        self.ends = _cdensity.Columns(p * len(_SPANS), True)
        #: events of the layout looked at so far (``[0, done)``)
        self.done = 0
        self._waiting = np.zeros(0, dtype=np.int64)  # events without x yet
        self._waiting_spans = np.zeros((0, 3), dtype=np.int64)  # (begin, end, act) ditto
        self._last_coll = np.full(p, -1, dtype=np.int64)  # per rank, its latest coll so far
        self._acts = np.zeros(0, dtype=np.int8)

    def update(self) -> None:
        """Take in the layout's new events, and those that got their ``x`` since."""
        lay = self.layout
        start, stop = self.done, lay.count
        spans = self._new_spans(start, stop)
        if stop > start:
            self._acts = np.concatenate([self._acts, event_activities(lay, start)])
        x = lay.x(self.logical)
        cand = np.concatenate([self._waiting, np.arange(start, stop, dtype=np.int64)])
        ok = ~np.isnan(x[cand])
        self._waiting = cand[~ok]
        self._add_points(cand[ok], x)
        spans = np.concatenate([self._waiting_spans, spans])
        ok = ~np.isnan(x[spans[:, 0]]) & ~np.isnan(x[spans[:, 1]])
        self._waiting_spans = spans[~ok]
        self._add_spans(spans[ok], x)
        self.done = stop
        if lay.model.input_ended and stop == lay.model.event_count and not len(self._waiting) \
                and not len(self._waiting_spans):
            self.trim()

    def trim(self) -> None:
        """Every column without room for growth (done once the input ended and every
        event is in)."""
        for cols in (self.points, self.begins, self.ends):
            cols.trim()

    def _add_points(self, ids: IntArray, x: FloatArray) -> None:
        if not len(ids):
            return
        ranks = self.layout.model.c_rank.view()[ids].astype(np.int64)
        self.points.add(ranks * len(_POINTS) + self._acts[ids], x[ids])

    def _add_spans(self, spans: IntArray, x: FloatArray) -> None:
        if not len(spans):
            return
        ranks = self.layout.model.c_rank.view()[spans[:, 0]].astype(np.int64)
        act = (spans[:, 2] == BLOCKED).astype(np.int64)  # 0: collective, 1: blocked
        key = ranks * len(_SPANS) + act
        self.begins.add(key, x[spans[:, 0]])
        self.ends.add(key, x[spans[:, 1]])

    def _new_spans(self, start: int, stop: int) -> IntArray:
        """``(k, 3)`` rows ``(begin, end, activity)``: the blocked and collective
        intervals that end among events ``start..stop`` (as
        :func:`~mpvis.scene.density.intervals` finds them)."""
        out = [np.zeros((0, 3), dtype=np.int64)]
        if stop <= start:
            return out[0]
        m = self.layout.model
        kind = m.c_kind.view()[start:stop]
        rank = m.c_rank.view()[start:stop].astype(np.int64)
        g = np.arange(start, stop, dtype=np.int64)
        # blocked: a consume and the blocking recv its ref names (that rank's seq)
        cons = np.flatnonzero(kind == _CONSUME)
        ref = m.c_ref.view()[start:stop][cons].astype(np.int64)
        held = np.array([len(events) for events in m.by_rank], dtype=np.int64)
        ok = (ref >= 0) & (ref < held[rank[cons]])
        cons = cons[ok]
        recv = gather_gidx(m.by_rank, rank[cons], ref[ok])
        flags = np.asarray(m.c_flags.view()[recv], dtype=np.int64)
        blocking = (m.c_kind.view()[recv] == _RECV) & ((flags & F_BLOCKING) != 0)
        out.append(np.column_stack([recv[blocking], g[cons[blocking]],
                                    np.full(int(blocking.sum()), BLOCKED)]))
        # collective: an exit and its rank's latest coll before it (a running
        # maximum per rank: the ranks apart, each its own band of values)
        cc = np.flatnonzero((kind == _COLL) | (kind == _COLL_EXIT))
        if len(cc):
            order = np.argsort(rank[cc], kind="stable")
            cc = cc[order]
            r = rank[cc]
            firsts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
            last = np.where(kind[cc] == _COLL, g[cc], -1)
            last[firsts] = np.maximum(last[firsts], self._last_coll[r[firsts]])
            band = np.cumsum(np.r_[False, r[1:] != r[:-1]]) * (stop + 2)
            last = np.maximum.accumulate(last + band) - band
            is_exit = kind[cc] == _COLL_EXIT
            begin = last[is_exit]
            ok = begin >= 0
            out.append(np.column_stack([begin[ok], g[cc][is_exit][ok],
                                        np.full(int(ok.sum()), COLLECTIVE)]))
            lasts = np.r_[firsts[1:], len(cc)] - 1
            self._last_coll[r[firsts]] = last[lasts]
        return np.concatenate(out).astype(np.int64)

    def counts(self, edges: FloatArray) -> IntArray:
        """``(nprocs, len(edges) - 1)``: each rank's events with ``edges[i] <= x <
        edges[i + 1]``, the last bin closed (``x <= edges[-1]``), as
        ``np.histogram`` bins them."""
        edges = np.asarray(edges, dtype=np.float64)
        out = np.zeros((self.layout.nprocs, max(len(edges) - 1, 0)), dtype=np.int64)
        if len(edges) >= 2:
            self.points.counts(edges, len(_POINTS), out)
        return out

    def grid(self, x0: float, x1: float, width: int, row_of_rank: IntArray | None = None,
             nrows: int | None = None) -> DensityGrid:
        """:func:`~mpvis.scene.density.activity_density` of the events taken in, from
        the sorted columns (the same arguments: ``row_of_rank``, ``nrows``)."""
        lay = self.layout
        row_of_rank, width, shares, events = empty_grid(lay, row_of_rank, nrows, width)
        nrows = len(events)
        span = x1 - x0
        if nrows == 0 or not span > 0:
            return DensityGrid(x0, x1, shares.astype(np.float32), events)
        scale = width / span
        edges = column_edges(x0, scale, width)
        # every rank's columns along the edges at once, in C (each rank's were about
        # 15 NumPy calls: 51 ms a frame at 256 ranks); the same sums in the same order
        _cdensity.fill(self.points, self.begins, self.ends, row_of_rank[: lay.nprocs],
                       _POINT_ACTS, _SPAN_ACTS, edges, scale, COVER_EPS, events, shares)
        shares[..., RECEIVING] *= 0.5  # a message is one send and one receive
        per_row = np.bincount(row_of_rank[row_of_rank >= 0], minlength=nrows)[:nrows]
        shares[..., COLLECTIVE:] /= np.maximum(per_row, 1)[:, None, None]
        return DensityGrid(x0, x1, shares.astype(np.float32), events)
