"""The zoomed-out view: activity per pixel column per row, and messages per rank pair.

When a viewport holds far more events than pixels, symbols pile into a carpet
that says nothing.  Summary timelines (Vampir's, for example) show instead what
each process was *doing* in every pixel column.  This module computes that,
Qt-free, with NumPy passes over the model's columns (no Python loop over
events):

* :func:`activity_density` gives, per row and pixel column, the share of the
  column's time a rank spent **blocked** (from a blocking ``recv`` to its
  ``consume``) and **in collectives** (from a ``coll`` to its ``coll_exit``),
  and how many **sends** and **receives** (a ``recv`` and its ``consume``
  count half each, so that a message is one of each) fall in it (and how
  many other events); :meth:`DensityGrid.dominant` names what dominates each cell and
  :func:`density_rgba` colours it (:data:`ACTIVITY_COLOURS`), brighter where
  there are more events.  Several ranks may share a row (a folded group):
  their shares are averaged.
* :func:`message_matrix` counts the messages sent in an ``x`` range per
  (sender, receiver), and :func:`fold_matrix` sums it per group of ranks.
* :func:`fold_ranks` groups ranks of similar behaviour (their activity over
  the whole run) so that 256 ranks or more fit in a few dozen readable rows.

Races, deadlocks and suspended ranks are not summarised: the diagram keeps
drawing them on top of the density (:mod:`mpvis.scene.race_marks`,
:mod:`mpvis.scene.deadlock_marks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING

if TYPE_CHECKING:
    from mpvis.scene.layout import Layout

__all__ = [
    "ACTIVITIES",
    "ACTIVITY_COLOURS",
    "DensityGrid",
    "activity_density",
    "density_rgba",
    "finite_span",
    "fold_matrix",
    "fold_ranks",
    "intervals",
    "is_dense",
    "message_matrix",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: What a cell can be dominated by, in the order of :attr:`DensityGrid.shares`' last axis.
ACTIVITIES: Final = ("sending", "receiving", "other", "collective", "blocked")
SENDING, RECEIVING, OTHER, COLLECTIVE, BLOCKED = range(5)
#: Their colours (RGB): blue sends, green receives, grey other events (waits,
#: states, locks...), orange collectives, red blocked.
ACTIVITY_COLOURS: Final = (
    (52, 101, 164), (78, 154, 6), (136, 138, 133), (245, 121, 0), (204, 0, 0))

_K = R.KIND_CODE
_SEND, _RECV, _CONSUME = _K[R.SEND], _K[R.RECV], _K[R.CONSUME]
_COLL, _COLL_EXIT = _K[R.COLL], _K[R.COLL_EXIT]


@dataclass(frozen=True)
class DensityGrid:
    """Activity of ``nrows`` rows over ``width`` pixel columns covering ``[x0, x1]``.

    ``shares[row, col, a]`` is, for activity ``a`` of :data:`ACTIVITIES`, the
    share of the cell's time (collective, blocked: ``0..1``, averaged over the
    row's ranks) or its event count (sending, receiving, other);
    ``events[row, col]`` counts the events in the cell.
    """

    x0: float
    x1: float
    shares: npt.NDArray[np.float32]
    events: npt.NDArray[np.int64]

    @property
    def nrows(self) -> int:
        return int(self.shares.shape[0])

    @property
    def width(self) -> int:
        return int(self.shares.shape[1])

    def weights(self) -> npt.NDArray[np.float32]:
        """Per cell and activity, comparable weights: time shares as they are, and
        the time left (not blocked, not in a collective) split between sending,
        receiving and other events in proportion to their counts."""
        s = self.shares
        waiting = np.clip(s[..., COLLECTIVE] + s[..., BLOCKED], 0.0, 1.0)
        # the three counts added in the order sum(axis=-1) adds them, without its
        # reduction over a short axis (eight times slower on 256 rows x 565 columns)
        total = (s[..., SENDING] + s[..., RECEIVING]) + s[..., OTHER]
        free = np.where(total > 0, (1.0 - waiting) / np.maximum(total, 1e-30), 0.0)
        out = s.copy()
        out[..., :COLLECTIVE] *= free[..., None]
        # a cell whose events all fall inside a wait still shows them, faintly
        out[..., :COLLECTIVE] += s[..., :COLLECTIVE] * 1e-6
        return out

    def dominant(self) -> npt.NDArray[np.int8]:
        """The index of the dominating activity of every cell, ``-1`` where nothing
        happens; on a tie the first in :data:`ACTIVITIES` (an even exchange of sends
        and receives shows as sending)."""
        w = self.weights()
        # argmax and max over the short last axis, an activity at a time (numpy's
        # reductions over it took 20 ms of a 256-rank frame; this 7): the first
        # of equal maxima stays, as argmax keeps it
        best = w[..., 0].copy()
        dom: npt.NDArray[np.int8] = np.zeros(best.shape, dtype=np.int8)
        for a in range(1, w.shape[-1]):
            col = w[..., a]
            dom[col > best] = a
            np.maximum(best, col, out=best)
        dom[best <= 0] = -1
        return dom


def _flat_index(layout: Layout) -> tuple[IntArray, IntArray]:
    """All laid-out events ordered by (rank, seq), and where each rank's run starts."""
    runs = [layout.rank_events(r) for r in range(layout.nprocs)]
    counts = np.fromiter((len(a) for a in runs), dtype=np.int64, count=layout.nprocs)
    start = np.zeros(layout.nprocs + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    flat = np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)
    return flat, start


