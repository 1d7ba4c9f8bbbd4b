"""Zoomed out, the diagram draws activity density instead of a carpet of symbols."""

from __future__ import annotations

import numpy as np
from PySide6 import QtGui

from mpvis.gui.diagram import DiagramView
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.density import ACTIVITY_COLOURS
from mpvis.scene.layout import Layout
from mpvis.sim.synthetic import generate_records


def _view(qtbot, events: int, ranks: int) -> DiagramView:  # type: ignore[no-untyped-def]
    m = ModelManager(make_header(ranks))
    m.add_batch(list(generate_records(events, ranks, seed=2)))
    m.finish()
    lay = Layout(m)
    lay.update()
    view = DiagramView()
    qtbot.addWidget(view)
    view.resize(800, 400)
    view.show()
    view.set_model(m, lay)
    view.fit_all()
    view.redraw()
    return view


def test_zoomed_out_draws_density_then_symbols_when_zoomed_in(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = _view(qtbot, 20_000, 8)
    assert view.density_shown
    assert view._density._image is not None
    assert view._syms._xy.shape[0] == 0  # no symbol carpet
    assert "activity per pixel" in view.lod_note
    img = view.grab().toImage()
    colours = {QtGui.QColor(img.pixel(x, y)).getRgb()[:3]
               for x in range(0, img.width(), 3) for y in range(0, img.height(), 3)}
    near = [c for c in colours if any(sum(abs(a - b) for a, b in zip(c, col, strict=True)) < 60
                                      for col in ACTIVITY_COLOURS)]
    assert near, "the activity colours are on screen"
    lay = view.layout_
    assert lay is not None
    x = lay.x(False)
    lo = float(np.nanmin(x))
    view.zoom_x(lo, lo + (float(np.nanmax(x)) - lo) / 2000)
    view.redraw()
    assert not view.density_shown
    assert view._density._image is None
    assert view._syms._xy.shape[0] > 0


def test_density_can_be_turned_off(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = _view(qtbot, 20_000, 8)
    view.density_enabled = False
    view.redraw()
    assert not view.density_shown and view._syms._xy.shape[0] > 0
