"""The legend: every symbol of the diagram with what it means, in a wrapping strip."""

from __future__ import annotations

from typing import cast

from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.gui.symbol_art import draw_symbol
from mpvis.scene import symbols as sym

_LINES = (
    ("message (send to consume)", sym.MESSAGE_COLOR, QtCore.Qt.PenStyle.SolidLine),
    ("sent, not consumed", sym.UNCONSUMED_COLOR, QtCore.Qt.PenStyle.DashLine),
)
_STOPS = (
    sym.SymbolSpec("suspended", "rank suspended here", "pause", sym.SUSPENDED_COLOR, "#bf360c", 14),
    sym.SymbolSpec("dead", "rank died here", "cross", sym.DEAD_COLOR, "#000000", 14),
    sym.SymbolSpec("deadlocked", "rank deadlocked here (DL)", "octagon", "#d50000", "#4a0000", 15),
)


class LegendStrip(QtWidgets.QWidget):
    """Paints the legend entries left to right, wrapping to the widget's width."""

    ENTRY_H = 20

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(
            QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Fixed
        )
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(QtGui.QPalette.ColorRole.Window, QtGui.QColor("white"))
        self.setPalette(pal)
        self._entries: list[tuple[str, object]] = [
            *((s.label, s) for s in reversed(sym.SYMBOLS)),
            *((s.label, s) for s in _STOPS),
            *((label, (color, style, 1.8)) for label, color, style in _LINES),
        ]
        self.note = ""
        self.overlays: list[tuple[str, object]] = []

    def set_overlays(self, shown: list[tuple[str, str, bool]]) -> None:
        """Entries for the overlays drawn now: ``(label, color, dashed)``."""
        dash = {True: QtCore.Qt.PenStyle.DashLine, False: QtCore.Qt.PenStyle.SolidLine}
        self.overlays = [(label, (color, dash[dashed], 2.6)) for label, color, dashed in shown]
        self.setFixedHeight(self.heightForWidth(self.width()))
        self.update()

    def set_note(self, text: str) -> None:
        """A remark after the entries (what the level of detail leaves out), "" for none."""
        if text != self.note:
            self.note = text
            self.setFixedHeight(self.heightForWidth(self.width()))
            self.update()

    def _entries_now(self) -> list[tuple[str, object]]:
        return [*self._entries, *self.overlays, *([(self.note, None)] if self.note else [])]

    def _layout(self, width: int) -> list[tuple[int, int, str, object]]:
        fm = self.fontMetrics()
        x, y, out = 6, 2, []
        for label, what in self._entries_now():
            w = (0 if what is None else 26) + fm.horizontalAdvance(label) + 14
            if x + w > width and x > 6:
                x, y = 6, y + self.ENTRY_H
            out.append((x, y, label, what))
            x += w
        return out

    def heightForWidth(self, width: int) -> int:
        entries = self._layout(width)
        return (entries[-1][1] if entries else 0) + self.ENTRY_H + 4

    def hasHeightForWidth(self) -> bool:
        return True

    def sizeHint(self) -> QtCore.QSize:
        w = max(self.width(), 600)
        return QtCore.QSize(w, self.heightForWidth(w))

    def resizeEvent(self, ev: QtGui.QResizeEvent) -> None:
        self.setFixedHeight(self.heightForWidth(ev.size().width()))
        super().resizeEvent(ev)

    def paintEvent(self, ev: QtGui.QPaintEvent) -> None:
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        fm = self.fontMetrics()
        for x, y, label, what in self._layout(self.width()):
            cy = y + self.ENTRY_H / 2
            if what is None:  # the note
                p.setPen(QtGui.QColor("#bf360c"))
                p.drawText(QtCore.QPointF(x, cy + fm.ascent() / 2 - 1), label)
                continue
            if isinstance(what, sym.SymbolSpec):
                draw_symbol(p, what, QtCore.QPointF(x + 10, cy))
            else:
                color, pen_style, width = cast(tuple[str, QtCore.Qt.PenStyle, float], what)
                pen = QtGui.QPen(QtGui.QColor(color))
                pen.setWidthF(width)
                pen.setStyle(pen_style)
                p.setPen(pen)
                p.drawLine(QtCore.QPointF(x, cy + 5), QtCore.QPointF(x + 20, cy - 5))
            p.setPen(QtGui.QColor("#212121"))
            p.drawText(QtCore.QPointF(x + 24, cy + fm.ascent() / 2 - 1), label)
        p.end()