def intervals(layout: Layout) -> tuple[IntArray, IntArray, IntArray]:
    """``(begin, end, activity)``: global event indices of every blocked and
    collective interval of the laid-out events.

    Blocked: a blocking ``recv`` and the ``consume`` that names it; collective:
    a ``coll_exit`` and the rank's latest ``coll`` before it.
    """
    m = layout.model
    n = layout.count
    kind = m.c_kind.view()[:n]
    flat, start = _flat_index(layout)
    begins: list[IntArray] = []
    ends: list[IntArray] = []
    acts: list[IntArray] = []
    # blocked: consume -> its recv (same rank, seq = ref), when that recv is blocking
    cons = np.flatnonzero(kind == _CONSUME)
    if len(cons):
        rank = m.c_rank.view()[cons].astype(np.int64)
        ref = m.c_ref.view()[cons].astype(np.int64)
        count = start[rank + 1] - start[rank]
        ok = (ref >= 0) & (ref < count)
        cons, rank, ref = cons[ok], rank[ok], ref[ok]
        recv = flat[start[rank] + ref]
        blocking = (m.c_kind.view()[recv] == _RECV) & ((m.c_flags.view()[recv] & F_BLOCKING) != 0)
        begins.append(recv[blocking])
        ends.append(cons[blocking])
        acts.append(np.full(int(blocking.sum()), BLOCKED, dtype=np.int64))
    # collective: coll_exit -> latest coll of its rank before it (in seq order)
    if len(flat):
        fk = kind[flat]
        pos = np.arange(len(flat), dtype=np.int64)
        last_coll = np.where(fk == _COLL, pos, -1)
        np.maximum.accumulate(last_coll, out=last_coll)
        exits = np.flatnonzero(fk == _COLL_EXIT)
        owner = np.searchsorted(start, exits, side="right") - 1
        lc = last_coll[exits]
        ok = lc >= start[owner]  # the coll is on the same rank
        begins.append(flat[lc[ok]])
        ends.append(flat[exits[ok]])
        acts.append(np.full(int(ok.sum()), COLLECTIVE, dtype=np.int64))
    if not begins:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    return np.concatenate(begins), np.concatenate(ends), np.concatenate(acts)


def event_activities(layout: Layout, start: int = 0) -> npt.NDArray[np.int8]:
    """The point activity of the laid-out events from ``start`` on: :data:`SENDING`
    (a send), :data:`RECEIVING` (a recv or a consume) or :data:`OTHER`; what
    :func:`activity_density` counts per cell (``acts``, kept by a caller between
    frames and extended as events come: an event's activity never changes)."""
    kind = layout.model.c_kind.view()[start: layout.count]
    out = np.full(len(kind), OTHER, dtype=np.int8)
    out[kind == _SEND] = SENDING
    out[(kind == _RECV) | (kind == _CONSUME)] = RECEIVING
    return out


