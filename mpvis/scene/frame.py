"""What one frame of the diagram draws, from geometry cached per layout (Qt-free).

A :class:`FrameIndex` is built once per laid-out state (a layout, a time axis,
a number of events): every event and every matched message goes into a
:class:`~mpvis.scene.binned.BinnedItems`, so a frame costs two binary
searches and a slice whose length is bounded by the viewport, at every zoom
level.  Rows are applied at frame time (hiding or reordering ranks keeps the
index).  The diagram rebuilds the index when the model grows or the time axis
is toggled.

Painting cost is what bounds a frame: Qt's software painter spends time in
proportion to the pixels a line covers, so besides a cap on the number of
symbols :meth:`FrameIndex.frame` caps the *total on-screen length* of the
message lines it hands out inside the viewport (:data:`LINE_PIXELS`; Qt
clips the rest cheaply), keeping an even subset in ``x`` (a prefix of a
golden-ratio order) and always the lines named in ``keep``.  :class:`Frame`
says how many messages were in view and how many are drawn, for the legend.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mpvis.scene.binned import BinnedItems
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport
from mpvis.scene.messages import MessageIndex

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Below this many events in view every one is drawn.
MAX_SYMBOLS = 12_000
#: At most this many message lines go to the painter...
MAX_LINES = 6_000
#: ... and at most this many pixels of line length in all.
LINE_PIXELS = 250_000
#: Buckets of the zoomed-out levels are at least this wide on screen.
BUCKET_PX = 8.0
_GOLDEN = (5**0.5 - 1) / 2
#: Symbols within this many pixels outside the viewport are drawn (they overlap it).
MARGIN_PX = 12.0


@dataclass(frozen=True)
class Frame:
    """What to draw: event indices, message rows (into the :class:`MessageIndex`), counts."""

    events: IntArray
    messages: IntArray
    messages_in_view: int  # at full resolution (an upper bound when decimated)
    events_decimated: bool

    @property
    def messages_decimated(self) -> bool:
        return len(self.messages) < self.messages_in_view


def visible_pixels(
    x0: FloatArray, y0: FloatArray, x1: FloatArray, y1: FloatArray, view: Viewport
) -> FloatArray:
    """On-screen length in pixels of each segment's part inside ``view`` (Liang-Barsky)."""
    dx, dy = x1 - x0, y1 - y0
    lo, hi = np.zeros(len(x0)), np.ones(len(x0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for p, a, b in ((dx, view.x0 - x0, view.x1 - x0), (dy, view.y0 - y0, view.y1 - y0)):
            ta, tb = a / p, b / p
            t_in, t_out = np.fmin(ta, tb), np.fmax(ta, tb)
            flat = p == 0
            inside = (a <= 0) & (b >= 0)
            t_in = np.where(flat, np.where(inside, 0.0, 2.0), t_in)
            t_out = np.where(flat, np.where(inside, 1.0, -1.0), t_out)
            lo, hi = np.fmax(lo, t_in), np.fmin(hi, t_out)
    length = np.hypot(dx * view.px_per_x, dy * view.px_per_y)
    return np.clip(hi - lo, 0.0, 1.0) * length


@dataclass(frozen=True)
class IndexInput:
    """What a :class:`FrameIndex` is built from: the laid-out events' ``x`` on one
    time axis, ranks and symbol classes, as of ``count`` events.

    :meth:`copy_of` takes copies, no views: the model's and the layout's columns
    live in growable buffers that cannot grow while a view of them exists, so a
    copy lets another thread build the index while they keep growing.
    """

    count: int
    x: FloatArray
    ranks: npt.NDArray[np.int32]
    cls: npt.NDArray[np.int8]

    @classmethod
    def copy_of(cls, layout: Layout, logical: bool) -> IndexInput:
        copy = InputCopy(layout, logical)
        copy.step(copy.count)
        return copy.result()

    @classmethod
    def fixed_view(cls, layout: Layout, logical: bool) -> IndexInput | None:
        """The input as views of ``layout``'s columns, no copy, when none of them
        can change any more: the model's input ended, every event is laid out
        and the axis is real time (the logical ``x`` are filled in by another
        pass after the load and their buffer would not grow under a view).
        Else None.  Saves the copy's 13 bytes an event at the last build of a
        load (the window's peak) and the 4 bytes an event of ranks the index
        keeps; the model's rank column then cannot grow, which it does not
        once its input ended."""
        m = layout.model
        if not (m.input_ended and layout.has_time and not logical
                and layout.count == m.event_count):
            return None
        return cls(layout.count, layout.x_real, layout.ranks, layout.cls)


class InputCopy:
    """An :class:`IndexInput` of ``layout``'s first ``count`` events (by default
    its count now), copied a piece at a time (:meth:`step`): at ten million events the
    copy is 130 MB, about 200 ms of the GUI thread in one piece.  The events'
    ``x``, ranks and classes do not change once laid out (a logical ``x`` still
    NaN may get its value between two pieces: the copy then holds the one it
    read), and the layout's columns only grow, so pieces copied as the layout
    grows between them make the input copied at once."""

    def __init__(self, layout: Layout, logical: bool, count: int | None = None) -> None:
        self.layout = layout
        self.logical = logical
        self.count = n = layout.count if count is None else min(count, layout.count)
        self.done = 0  # events copied so far
        self._x = np.empty(n, dtype=np.float64)
        self._ranks = np.empty(n, dtype=np.int32)
        self._cls = np.empty(n, dtype=np.int8)

    def step(self, most: int) -> bool:
        """Copy up to ``most`` more events; whether every one is copied now."""
        lo = self.done
        hi = min(self.count, lo + max(most, 0))
        if hi > lo:
            lay = self.layout
            self._x[lo:hi] = lay.x(self.logical)[lo:hi]
            self._ranks[lo:hi] = lay.ranks[lo:hi]
            self._cls[lo:hi] = lay.cls[lo:hi]
            self.done = hi
        return self.done == self.count

    def result(self) -> IndexInput:
        """The input, once every event is copied."""
        if self.done != self.count:
            raise ValueError(f"{self.done} of {self.count} events copied")
        return IndexInput(self.count, self._x, self._ranks, self._cls)


class FrameIndex:
    """Events and messages of one layout on one time axis, ready for viewport queries.

    ``data``: the layout's events as copied by :meth:`IndexInput.copy_of` (then
    the index may be built on another thread; ``msgs`` holds no views either);
    by default they are read from ``layout`` now, as many as ``msgs`` looked at.
    """

    def __init__(self, layout: Layout, msgs: MessageIndex, logical: bool,
                 data: IndexInput | None = None) -> None:
        if data is None:  # the events ``msgs`` looked at (it may lag a growing layout)
            n = layout.count if msgs.count < 0 else min(msgs.count, layout.count)
            # the ranks copied: the index keeps them, and a view would keep the
            # model's column from growing
            data = IndexInput(n, layout.x(logical)[:n], np.array(layout.ranks[:n]),
                              layout.cls[:n])
        n = data.count
        self.count = n
        self.logical = logical
        self.layout = layout
        self.msgs = msgs
        x = data.x
        ranks = data.ranks
        self.ranks = ranks
        # the ids are 0..n-1: none passed (an argument, like a local, would hold
        # 8 bytes an event through the whole build)
        self.events = BinnedItems(None, x, x, ranks, data.cls)
        xs, xc = x[msgs.send], x[msgs.consume]
        self.msg_x = np.column_stack([xs, xc]) if len(xs) else np.zeros((0, 2))
        self.msg_src = ranks[msgs.send]  # ranks: row lookups only (int32 like the model's)
        self.msg_dst = ranks[msgs.consume]
        del xs, xc  # the line ends are in msg_x
        self.messages = BinnedItems(
            None,
            np.fmin(self.msg_x[:, 0], self.msg_x[:, 1]),
            np.fmax(self.msg_x[:, 0], self.msg_x[:, 1]),
            self.msg_src.astype(np.int64) * layout.nprocs + self.msg_dst,
            np.zeros(len(self.msg_src), dtype=np.int8),
        )

    def valid_for(self, layout: Layout, msgs: MessageIndex, logical: bool) -> bool:
        return (
            self.layout is layout
            and self.msgs is msgs
            and self.count == layout.count
            and self.logical == logical
        )

    def frame(self, view: Viewport, keep_messages: IntArray | None = None) -> Frame:
        """The events and messages to draw for ``view`` (see the module docstring)."""
        rows = self.layout.rows
        shown = rows >= 0
        mx, my = MARGIN_PX / view.px_per_x, MARGIN_PX / view.px_per_y
        in_y = shown & (rows >= view.y0 - my) & (rows <= view.y1 + my)
        share = max(int(in_y.sum()), 1) / max(len(rows), 1)
        budget = int(MAX_SYMBOLS / share)
        ev, nb = self.events.query(view.x0 - mx, view.x1 + mx, view.width_px, BUCKET_PX, budget)
        ev = ev[in_y[self.ranks[ev]]]
        ev.sort()
        msgs = self._messages(view, rows, keep_messages)
        return Frame(ev, msgs[0], msgs[1], nb > 0)

    def _messages(
        self, view: Viewport, rows: FloatArray, keep: IntArray | None
    ) -> tuple[IntArray, int]:
        full = self.messages.full.count(view.x0, view.x1) + len(self.messages.long.ids)
        ids, nb = self.messages.query(view.x0, view.x1, view.width_px, BUCKET_PX, MAX_LINES)
        ys, yd = rows[self.msg_src[ids]], rows[self.msg_dst[ids]]
        ok = (ys >= 0) & (yd >= 0) & (np.fmax(ys, yd) >= view.y0) & (np.fmin(ys, yd) <= view.y1)
        ids, ys, yd = ids[ok], ys[ok], yd[ok]
        in_view = len(ids) if nb == 0 else full
        if len(ids) > 4 * MAX_LINES:  # an even subset before measuring them
            pick = np.linspace(0, len(ids) - 1, 4 * MAX_LINES).astype(np.int64)
            ids, ys, yd, in_view = ids[pick], ys[pick], yd[pick], full
        xy = self.msg_x[ids]
        length = visible_pixels(xy[:, 0], ys, xy[:, 1], yd, view)
        if float(length.sum()) > LINE_PIXELS or len(ids) > MAX_LINES:
            # a low-discrepancy order: any prefix of it is spread evenly along x
            in_view = full
            order = np.argsort((np.arange(len(ids)) * _GOLDEN) % 1.0, kind="stable")
            k = int(np.searchsorted(np.cumsum(length[order]), LINE_PIXELS, side="right"))
            ids = ids[np.sort(order[: min(k, MAX_LINES)])]
        if keep is not None and len(keep):
            ids = np.union1d(ids, keep)
        return ids, max(in_view, len(ids))
