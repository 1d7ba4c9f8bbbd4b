"""Export: the current view as PNG or SVG, the race list as CSV or JSON."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from PySide6 import QtCore, QtGui, QtSvg, QtWidgets

from mpvis.analysis.exact_events import ExactRace
from mpvis.model.races import Race
from mpvis.scene.race_marks import races_csv, races_json


@contextlib.contextmanager
def _without_transients(widget: QtWidgets.QWidget) -> Iterator[None]:
    """Hide the children marked ``mpvisNoExport`` (the race pop-up) meanwhile."""
    hidden = [w for w in widget.findChildren(QtWidgets.QWidget)
              if w.property("mpvisNoExport") and w.isVisible()]
    for w in hidden:
        w.hide()
    _relayout(widget)  # a docked pop-up leaves no gap
    try:
        yield
    finally:
        for w in hidden:
            w.show()
        _relayout(widget)


def _relayout(widget: QtWidgets.QWidget) -> None:
    lay = widget.layout()
    if lay is not None:
        lay.activate()


def export_png(widget: QtWidgets.QWidget, path: str | Path) -> None:
    """What ``widget`` shows now (without pop-ups), as a PNG of its size on screen."""
    with _without_transients(widget):
        pixmap = widget.grab()
    if not pixmap.save(str(path), "PNG"):
        raise OSError(f"cannot write {path}")


def export_svg(widget: QtWidgets.QWidget, path: str | Path, title: str = "mpvis") -> None:
    """What ``widget`` shows now, rendered into an SVG file (symbols as embedded images)."""
    gen = QtSvg.QSvgGenerator()
    gen.setFileName(str(path))
    size = widget.size()
    gen.setSize(size)
    gen.setViewBox(QtCore.QRect(0, 0, size.width(), size.height()))
    gen.setTitle(title)
    painter = QtGui.QPainter(gen)
    with _without_transients(widget):
        widget.render(painter, QtCore.QPoint(0, 0))
    painter.end()
    if not Path(path).is_file():
        raise OSError(f"cannot write {path}")


def export_races(races: list[Race], path: str | Path, exact: Sequence[ExactRace] = ()) -> None:
    """The races (classifier, then exact) as CSV (``.csv``) or JSON (anything else)."""
    p = Path(path)
    text = races_csv(races, exact) if p.suffix.lower() == ".csv" else races_json(races, exact)
    p.write_text(text, encoding="utf-8")