def _add(out: npt.NDArray[np.float64] | npt.NDArray[np.int64], row: IntArray, col: IntArray,
         weights: FloatArray | float = 1.0) -> None:
    """``out[row, col] += weights``, repeated cells summed (``np.add.at``, but with
    ``np.bincount``: several times faster on a million cells)."""
    nrows, width = out.shape
    w = None if np.isscalar(weights) and weights == 1.0 else np.broadcast_to(weights, row.shape)
    counts = np.bincount(row * width + col, weights=w, minlength=nrows * width)
    out += counts[: nrows * width].reshape(nrows, width).astype(out.dtype, copy=False)


def _cover(out: npt.NDArray[np.float64], row: IntArray, a: FloatArray, b: FloatArray) -> None:
    """Add to ``out[row, col]`` the length of ``[a, b]`` (pixel units) inside column ``col``."""
    w = out.shape[1]
    a = np.clip(a, 0.0, float(w))
    b = np.clip(b, 0.0, float(w))
    keep = b > a
    row, a, b = row[keep], a[keep], b[keep]
    if not len(row):
        return
    ia = np.minimum(np.floor(a).astype(np.int64), w - 1)
    ib = np.minimum(np.floor(b).astype(np.int64), w - 1)
    same = ia == ib
    _add(out, row[same], ia[same], (b - a)[same])
    d = ~same
    r, ia, ib, a, b = row[d], ia[d], ib[d], a[d], b[d]
    _add(out, r, ia, ia + 1 - a)
    _add(out, r, ib, b - ib)
    # full columns ia+1 .. ib-1: a difference array along each row
    diff = np.zeros((out.shape[0], w + 1))
    _add(diff, r, ia + 1, 1.0)
    _add(diff, r, ib, -1.0)
    out += np.cumsum(diff, axis=1)[:, :w]


def empty_grid(layout: Layout, row_of_rank: IntArray | None, nrows: int | None,
               width: int) -> tuple[IntArray, int, npt.NDArray[np.float64], IntArray]:
    """What :func:`activity_density` fills, zeroed: ``row_of_rank`` (default the
    layout's rows) as int64, the width (at least 1), the time shares
    ``(nrows, width, activities)`` and the event counts ``(nrows, width)``;
    ``nrows`` defaults to one more than the largest row."""
    rows = np.asarray(layout.rows if row_of_rank is None else row_of_rank, dtype=np.int64)
    if nrows is None:
        nrows = int(rows.max()) + 1 if len(rows) else 0
    width = max(int(width), 1)
    return (rows, width, np.zeros((nrows, width, len(ACTIVITIES)), dtype=np.float64),
            np.zeros((nrows, width), dtype=np.int64))


def activity_density(
    layout: Layout,
    logical: bool,
    x0: float,
    x1: float,
    width: int,
    *,
    row_of_rank: IntArray | None = None,
    nrows: int | None = None,
    spans: tuple[IntArray, IntArray, IntArray] | None = None,
    ids: IntArray | None = None,
    acts: npt.NDArray[np.int8] | None = None,
) -> DensityGrid:
    """The activity of every row over ``width`` pixel columns covering ``[x0, x1]``.

    ``row_of_rank[r]`` is rank ``r``'s row (``-1``: not shown); by default the
    layout's rows.  Ranks sharing a row are averaged (time shares) or summed
    (event counts).  ``spans``: :func:`intervals` of the layout, when the caller
    keeps them between frames.  ``ids``: the events that may lie in ``[x0, x1]``
    (a superset; e.g. from the frame index's ``x``-sorted events), so that a
    frame costs the visible events, not all of them; default every event (also
    when ``ids`` holds half of them or more: one pass in order costs less).
    ``acts``: :func:`event_activities` of at least the laid-out events, when the
    caller keeps them between frames.
    """
    row_of_rank, width, shares, events = empty_grid(layout, row_of_rank, nrows, width)
    nrows = len(events)
    n = layout.count
    span = x1 - x0
    if n == 0 or nrows == 0 or not span > 0:
        return DensityGrid(x0, x1, shares.astype(np.float32), events)
    scale = width / span
    x_all = layout.x(logical)[:n]
    rank_all = layout.ranks
    act_all = acts[:n] if acts is not None and len(acts) >= n else event_activities(layout)
    if ids is not None and 2 * len(ids) >= n:
        ids = None  # most events: a sequential pass costs less than gathering them
    if ids is None:
        xs, ranks, point = x_all, rank_all, act_all
    else:
        ids = np.asarray(ids, dtype=np.int64)
        ids = ids[ids < n]
        xs, ranks, point = x_all[ids], rank_all[ids], act_all[ids]
    rows = row_of_rank[ranks]
    px = (xs - x0) * scale
    inside = (rows >= 0) & (px >= 0) & (px < width)  # NaN x: not inside
    # one count per (row, column, point activity): the events are their sum; a
    # message is one send and one receive, so its recv and its consume count half each
    key = (rows[inside] * width + px[inside].astype(np.int64)) * 3 + point[inside]
    cells = np.bincount(key, minlength=nrows * width * 3).reshape(nrows, width, 3)
    events += cells.sum(axis=2)
    shares[..., SENDING] = cells[..., SENDING]
    shares[..., RECEIVING] = 0.5 * cells[..., RECEIVING]
    shares[..., OTHER] = cells[..., OTHER]
    begin, end, act_of = spans if spans is not None else intervals(layout)
    if len(begin):
        ra = row_of_rank[rank_all[begin].astype(np.int64)]
        a, b = (x_all[begin] - x0) * scale, (x_all[end] - x0) * scale
        ok = (ra >= 0) & np.isfinite(a) & np.isfinite(b)
        for act in (COLLECTIVE, BLOCKED):
            sel = ok & (act_of == act)
            cover = np.zeros((nrows, width))
            _cover(cover, ra[sel], a[sel], b[sel])
            shares[..., act] = cover
        per_row = np.bincount(row_of_rank[row_of_rank >= 0], minlength=nrows)[:nrows]
        shares[..., COLLECTIVE:] /= np.maximum(per_row, 1)[:, None, None]
    return DensityGrid(x0, x1, shares.astype(np.float32), events)


