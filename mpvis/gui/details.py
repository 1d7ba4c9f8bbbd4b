"""The details panel: every field of the selected event, its site, its message
partner (a link that jumps to it) and its vector clock."""

from __future__ import annotations

import html

from PySide6 import QtCore, QtWidgets

from mpvis.model.manager import ModelManager
from mpvis.scene import describe


class DetailsPanel(QtWidgets.QTextBrowser):
    """Shows one event; clicking a ``rank R #S`` link asks to jump to that event."""

    jump_requested = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._clicked)
        self.model: ModelManager | None = None
        self.current = -1
        self.show_event(None, -1)

    def show_event(self, model: ModelManager | None, g: int) -> None:
        """Describe event ``g`` of ``model`` (``-1``: a hint instead)."""
        self.model, self.current = model, g
        if model is None or g < 0 or g >= model.event_count:
            self.setHtml(
                "<p style='color:#757575'>Click an event of the diagram to see its "
                "fields, its source line, its message partner and its vector clock."
                "</p>"
            )
            return
        rows = []
        event = model.event_at(g)
        for name, value in describe.details(model, event):
            text = html.escape(str(value))
            if name == "message partner" and (p := event.partner) is not None:
                text = f"<a href='g:{p.index}'>{text}</a> (click to jump)"
            rows.append(
                f"<tr><td style='color:#546e7a;padding-right:8px'><b>"
                f"{html.escape(name)}</b></td><td>{text}</td></tr>"
            )
        head = html.escape(describe.summary(model, event))
        self.setHtml(f"<p><b>{head}</b></p><table>{''.join(rows)}</table>")

    def _clicked(self, url: QtCore.QUrl) -> None:
        text = url.toString()
        if text.startswith("g:"):
            self.jump_requested.emit(int(text[2:]))
