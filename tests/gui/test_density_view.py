"""Zoomed out, the diagram draws activity density instead of a carpet of symbols."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtGui

from mpvis.gui.diagram import DiagramView
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.density import ACTIVITY_COLOURS
from mpvis.scene.layout import Layout
from mpvis.sim.synthetic import generate_records
from tests.gui.windows import zoom_to_start


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
    zoom_to_start(view, 2000)
    assert not view.density_shown
    assert view._density._image is None
    assert view._syms._xy.shape[0] > 0


def test_density_can_be_turned_off(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = _view(qtbot, 20_000, 8)
    view.density_enabled = False
    view.redraw()
    assert not view.density_shown and view._syms._xy.shape[0] > 0


@pytest.mark.slow
def test_256_ranks_fold_into_groups_that_expand_on_click(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.rank_folding import MAX_GROUPS, RankFolder, group_label

    view = _view(qtbot, 30_000, 256)
    folder = RankFolder(view)
    folder.fold_similar()
    lay = view.layout_
    assert lay is not None
    assert 1 < len(folder.groups) <= MAX_GROUPS
    assert sorted(r for g in folder.groups for r in g) == list(range(256))
    assert lay.visible_rows == len(folder.groups)
    big = next(i for i, g in enumerate(folder.groups) if len(g) > 1)
    members = folder.groups[big]
    assert view.row_labels[members[0]] == group_label(members)
    assert view.density_rows is not None
    assert set(view.density_rows[members].tolist()) == {lay.rows[members[0]]}
    ticks = view.getPlotItem().getAxis("left")._tickLevels[0]
    assert any(label.startswith("ranks ") for _, label in ticks)
    row = int(lay.rows[members[0]])
    view.row_clicked.emit(row)  # what a click on that row does
    assert big in folder.expanded
    assert lay.visible_rows == len(folder.groups) - 1 + len(members)
    assert all(lay.rows[r] >= 0 for r in members)
    view.row_clicked.emit(int(lay.rows[members[-1]]))  # a click on a member folds it back
    assert lay.visible_rows == len(folder.groups)
    folder.unfold_all()
    assert lay.visible_rows == 256 and view.density_rows is None


def test_group_labels() -> None:
    from mpvis.gui.rank_folding import group_label

    assert group_label([5]) == "rank 5"
    assert group_label([3, 4, 5]) == "ranks 3-5 (3)"
    assert group_label([0, 2, 9]) == "ranks 0, 2… (3)"


def test_message_matrix_panel_follows_the_view(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.window import MainWindow
    from mpvis.scene.density import message_matrix

    m = ModelManager(make_header(6))
    m.add_batch(list(generate_records(5_000, 6, seed=4)))
    m.finish()
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.set_model(m, "synthetic")
    dock = win.docks["messages"]
    assert not dock.isVisible()  # hidden until asked for
    dock.setVisible(True)
    panel = dock.widget()
    panel.refresh()
    lay = win.diagram.layout_
    assert lay is not None
    view = win.diagram.data_viewport()
    assert np.array_equal(panel.matrix, message_matrix(lay, win.diagram.logical, view.x0, view.x1))
    assert panel.matrix.sum() > 0
    zoom_to_start(win.diagram, 50)
    panel.refresh()
    assert 0 < panel.matrix.sum() < message_matrix(lay, False).sum()
