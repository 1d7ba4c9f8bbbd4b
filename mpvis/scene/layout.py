"""Coordinates of every event: a real-time layout and a logical layout.

The space-time diagram (``mpvisualizer-race-detection.txt`` section 2) puts
processes on one axis and time on the other, and "is consistent with the
happened-before relation".  Two layouts of the time axis:

* **real time**: ``x`` is the event's wall-clock ``t`` (seconds since the
  first ``t`` seen); an event without ``t`` takes its rank's previous ``x``.
  Clocks of different ranks are not synchronized (trace format), so a message
  line may slant backwards here.
* **logical**: ``x`` is the model's Lamport clock (``ModelManager.c_lamport``,
  computed as events are processed in causal order): ``x(e) = max(x(prev) + 1,
  x(send) + 1)`` for a consume, and for a ``coll_exit`` one more than the
  latest entry it depends on.  If ``a`` happened before ``b`` then
  ``x(a) < x(b)``: every message line goes forward.  Events not yet causally
  processed have ``x = NaN`` until their causes arrive.

:class:`Layout` is incremental: :meth:`Layout.update` extends the arrays to the
model's current events, so a live run costs work proportional to what is new.
The logical ``x`` are kept from their first use on (:attr:`Layout.x_logical`;
at once without wall clocks): a trace only looked at in real time never holds
them (8 bytes per event).
Rows: ``rows[rank]`` is the rank's row (``-1`` when hidden); ``y = rows[rank]``.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from mpvis.protocol import records as rec_kinds
from mpvis.scene.symbols import classify

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_CONSUME = rec_kinds.KIND_CODE[rec_kinds.CONSUME]
_COLL_EXIT = rec_kinds.KIND_CODE[rec_kinds.COLL_EXIT]


class Layout:
    """Per-event coordinates of one model, kept up to date incrementally."""

    def __init__(self, model: ModelManager) -> None:
        self.model = model
        n = model.nprocs
        self.nprocs = n
        self.count = 0  # events laid out in real time (and classified)
        self._t0: float | None = None
        self._real = array("d")
        self._logical = array("d")
        self._cls = np.zeros(0, dtype=np.int8)
        self.has_time = False
        #: set while another thread computes the logical clocks (see :meth:`update`)
        self.logical_pending = False
        self.rows = np.arange(n, dtype=np.float64)
        self._y_cache: npt.NDArray[np.float32] | None = None
        self._y_count = 0  # rows of the first events in _y_cache
        # bounds(logical) of the events laid out so far: a pass over every x, asked
        # for by every paint (the graphics items' bounding rectangles)
        self._bounds: dict[bool, tuple[float, float]] = {}
        self._real_span: tuple[float, float] | None = None  # min, max of the real x so far
        self._logical_done = 0  # events before this one all have their logical x
        self._logical_on = False  # the logical x are kept (asked for once)

    # -------------------------------------------------------------- access
    @property
    def x_real(self) -> FloatArray:
        return np.frombuffer(self._real, dtype=np.float64) if self._real else np.zeros(0)

    @property
    def x_logical(self) -> FloatArray:
        """The logical ``x``, kept from this first use on; an empty layout's are
        asked for without keeping them (a window shows a trace empty before its
        first events bring wall clocks: 8 bytes an event never looked at, and
        their updates, on every trace)."""
        if not self._logical_on:
            if not self.count:
                return np.zeros(0)
            self._use_logical()
        return np.frombuffer(self._logical, dtype=np.float64) if self._logical else np.zeros(0)

    @property
    def keeps_logical(self) -> bool:
        """Whether the logical ``x`` are kept (asked for once events were laid out)."""
        return self._logical_on

    def x(self, logical: bool) -> FloatArray:
        """The x of every event in the chosen layout (NaN: not laid out yet)."""
        return self.x_logical if logical or not self.has_time else self.x_real

    @property
    def cls(self) -> npt.NDArray[np.int8]:
        """Symbol class of every event (:mod:`mpvis.scene.symbols`)."""
        return self._cls[: self.count]

    @property
    def ranks(self) -> npt.NDArray[np.int32]:
        return self.model.c_rank.view()[: self.count]  # type: ignore[return-value]  # c_rank is an "i" column: int32

    @property
    def y(self) -> npt.NDArray[np.float32]:
        """Row of every event (-1 when its rank is hidden); ``float32``, exact for
        rows below 2**24 (4 bytes an event less than ``float64``)."""
        y, n = self._y_cache, self._y_count
        if y is None or n > self.count:
            y = self._y_cache = self.rows[self.ranks].astype(np.float32)
            n = self._y_count = self.count
        elif n < self.count:  # rows of the new events only, in a buffer grown by doubling
            if len(y) < self.count:  # by a quarter: the slack is never given back
                grown = np.empty(max(self.count, len(y) + len(y) // 4), dtype=np.float32)
                grown[:n] = y[:n]
                y = self._y_cache = grown
            y[n:self.count] = self.rows[self.ranks[n:]]
            self._y_count = self.count
        return y[: self.count]

    def set_rows(self, order: list[int], hidden: set[int] | None = None) -> None:
        """Show ranks top to bottom in ``order``; ranks in ``hidden`` or not listed vanish."""
        hidden = hidden or set()
        rows = np.full(self.nprocs, -1.0)
        row = 0
        for r in order:
            if r not in hidden and 0 <= r < self.nprocs:
                rows[r] = row
                row += 1
        self.rows = rows
        self._y_cache = None

    @property
    def visible_rows(self) -> int:
        return int((self.rows >= 0).sum())

    def rank_events(self, rank: int) -> IntArray:
        """Global indices of ``rank``'s events laid out, in seq order."""
        ev = self.model.by_rank[rank]
        a = np.frombuffer(ev, dtype=np.int64) if ev else np.zeros(0, dtype=np.int64)
        return a[a < self.count]

    # -------------------------------------------------------------- update
    def update(self, logical: bool = True) -> tuple[int, int]:
        """Lay out what is new in the model; returns the new real-time range ``(start, stop)``.

        ``logical=False`` leaves the logical coordinates for a later
        :meth:`update_logical`.  While :attr:`logical_pending` is set,
        ``update`` never touches them.
        """
        m = self.model
        start, stop = self.count, m.event_count
        if stop > start:
            self._extend_real(start, stop)
            self._extend_cls(start, stop)
            if self._logical_on:
                self._logical.frombytes(np.full(stop - start, np.nan).tobytes())
            self.count = stop
            self._bounds.clear()
        if logical and not self.logical_pending and self._logical_on:
            self._extend_logical()
        return start, stop

    def update_logical(self) -> None:
        """Lamport clocks of every causally processed event laid out so far."""
        if not self._logical_on:
            self._use_logical()
        self._extend_logical()

    def _use_logical(self) -> None:
        """Keep the logical ``x`` from now on: every event's, NaN until computed
        (computed now unless another thread is at it: :attr:`logical_pending`)."""
        self._logical_on = True
        self._logical.frombytes(np.full(self.count, np.nan).tobytes())
        self._logical_done = 0
        if not self.logical_pending:
            self._extend_logical()

    @property
    def logical_ready(self) -> bool:
        """Whether every laid-out, causally processed event has its logical ``x``."""
        return not self.logical_pending

    def _extend_cls(self, start: int, stop: int) -> None:
        m = self.model
        new = classify(
            m.c_kind.view()[start:stop],
            m.c_flags.view()[start:stop],
            m.c_peer.view()[start:stop],
            m.c_tag.view()[start:stop],
        )
        if len(self._cls) < stop:
            grown = np.zeros(max(stop, len(self._cls) + len(self._cls) // 4), dtype=np.int8)
            grown[:start] = self._cls[:start]
            self._cls = grown
        self._cls[start:stop] = new

    def _extend_real(self, start: int, stop: int) -> None:
        m = self.model
        t = m.c_t.view()[start:stop].astype(np.float64)
        known = ~np.isnan(t)
        if known.any():
            if self._t0 is None:
                self._t0 = float(t[known].min())
            self.has_time = True
        t0 = self._t0 or 0.0
        self._real.frombytes((t - t0).tobytes())
        if known.any():  # (an event without t gets its rank's previous x: inside)
            lo, hi = float(np.nanmin(t)) - t0, float(np.nanmax(t)) - t0
            old = self._real_span
            self._real_span = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
        real = self._real
        missing = np.flatnonzero(~known)
        if len(missing):
            ranks, seqs = m.c_rank.view(), m.c_seq.view()
            for i in missing:  # rare: events without a time take their rank's previous x
                g = start + int(i)
                s = int(seqs[g])
                real[g] = real[m.by_rank[int(ranks[g])][s - 1]] if s > 0 else 0.0

    def _extend_logical(self) -> None:
        """Logical ``x``: the model's Lamport clocks (NaN until causally processed).
        An event's clock, once computed, stays: only events from the first one
        still without a clock on are read again."""
        lo = self._logical_done
        lam = self.model.c_lamport.view()[lo: self.count].astype(np.float64)
        pending = np.flatnonzero(lam < 0)
        lam[pending] = np.nan
        np.frombuffer(self._logical, dtype=np.float64)[lo: self.count] = lam
        self._logical_done = lo + (int(pending[0]) if len(pending) else len(lam))
        self._bounds.pop(True, None)

    # ------------------------------------------------------------ extents
    def bounds(self, logical: bool) -> tuple[float, float]:
        """``(xmin, xmax)`` of the laid-out events (``(0, 1)`` when none)."""
        got = self._bounds.get(logical)
        if got is None:
            got = self._bounds[logical] = self._compute_bounds(logical)
        return got

    def _compute_bounds(self, logical: bool) -> tuple[float, float]:
        if not logical and self.has_time and self._real_span is not None:
            lo, hi = self._real_span  # kept as events come: no pass over them
            return lo, (hi if hi > lo else lo + 1.0)
        x = self.x(logical)[: self.count]
        x = x[~np.isnan(x)]
        if not len(x):
            return 0.0, 1.0
        lo, hi = float(x.min()), float(x.max())
        return lo, (hi if hi > lo else lo + 1.0)
