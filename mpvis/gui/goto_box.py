"""The toolbar's *Go to* box (Ctrl+G): an event ``rank:seq``, a rank, or a site.

What the text names is found by :func:`mpvis.scene.goto.resolve`; the box then
fits it in view and selects it (an event, or the first event at a site), or
zooms to the rank's row.  A text naming nothing says why in the status bar.
"""

from __future__ import annotations

from PySide6 import QtGui, QtWidgets

from mpvis.gui.window_api import WindowApi
from mpvis.scene.goto import GotoError, resolve

PLACEHOLDER = "go to: rank:seq, rank N, or file.py:line  (Ctrl+G)"


class GotoBox(QtWidgets.QLineEdit):
    """A line edit that sends the window to what its text names."""

    def __init__(self, win: WindowApi) -> None:
        super().__init__(win)
        self.win = win
        self.setPlaceholderText(PLACEHOLDER)
        self.setClearButtonEnabled(True)
        self.setMaximumWidth(340)
        self.setToolTip(
            "3:17 - event 17 of rank 3 | rank 5 (or 5) - rank 5's row | "
            "ring.py:30 - every event at that site"
        )
        self.returnPressed.connect(lambda: self.go(self.text()))
        shortcut = QtGui.QShortcut(QtGui.QKeySequence("Ctrl+G"), win)
        shortcut.activated.connect(self._focus)

    def _focus(self) -> None:
        self.setFocus()
        self.selectAll()

    def go(self, text: str) -> bool:
        """Show what ``text`` names; False (and a status message) when nothing."""
        win, d = self.win, self.win.diagram
        m, lay = win.model, d.layout_
        if m is None or lay is None:
            win.statusBar().showMessage("no run shown yet", 5000)
            return False
        try:
            target = resolve(m, text)
        except GotoError as exc:
            win.statusBar().showMessage(f"go to: {exc}", 8000)
            return False
        if target.kind == "rank":
            assert target.rank is not None
            row = int(lay.rows[target.rank])
            if row < 0:
                hidden = f"rank {target.rank} is hidden (View > Processes)"
                win.statusBar().showMessage(hidden, 8000)
                return False
            d.zoom_to_ranks(max(row - 2, 0), row + 2)
        else:
            d.fit_events(target.events)
            d.select_event(target.events[0])
        win.statusBar().showMessage(f"go to: {target.label}", 5000)
        return True