def is_dense(events_in_view: float, width_px: int, rows: int, per_px: float = 0.5) -> bool:
    """Whether symbols would pile up: more than ``per_px`` events per pixel column
    per row on average, the point where the diagram switches to the density view."""
    return events_in_view > per_px * max(width_px, 1) * max(rows, 1)


def density_rgba(grid: DensityGrid, background: tuple[int, int, int] = (255, 255, 255)
                 ) -> npt.NDArray[np.uint8]:
    """An RGBA image ``(nrows, width, 4)``: each cell in its dominant activity's
    colour, blended with ``background`` by how busy it is (the log of its event
    count, relative to the busiest cell; a cell only covered by a wait counts as
    moderately busy); empty cells are transparent."""
    dom = grid.dominant()
    ev = grid.events.astype(np.float64)
    top = np.log1p(ev.max()) if ev.size and ev.max() > 0 else 1.0
    busy = np.log1p(ev) / top
    waiting = (np.maximum(grid.shares[..., COLLECTIVE], grid.shares[..., BLOCKED])
               if grid.shares.size else busy)
    level = np.clip(np.maximum(busy, 0.6 * np.minimum(waiting, 1.0)), 0.0, 1.0)
    level = 0.35 + 0.65 * level  # the faintest activity stays visible
    colours = np.asarray(ACTIVITY_COLOURS, dtype=np.float64)
    bg = np.asarray(background, dtype=np.float64)
    rgb = bg + (colours[np.maximum(dom, 0)] - bg) * level[..., None]
    out = np.zeros((*dom.shape, 4), dtype=np.uint8)
    out[..., :3] = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    out[..., 3] = np.where(dom >= 0, 255, 0).astype(np.uint8)
    return out


def message_matrix(layout: Layout, logical: bool, x0: float = -np.inf, x1: float = np.inf
                   ) -> IntArray:
    """``(nprocs, nprocs)`` counts of messages consumed whose send lies in ``[x0, x1]``:
    ``[sender, receiver]``."""
    m = layout.model
    n = layout.count
    p = layout.nprocs
    kind = m.c_kind.view()[:n]
    cons = np.flatnonzero(kind == _CONSUME)
    partner = m.c_partner.view()[cons].astype(np.int64)
    cons, send = cons[partner >= 0], partner[partner >= 0]
    send_ok = send < n
    cons, send = cons[send_ok], send[send_ok]
    xs = layout.x(logical)[:n][send]
    keep = (xs >= x0) & (xs <= x1)
    src = m.c_rank.view()[send[keep]].astype(np.int64)
    dst = m.c_rank.view()[cons[keep]].astype(np.int64)
    return np.bincount(src * p + dst, minlength=p * p)[: p * p].reshape(p, p).astype(np.int64)


