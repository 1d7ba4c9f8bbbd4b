"""The diagram's message index, kept up with a growing layout off the GUI thread.

:func:`~mpvis.scene.messages.message_index` extends an index by what is new,
but its merge writes a new pair of arrays of every message: at ten million
events about 50 MB, 50-90 ms of the GUI thread each second of a load (the
longest of its waits once the density view and the feeding were cut down).
:class:`MessageKeeper` splits the extension in two (issue 16):

* what is new (:func:`~mpvis.scene.messages.new_messages`) reads the model,
  which grows on the GUI thread, so it is taken there: work in proportion to
  the new events and the sends still unconsumed;
* the merge (:func:`~mpvis.scene.messages.merged`) reads only two indexes,
  which never change, so from :data:`ASYNC_MIN` events on it runs on a worker
  thread; its result is installed on the GUI thread (``ready`` is emitted)
  unless the layout changed meanwhile.

Contract: :attr:`MessageKeeper.index` is always an index of the current
layout's first ``index.count`` events (it may lag the layout by a merge under
way: the diagram draws the messages it has, the frame index covers what it
covers); one merge at a time; :meth:`reset` (a new model or layout) drops an
index being merged.
"""

from __future__ import annotations

import contextlib
import threading

from PySide6 import QtCore

from mpvis.gui import turns
from mpvis.scene.frame import FrameIndex
from mpvis.scene.layout import Layout
from mpvis.scene.messages import MessageIndex, merged, message_index, new_messages

#: From this many laid-out events on, the index is extended on a turn of its own
#: (not in the drain that laid them out) and merged on a worker thread.
ASYNC_MIN = 500_000


class MessageKeeper(QtCore.QObject):
    """The message index of the diagram's layout (see the module docstring)."""

    #: a merge done on a worker thread was installed (GUI thread)
    ready = QtCore.Signal()
    #: a merged index and the generation it was asked in; queued to the GUI thread
    _merged = QtCore.Signal(object, int)

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.index: MessageIndex | None = None
        self._layout: Layout | None = None
        self._gen = 0  # bumped by reset: merges asked before are dropped
        self._queued = False  # an extension waits for its turn
        self._merging = False  # a worker thread merges
        self._merged.connect(self._take)

    def reset(self, layout: Layout | None) -> None:
        """A new model or layout (or none): no index until :meth:`extend`."""
        self.index, self._layout = None, layout
        self._gen += 1
        self._queued = self._merging = False

    def extend(self, frames: FrameIndex | None) -> None:
        """Take in the layout's new events: at once while the layout is small or
        has no index yet (the frame index's when it has every event), else on a
        turn of its own and a worker thread (the module docstring)."""
        lay = self._layout
        if lay is None:
            return
        if self.index is None or lay.count < ASYNC_MIN:
            if frames is not None and frames.count == lay.count and frames.layout is lay:
                self.index = frames.msgs  # nothing new: keep the frame index's
            else:
                self.index = message_index(lay, self.index)
        elif not self._queued and not self._merging:
            self._queued = True
            turns.later(self._extend_later, self)

    def adopt(self, msgs: MessageIndex) -> None:
        """An index of the layout built elsewhere (a new frame index's), if it
        covers more than the one held."""
        if self.index is None or msgs.count > self.index.count:
            self.index = msgs

    def _extend_later(self) -> None:
        """GUI thread, a turn of its own: what is new, then the merge on a worker."""
        self._queued = False
        lay, old = self._layout, self.index
        if lay is None or old is None or self._merging or old.count == lay.count:
            return
        new = new_messages(lay, old)
        self._merging = True
        threading.Thread(target=self._merge, name="mpvis-message-index", daemon=True,
                         args=(old, new, self._gen)).start()

    def _merge(self, old: MessageIndex, new: MessageIndex, gen: int) -> None:
        """Worker thread: the merged index, handed to the GUI thread."""
        index = merged(old, new)
        with contextlib.suppress(RuntimeError):  # the diagram was deleted meanwhile
            self._merged.emit(index, gen)

    def _take(self, index: MessageIndex, gen: int) -> None:
        """GUI thread: a merged index, installed unless the layout changed since."""
        if gen != self._gen:
            return
        self._merging = False
        self.adopt(index)
        self.ready.emit()
