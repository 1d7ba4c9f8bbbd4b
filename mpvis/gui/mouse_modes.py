"""The diagram's mouse, as in the trace viewers users know.

The wheel zooms time only (with Ctrl: the ranks only); a left drag pans, and
with Shift it draws a box to zoom into (``boxed`` is called when the box is
dropped: the user chose a zoom).  pyqtgraph's own handlers do the work; these
only pick the axis and the mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore


def install_mouse_modes(vb: Any, boxed: Callable[[], object]) -> None:
    """Replace the wheel and drag handlers of the pyqtgraph ``ViewBox`` ``vb``."""
    wheel, drag = vb.wheelEvent, vb.mouseDragEvent
    ctrl = QtCore.Qt.KeyboardModifier.ControlModifier
    shift = QtCore.Qt.KeyboardModifier.ShiftModifier

    def wheel_event(ev: Any, axis: int | None = None) -> None:
        wheel(ev, 1 if ev.modifiers() & ctrl else 0)

    def drag_event(ev: Any, axis: int | None = None) -> None:
        if not ev.modifiers() & shift or ev.button() != QtCore.Qt.MouseButton.LeftButton:
            drag(ev, axis)
            return
        mode = vb.state["mouseMode"]
        vb.state["mouseMode"] = pg.ViewBox.RectMode
        try:
            drag(ev, axis)
        finally:
            vb.state["mouseMode"] = mode
        if ev.isFinish():
            boxed()

    vb.wheelEvent = wheel_event
    vb.mouseDragEvent = drag_event
