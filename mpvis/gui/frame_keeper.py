"""Keeping the diagram's frame index fresh without holding up the GUI thread.

A :class:`~mpvis.scene.frame.FrameIndex` answers a frame's viewport query in a
few binary searches, but building one costs a sort of every event: seconds of
the GUI thread for a million events (the longest frame of a 1M-event load,
issue 16).  :class:`FrameKeeper` owns the diagram's index:

* small layouts (under :data:`ASYNC_INDEX_MIN` events) get their index rebuilt
  in place when it is stale (:meth:`FrameKeeper.current`);
* larger ones get it rebuilt on a worker thread from copies of the layout's
  columns (:class:`~mpvis.scene.frame.IndexInput`, copied a piece a turn of the
  event loop on the GUI thread: :data:`COPY_STEP`) while the previous index
  keeps serving frames; the diagram draws the events newer than the index by
  a plain pass meanwhile.  The rebuild starts when the newer events exceed
  :data:`ASYNC_GROWTH` of the index (geometric growth: the builds of a whole
  load cost about as much as a few of the last one) or the input has ended.

An index asked for before the model, layout or time axis changed (a
generation older than :attr:`FrameKeeper.gen`) is dropped when it lands.

When the frame needs no index (the zoomed-out density is shown: a large load
seen whole), none is built while the input goes on (each build copies the
layout and sorts every event: their copies and temporaries made the load's
peak, their CPU a share of the load's); once it ended, the index is built
from views of the layout (no copy) and the index serving frames is dropped as
that build starts, so that two indexes are not held at once (about 31 MB at
the end of a 1M-event load, the window's peak).  A frame that needs an index
meanwhile (a zoom-in) starts its build and draws the events newer than the
index it has (none: an empty index) by the diagram's plain pass until it lands.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
from PySide6 import QtCore

from mpvis.gui import turns
from mpvis.scene import frame
from mpvis.scene.layout import Layout
from mpvis.scene.messages import MessageIndex

#: The frame index is rebuilt at most this often while a run streams in (ms).
INDEX_MS = 1000
#: From this many events on, a stale frame index is rebuilt on a worker thread
#: while the previous one keeps serving frames (building one of 100k events
#: took 50-110 ms of the GUI thread).
ASYNC_INDEX_MIN = 20_000
#: ... when the events newer than it exceed this share of it (or the input ended).
ASYNC_GROWTH = 0.4
#: The copies it is built from are made this many events a turn of the event loop
#: (13 bytes an event: about 10 ms of the GUI thread).
COPY_STEP = 1 << 20


class FrameKeeper(QtCore.QObject):
    """The frame index of one diagram; ``ready`` is emitted (on the GUI thread)
    when an index built on a worker thread was installed."""

    ready = QtCore.Signal()
    #: a frame index built on a worker thread (the index, the generation it was
    #: asked in); queued to the GUI thread
    _built = QtCore.Signal(object, int)

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        #: the index serving frames now (None: none yet)
        self.index: frame.FrameIndex | None = None
        #: bumped whenever the model, layout or axis changes: older builds are dropped
        self.gen = 0
        self.building = False  # a worker thread builds the next index (or its copy is made)
        #: the copy being made for the next build, its message index and generation
        self._copying: tuple[frame.InputCopy, MessageIndex, int] | None = None
        #: the index was dropped for the build of this generation, layout and axis
        self._dropped: tuple[int, Layout, bool] | None = None
        self._age = QtCore.QElapsedTimer()
        self._age.start()
        self._built.connect(self._take)

    def reset(self, index: frame.FrameIndex | None = None) -> None:
        """A new model or layout: forget the index (or use ``index``, built elsewhere);
        an index still being built is for the old one."""
        self.gen += 1
        self.index = index

    def current(self, lay: Layout, msgs: MessageIndex, logical: bool,
                ended: bool, needed: bool = True) -> frame.FrameIndex:
        """The index to serve this frame, rebuilt when stale (see the module docstring).

        While a small run streams in, the index is rebuilt when the events newer
        than it exceed a fifth of it or :data:`INDEX_MS` has passed; on a layout
        toggle or a new model at once.  ``needed`` False: this frame draws
        nothing from the index (the density is shown): a large one is not
        rebuilt until the input ended and every event is laid out, and is then
        dropped while the next one is built (the index returned is for this
        frame only: not kept).
        """
        fi = self.index
        if fi is None and self._dropped == (self.gen, lay, logical):
            return self._empty(lay, logical)  # a plain pass until the build lands
        if fi is not None and fi.layout is lay and fi.logical == logical \
                and lay.count >= ASYNC_INDEX_MIN:
            covered = lay.count if msgs.count < 0 else min(msgs.count, lay.count)
            complete = ended and covered == lay.count == lay.model.event_count
            if covered > fi.count and (ended or covered - fi.count > fi.count * ASYNC_GROWTH) \
                    and (needed or complete):
                # newer events: a plain pass meanwhile
                self._build_async(lay, msgs, logical, covered, ended)
                if not needed and self.building:
                    self.index, self._dropped = None, (self.gen, lay, logical)
            return fi
        stale = (
            fi is None
            or fi.layout is not lay
            or fi.logical != logical
            or (
                fi.count != lay.count
                and (
                    lay.count - fi.count > max(fi.count // 5, 20_000)
                    or self._age.elapsed() > INDEX_MS
                    or ended
                )
            )
        )
        if stale or fi is None:
            self.gen += 1  # one being built meanwhile is older than this one
            fi = self.index = frame.FrameIndex(lay, msgs, logical)
            self._age.restart()
        return fi

    @staticmethod
    def _empty(lay: Layout, logical: bool) -> frame.FrameIndex:
        """An index of no event and no message: a frame drawn with it is the
        diagram's plain pass over every event and message."""
        none = np.zeros(0, dtype=np.int64)
        return frame.FrameIndex(
            lay, MessageIndex(none, none, none, 0), logical,
            frame.IndexInput(0, np.zeros(0), np.zeros(0, dtype=np.int32),
                             np.zeros(0, dtype=np.int8)))

    def usable(self, lay: Layout, logical: bool) -> frame.FrameIndex | None:
        """The index if it is of ``lay`` on this axis (possibly older), else None."""
        fi = self.index
        return fi if fi is not None and fi.layout is lay and fi.logical == logical else None

    def _build_async(self, lay: Layout, msgs: MessageIndex, logical: bool, count: int,
                     ended: bool = False) -> None:
        """Build the next index of the first ``count`` events (those ``msgs`` looked
        at: the message index may lag the layout while a run grows) on a worker
        thread from a copy of the layout's events, made :data:`COPY_STEP` events a
        turn of the event loop (:class:`~mpvis.scene.frame.InputCopy`,
        :meth:`_copy_some`); :meth:`_take` installs it.  Once the input ``ended``
        and every event is in, from views of the layout's columns instead when
        they cannot change any more (:meth:`~mpvis.scene.frame.IndexInput.fixed_view`).
        One build at a time: a stale index asked for meanwhile waits for it."""
        if self.building:
            return
        self.building = True
        fixed = frame.IndexInput.fixed_view(lay, logical) if ended else None
        if fixed is not None and fixed.count == count:
            self._start(lay, msgs, logical, fixed, self.gen)
            return
        del fixed
        self._copying = (frame.InputCopy(lay, logical, count), msgs, self.gen)
        turns.later(self._copy_some, self)

    def _start(self, lay: Layout, msgs: MessageIndex, logical: bool, data: frame.IndexInput,
               gen: int) -> None:
        threading.Thread(target=self._build, name="mpvis-frame-index", daemon=True,
                         args=(lay, msgs, logical, data, gen)).start()

    def _copy_some(self) -> None:
        """GUI thread: the next piece of the copy; once done, the build starts.
        (No closure that queues itself: such a cycle outlives its turn until the
        cyclic collector runs, which it does not while a trace loads, and it held
        each copy: 13 bytes an event.)"""
        job = self._copying
        if job is None:
            return
        copy, msgs, gen = job
        if gen != self.gen:  # the model, layout or axis changed: not needed
            self._copying, self.building, self._dropped = None, False, None
        elif not copy.step(COPY_STEP):
            turns.later(self._copy_some, self)
        else:
            self._copying = None
            self._start(copy.layout, msgs, copy.logical, copy.result(), gen)

    def _build(self, lay: Layout, msgs: MessageIndex, logical: bool, data: frame.IndexInput,
               gen: int) -> None:
        """Worker thread: the index of ``data``, handed to the GUI thread."""
        index = frame.FrameIndex(lay, msgs, logical, data)
        with contextlib.suppress(RuntimeError):  # the view was deleted meanwhile
            self._built.emit(index, gen)

    def _take(self, index: frame.FrameIndex, gen: int) -> None:
        """GUI thread: a built index, installed unless the model, layout or axis
        changed since it was asked for (:meth:`reset` bumps the generation)."""
        self.building = False
        self._age.restart()
        self._dropped = None  # dropped for this build: its index replaces it, or not needed
        if gen != self.gen:
            return
        self.index = index
        self.ready.emit()
