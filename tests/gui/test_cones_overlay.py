"""The cone overlay on a real (offscreen) window: what is drawn, dimmed, ringed."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

import numpy as np
import pytest

from mpvis.analysis.cones import ConeIndex
from mpvis.gui import cones_overlay
from mpvis.gui.cones_overlay import DIM, FUTURE, PAST, ConeController
from mpvis.gui.window import MainWindow
from mpvis.scene.overlay import dim_mask
from tests.fixtures import simulated_model

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: object, tmp_path: Path) -> MainWindow:
    w = MainWindow(settings_dir=tmp_path)
    qtbot.addWidget(w)  # type: ignore[attr-defined]
    w.set_model(simulated_model("master_worker"), "master_worker")
    return w


def faded(w: MainWindow) -> np.ndarray:
    lay = w.diagram.layout_
    assert lay is not None
    mask = dim_mask(list(w.diagram.overlays().values()), lay.count)
    assert mask is not None
    return mask


def test_past_cone_dims_outside_and_rings_the_frontier(window: MainWindow) -> None:
    ctl = cones_overlay.install(window)
    assert cones_overlay.install(window) is ctl
    m = window.model
    assert m is not None
    g = m.gidx(3, 12)
    ctl.show(g, past=True)
    cone = ConeIndex(m).cone(3, 12)
    ovs = window.diagram.overlays()
    assert set(ovs) >= {PAST, DIM} and FUTURE not in ovs
    inside = cone.past_mask(m.c_rank.view(), m.c_seq.view())
    assert (faded(window) == ~inside).all()
    front = {m.gidx(r, f) for r, f in enumerate(cone.frontier) if f is not None}
    assert set(ovs[PAST].highlight.tolist()) == front
    rows = window.diagram.layout_.rows  # type: ignore[union-attr]
    line_rows = [rows[int(m.c_rank[x])] for x in ovs[PAST].polyline]
    assert line_rows == sorted(line_rows) and len(line_rows) == len(front)
    bands = ctl.bands[PAST].rects()
    assert len(bands) == sum(1 for k in cone.past if k > 0)
    assert ctl.cone == cone


def test_both_cones_then_clear(window: MainWindow) -> None:
    ctl = cones_overlay.install(window)
    m = window.model
    assert m is not None
    g = m.gidx(0, 20)
    ctl.show(g, past=True, future=True)
    cone = ConeIndex(m).cone(0, 20)
    inside = cone.past_mask(m.c_rank.view(), m.c_seq.view()) | cone.future_mask(
        m.c_rank.view(), m.c_seq.view()
    )
    assert (faded(window) == ~inside).all()
    fut = {m.gidx(r, f) for r, f in enumerate(cone.future_frontier) if f is not None}
    assert set(window.diagram.overlays()[FUTURE].highlight.tolist()) == fut
    assert len(ctl.bands[cones_overlay.FUTURE].rects()) == len(fut)
    ctl.show(g, past=False)  # keeps the future cone of the same event
    assert set(window.diagram.overlays()) & {PAST, FUTURE} == {FUTURE}
    ctl.clear()
    assert not set(window.diagram.overlays()) & {PAST, FUTURE, DIM}
    assert len(ctl.bands[PAST].rects()) == 0


def test_context_menu_offers_the_cones(window: MainWindow, qtbot: object) -> None:
    ctl = cones_overlay.install(window)
    m = window.model
    assert m is not None
    g = m.gidx(2, 5)
    menu = window.diagram.context_menu(g)
    acts = {a.text(): a for a in menu.actions()}
    assert {"Causality cone", "Future cone", "Both cones", "Clear cones"} <= set(acts)
    assert not acts["Clear cones"].isEnabled()
    seen = []
    ctl.cone_changed.connect(seen.append)
    acts["Causality cone"].trigger()
    assert ctl.origin == g and ctl.show_past and not ctl.show_future
    assert seen and seen[-1] is ctl.cone
    acts = {a.text(): a for a in window.diagram.context_menu(g).actions()}
    assert acts["Clear cones"].isEnabled()
    acts["Clear cones"].trigger()
    assert seen[-1] is None and ctl.origin == -1


def test_layout_switch_and_reordered_ranks(window: MainWindow, qtbot: object) -> None:
    ctl = cones_overlay.install(window)
    m = window.model
    assert m is not None
    ctl.show(m.gidx(5, 10), past=True)
    real = ctl.bands[PAST].rects().copy()
    window.diagram.set_logical(True)
    logical = ctl.bands[PAST].rects()
    assert real.shape == logical.shape and not np.allclose(real[:, 0::2], logical[:, 0::2])
    order = list(range(m.nprocs))[::-1]
    window.diagram.set_rank_order(order, hidden={0})
    qtbot.wait(10)  # type: ignore[attr-defined]
    rows = window.diagram.layout_.rows  # type: ignore[union-attr]
    line = window.diagram.overlays()[PAST].polyline
    ranks = [int(m.c_rank[x]) for x in line]
    assert 0 not in ranks
    assert [rows[r] for r in ranks] == sorted(rows[r] for r in ranks)


def test_a_new_model_clears_the_cones(window: MainWindow) -> None:
    ctl = window.findChild(ConeController) or cones_overlay.install(window)
    m = window.model
    assert m is not None
    ctl.show(m.gidx(1, 3), past=True)
    window.set_model(None)
    assert ctl.cone is None and not ctl.can_show(0)
    assert PAST not in window.diagram.overlays()
