"""Work of the GUI thread split into turns of the event loop (issue 16).

A wait between two frames of the window is everything the GUI thread runs in
one turn of Qt's event loop.  ``QTimer.singleShot(0, f)`` does not make a turn
of its own: it posts ``f`` as an event, and Qt delivers the events posted
together one after the other, so a drain that posts a redraw, the overview and
the race list made one wait of their sum (up to 350 ms of CPU at 10M events).

:func:`later` queues a callable instead; the queue runs **one callable per
turn**, from a zero-interval timer (a timer fires at most once per pass over
the timers, and Qt delivers posted events, paints among them, between two
passes).  The queue is first in, first out: what a slot queued runs in that
order, each part after the frames that the previous one allowed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import shiboken6
from PySide6 import QtCore

#: While a trace loads (its model grows on the GUI thread: time spent drawing
#: is not spent loading), its redraws and its race listings each take at most
#: this share of the GUI thread's time (``mpvis.gui.window``,
#: ``mpvis.gui.race_listing``).
LOADING_SHARE = 0.2

__all__ = ["TurnQueue", "later", "pending"]


class TurnQueue(QtCore.QObject):
    """Callables run one per turn of the GUI thread's event loop, in order."""

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self._todo: deque[Callable[[], object]] = deque()
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._run_one)
        self._arming = False  # a queued call to :meth:`_arm` is on its way

    def __len__(self) -> int:
        return len(self._todo)

    def post(self, part: Callable[[], object], owner: QtCore.QObject | None = None) -> None:
        """Run ``part`` on a turn of its own, after the parts posted before it;
        not if ``owner`` (the object ``part`` works on) was deleted meanwhile.
        An idle queue starts its timer once the slot posting returned (a queued
        call): started inside a long slot it was due before the timers that fell
        due during that slot, and its first part ran in the same wait (the end
        of a 10M-event load: the last drain, 48 ms, and the load's end turn)."""
        self._todo.append(part if owner is None else _while_alive(owner, part))
        if not self._timer.isActive() and not self._arming:
            self._arming = True
            QtCore.QMetaObject.invokeMethod(self, "_arm", QtCore.Qt.ConnectionType.QueuedConnection)

    @QtCore.Slot()
    def _arm(self) -> None:
        self._arming = False
        if self._todo and not self._timer.isActive():
            self._timer.start()

    def _run_one(self) -> None:
        part = self._todo.popleft()
        try:
            part()
        finally:
            if self._todo:  # the next part on the next pass over the timers
                self._timer.start()


def _while_alive(owner: QtCore.QObject, part: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        return part() if shiboken6.isValid(owner) else None
    return run


_queues: dict[int, TurnQueue] = {}


def later(part: Callable[[], object], owner: QtCore.QObject | None = None) -> None:
    """Run ``part`` on a turn of the event loop of its own, after the parts queued
    before it (one queue per application; see the module docstring); ``owner``:
    the object ``part`` works on, if it may be deleted meanwhile (then it is not run)."""
    app = QtCore.QCoreApplication.instance()
    assert app is not None, "later() needs a Qt application"
    q = _queues.get(id(app))
    if q is None:
        q = _queues[id(app)] = TurnQueue(app)
        app.destroyed.connect(lambda *_: _queues.pop(id(app), None))
    q.post(part, owner)


def pending() -> int:
    """How many parts wait in the application's queue (see :func:`later`)."""
    app = QtCore.QCoreApplication.instance()
    q = _queues.get(id(app)) if app is not None else None
    return 0 if q is None else len(q)
