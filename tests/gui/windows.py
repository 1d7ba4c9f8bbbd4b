"""The window the GUI tests drive: a real :class:`MainWindow`, shown offscreen."""

from __future__ import annotations

from typing import Any

from mpvis.gui.window import MainWindow


def shown_window(qtbot: Any) -> MainWindow:
    """A new empty window at 1200x800, shown, closed by ``qtbot`` after the test."""
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    return win
