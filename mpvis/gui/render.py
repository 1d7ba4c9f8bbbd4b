"""Headless rendering of a trace's diagram (``mpvis render``); deadlocked ranks are marked."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets

from mpvis.analysis.pipeline import Analyses
from mpvis.errors import MpvisError
from mpvis.gui.app import make_app
from mpvis.gui.diagram import DiagramView
from mpvis.gui.export import export_png, export_svg
from mpvis.gui.legend import LegendStrip
from mpvis.scene.layout import Layout
from mpvis.tracefile.reader import TraceFileError, load_trace, read_header


class RenderError(MpvisError):
    """The trace could not be drawn; ``str()`` is for the user."""


class DiagramFigure(QtWidgets.QWidget):
    """The diagram with its legend underneath: what an exported image shows."""

    def __init__(self) -> None:
        super().__init__()
        self.diagram = DiagramView()
        self.legend = LegendStrip()
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.diagram, 1)
        lay.addWidget(self.legend)
        self.diagram.lod_changed.connect(self.legend.set_note)
        self.diagram.overlays_changed.connect(self.legend.set_overlays)


def render_trace(
    path: str | Path, out: str | Path, size: tuple[int, int], *, logical: bool = False
) -> None:
    """Draw the whole run of trace ``path`` into ``out`` (.png or .svg) at ``size`` pixels."""
    app = make_app(headless=True)
    try:
        analyses = Analyses.for_header(read_header(path), exact=False)
        m = load_trace(path, model=analyses.model)
    except TraceFileError as exc:
        raise RenderError(str(exc)) from None
    layout = Layout(m)
    layout.update()
    fig = DiagramFigure()
    fig.resize(*size)
    fig.show()
    app.processEvents()
    fig.diagram.set_model(m, layout)
    assert analyses.deadlock is not None
    fig.diagram.set_stuck_ranks({r: q for d in analyses.deadlock.deadlocks for r, q in d.events})
    fig.diagram.set_logical(logical)
    fig.diagram.fit_all()
    fig.diagram.redraw()
    app.processEvents()
    try:
        if Path(out).suffix.lower() == ".svg":
            export_svg(fig, out, title=str(path))
        else:
            export_png(fig, out)
    except OSError as exc:
        raise RenderError(str(exc)) from None
    finally:
        fig.close()