def fold_matrix(matrix: IntArray, group_of_rank: IntArray, ngroups: int) -> IntArray:
    """A rank-to-rank matrix summed per group (``group_of_rank[r]``, ``-1``: left out)."""
    g = np.asarray(group_of_rank, dtype=np.int64)
    keep = g >= 0
    sub = matrix[np.ix_(keep, keep)]
    gk = g[keep]
    out = np.zeros((ngroups, ngroups), dtype=np.int64)
    np.add.at(out, (gk[:, None], gk[None, :]), sub)
    return out


#: ``grid(x0, x1, width, row_of_rank, nrows)``: what :func:`activity_density` gives
#: for the layout (e.g. :meth:`mpvis.scene.density_index.DensityIndex.grid`).
GridOf = Callable[[float, float, int, "IntArray", int], DensityGrid]


def finite_span(xs: FloatArray) -> tuple[float, float] | None:
    """The least and the greatest finite value of ``xs`` (``None``: none is).
    Two passes that skip NaN, no copy of the finite values (at ten million
    events the copy, 80 MB, was most of folding 256 ranks at the end of a load);
    the copy only when an infinity is there."""
    if not len(xs):
        return None
    with np.errstate(invalid="ignore"):
        lo, hi = float(np.fmin.reduce(xs)), float(np.fmax.reduce(xs))
    if math.isnan(lo):  # every value NaN
        return None
    if math.isinf(lo) or math.isinf(hi):
        finite = xs[np.isfinite(xs)]
        return (float(finite.min()), float(finite.max())) if len(finite) else None
    return lo, hi


def _signatures(layout: Layout, logical: bool, bins: int, grid_of: GridOf | None = None
                ) -> FloatArray:
    """Per rank, its activity over the run: ``bins`` time bins x activities, each
    rank's vector normalised to sum 1 (zero for a rank without events)."""
    span = finite_span(layout.x(logical)[: layout.count])
    if span is None:
        return np.zeros((layout.nprocs, bins * len(ACTIVITIES)))
    lo, hi = span
    hi += max((hi - lo) * 1e-9, 1e-12)
    each = np.arange(layout.nprocs, dtype=np.int64)
    grid = (grid_of(lo, hi, bins, each, layout.nprocs) if grid_of is not None else
            activity_density(layout, logical, lo, hi, bins, row_of_rank=each,
                             nrows=layout.nprocs))
    sig = grid.weights().reshape(layout.nprocs, -1).astype(np.float64)
    total = sig.sum(axis=1, keepdims=True)
    shares: npt.NDArray[np.float64] = np.divide(sig, total, out=np.zeros_like(sig),
                                                where=total > 0)
    return shares


def fold_ranks(layout: Layout, logical: bool, max_groups: int = 32, bins: int = 32,
               grid_of: GridOf | None = None) -> list[list[int]]:
    """Ranks grouped by similar behaviour, at most ``max_groups`` groups.

    ``grid_of``: the layout's activity grids computed otherwise than by a pass
    over its events (a :class:`~mpvis.scene.density_index.DensityIndex`'s).

    Each rank's signature is its activity over ``bins`` bins of the whole run
    (:func:`activity_density` with one row per rank).  Ranks are taken in
    order and join the first group whose first rank's signature is within a
    distance (L1) of theirs, else open a group; the distance grows (doubling
    from 0.05) until at most ``max_groups`` groups remain.  Deterministic;
    every rank is in exactly one group; groups are listed by their first rank,
    ranks ascending within a group.
    """
    p = layout.nprocs
    if p <= max_groups:
        return [[r] for r in range(p)]
    sig = _signatures(layout, logical, bins, grid_of)
    limit = 0.05
    while True:
        leaders: list[int] = []
        members: list[list[int]] = []
        lead_sig = np.zeros((0, sig.shape[1]))
        for r in range(p):
            if leaders:
                d = np.abs(lead_sig - sig[r]).sum(axis=1)
                j = int(np.argmin(d))
                if d[j] <= limit:
                    members[j].append(r)
                    continue
            leaders.append(r)
            members.append([r])
            lead_sig = np.vstack([lead_sig, sig[r]])
            if len(leaders) > max_groups:
                break
        if len(leaders) <= max_groups:
            return members
        limit *= 2
