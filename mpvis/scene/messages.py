"""Messages and process lines in diagram coordinates.

An oblique line joins each send to the consume of its message (section 2 of
the MPVisualizer paper).  A message sent but not consumed (yet) has no
consume: it is drawn from its send to the end of the destination's process
line, distinctly, so that a message "in flight" or lost is visible.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.protocol import records as rec_kinds
from mpvis.scene.layout import Layout

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_SEND = rec_kinds.KIND_CODE[rec_kinds.SEND]
#: An unconsumed message's stub covers this share of the way to its destination row.
STUB_SHARE = 0.45


@dataclass(frozen=True)
class MessageIndex:
    """Global indices of the sends of matched messages (and their consumes) and unmatched sends."""

    send: IntArray
    consume: IntArray
    unconsumed: IntArray
    #: the events looked at (the layout's count then); -1: unknown
    count: int = -1


def message_index(layout: Layout, previous: MessageIndex | None = None) -> MessageIndex:
    """Every message among the laid-out events (sorted by send).

    ``previous``: the index of the same layout when it had fewer events; then
    only the new events and the sends unconsumed in ``previous`` are looked at
    (a send's consume, once laid out, stays its consume)."""
    return merged(previous, new_messages(layout, previous))


def new_messages(layout: Layout, previous: MessageIndex | None = None) -> MessageIndex:
    """What :func:`message_index` adds to ``previous`` (as it takes it): the
    messages completed since (sorted by send), every send still unconsumed, and
    the layout's count.  Reads the model: on its thread."""
    m, n = layout.model, layout.count
    old = _usable(previous, n)
    start = old.count if old is not None else 0
    kind: npt.NDArray[Any] = m.c_kind.view()[start:n]
    partner: npt.NDArray[Any] = m.c_partner.view()[:n]
    sends = np.flatnonzero(kind == _SEND) + start
    if old is not None:
        sends = np.concatenate([old.unconsumed, sends])  # both sorted, the new ones after
    p = partner[sends]
    matched = (p >= 0) & (p < n)
    return MessageIndex(sends[matched], p[matched].astype(np.int64), sends[~matched], n)


def merged(previous: MessageIndex | None, new: MessageIndex) -> MessageIndex:
    """``previous`` (of the same layout with fewer events, or ``None``) with the
    messages of ``new`` (:func:`new_messages` of it).  Reads only the two
    indexes, which never change: may run on another thread (at ten million
    events the merge copies about 50 MB)."""
    old = _usable(previous, new.count)
    if old is None or not len(old.send):
        return new
    send, consume = _merge(old.send, old.consume, new.send, new.consume)
    return MessageIndex(send, consume, new.unconsumed, new.count)


def _usable(previous: MessageIndex | None, n: int) -> MessageIndex | None:
    """``previous`` if it can be extended to ``n`` events."""
    return previous if previous is not None and 0 <= previous.count <= n else None


def _merge(send: IntArray, consume: IntArray, new_send: IntArray, new_consume: IntArray
           ) -> tuple[IntArray, IntArray]:
    """``send`` (sorted, unique) with ``new_send`` (sorted, none of them in
    ``send``) merged, their consumes along: the prefix of ``send`` below the
    first new one is copied as it is, only the tail after it is sorted (a new
    message's send is mostly among the latest; ``np.insert`` took a pass of
    masks over every message, 70 ms of the GUI thread at ten million events)."""
    if not len(new_send):
        return send, consume
    p = int(np.searchsorted(send, new_send[0]))
    tail_s = np.concatenate([send[p:], new_send])
    tail_c = np.concatenate([consume[p:], new_consume])
    order = np.argsort(tail_s, kind="stable")
    out_s = np.empty(p + len(tail_s), dtype=np.int64)
    out_c = np.empty(p + len(tail_s), dtype=np.int64)
    out_s[:p], out_c[:p] = send[:p], consume[:p]
    out_s[p:], out_c[p:] = tail_s[order], tail_c[order]
    return out_s, out_c


def message_segments(layout: Layout, msgs: MessageIndex, logical: bool) -> FloatArray:
    """``(k, 4)`` lines ``x0, y0, x1, y1`` from each send to its consume."""
    x, y = layout.x(logical), layout.y
    s, c = msgs.send, msgs.consume
    return np.column_stack([x[s], y[s], x[c], y[c]]) if len(s) else np.zeros((0, 4))


def rank_extents(layout: Layout, logical: bool) -> FloatArray:
    """``(nprocs, 2)``: first and last ``x`` of each rank's laid-out events (NaN: none)."""
    x = layout.x(logical)
    out = np.full((layout.nprocs, 2), np.nan)
    if not logical and layout.has_time:  # real time: every event has its x, no pass
        for r, events in enumerate(layout.model.by_rank):
            k = bisect.bisect_left(events, layout.count)  # global indices ascend
            if k:
                out[r] = x[events[0]], x[events[k - 1]]
        return out
    for r in range(layout.nprocs):
        ev = layout.rank_events(r)
        if len(ev):
            xs = x[ev]
            xs = xs[~np.isnan(xs)]
            if len(xs):
                out[r] = xs[0], xs[-1]
    return out


def unconsumed_segments(layout: Layout, msgs: MessageIndex, logical: bool) -> FloatArray:
    """``(k, 4)`` stubs: each unconsumed send, heading toward its destination's row.

    A stub goes :data:`STUB_SHARE` of the way to the destination row and a
    little forward in time, and stops: the message is in flight (or lost), not
    delivered anywhere.  (Drawing it to the end of the destination's line
    made it look consumed by whatever event the destination stopped at, often a
    blocked receive of a deadlock.)
    """
    s = msgs.unconsumed
    if not len(s):
        return np.zeros((0, 4))
    x = layout.x(logical)
    dest = layout.model.c_peer.view()[s].astype(np.int64)
    dest = np.clip(dest, 0, layout.nprocs - 1)
    y_dest = layout.rows[dest]
    shown = y_dest >= 0
    s, y_dest = s[shown], y_dest[shown]
    # the sends' rows: ``layout.y[s]``, without the rows of every event (a pass
    # over all of them once the rank order changed: 80 ms at 10M events)
    y_s = layout.rows[layout.ranks[s]]
    span = layout.bounds(logical)
    x1 = x[s] + (span[1] - span[0]) * 0.015
    y1 = y_s + (y_dest - y_s) * STUB_SHARE
    return np.column_stack([x[s], y_s, x1, y1])


def process_lines(layout: Layout, extents: FloatArray) -> FloatArray:
    """``(k, 4)`` horizontal lines, one per shown rank with events."""
    rows = layout.rows
    ok = (rows >= 0) & ~np.isnan(extents[:, 0])
    return np.column_stack([extents[ok, 0], rows[ok], extents[ok, 1], rows[ok]])


def lost_send_segments(layout: Layout, logical: bool) -> FloatArray:
    """``(k, 4)`` lines into each consume whose send was lost (its rank died before
    recording it: ``RecordRules.lost_consumes``, numbered or matched by channel),
    drawn like unconsumed stubs.

    A line starts on the sender's row a little after the sender's last recorded
    event (the lost send came later) and ends at the consume.
    """
    m, n = layout.model, layout.count
    lost = m.rules.lost_consumes()
    if not lost:  # no pass over the events (the rows of every event: ``layout.y``,
        return np.zeros((0, 4))  # 80 ms at 10M events once the rows were set anew)
    x, y = layout.x(logical), layout.y
    span = layout.bounds(logical)
    step = (span[1] - span[0]) * 0.015
    out = []
    for q, g in lost:
        if g >= n or not 0 <= q < layout.nprocs or layout.rows[q] < 0 or np.isnan(x[g]):
            continue
        events = m.by_rank[q]
        last = events[-1] if len(events) else -1
        x0 = x[last] + step if 0 <= last < n and not np.isnan(x[last]) else x[g] - step
        out.append((x0, layout.rows[q], x[g], y[g]))
    return np.asarray(out, dtype=np.float64).reshape(-1, 4)
