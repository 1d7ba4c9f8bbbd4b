"""Exact races and deadlocks in the window (offscreen): ghosts, ✓, method filter, panel, DOT."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpvis.analysis.exact_events import ExactRace
from mpvis.collector.feed import RecordsArrived, RunEnded, RunStarted
from mpvis.gui.window import MainWindow
from mpvis.model.races import Race

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
S16 = ROOT / "sample_traces" / "situations" / "s16_RCRC.jsonl"
RECV_RECV = ROOT / "sample_traces" / "deadlock_recv_recv.jsonl"


def _open(qtbot, path: Path) -> MainWindow:  # type: ignore[no-untyped-def]
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    win.open_trace(path)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=20000)
    qtbot.waitUntil(lambda: win.diagram.layout_ is not None and win.diagram.layout_.logical_ready)
    win.diagram.redraw()
    return win


def test_ghost_lines_for_a_wildcard_receive(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = _open(qtbot, S16)
    m = win.model
    assert m is not None and win.analyses is not None
    recv = m.gidx(1, 0)  # recv(-1,-1) that got rank 0's message; rank 2's could match it
    menu = win.diagram.context_menu(recv)
    acts = {a.text(): a for a in menu.actions()}
    assert acts["Conflicting sends (exact)"].isEnabled()
    send_menu = {a.text(): a for a in win.diagram.context_menu(m.gidx(0, 0)).actions()}
    assert not send_menu["Conflicting sends (exact)"].isEnabled()
    acts["Conflicting sends (exact)"].trigger()
    ov = win.diagram.overlays()["ghosts"]
    assert ov.dashed
    assert ov.segments.tolist() == [[m.gidx(2, 0), recv]]
    win.diagram.redraw()
    items = win.diagram.overlay_layers.items["ghosts"]
    assert items.lines.segment_count() == 1
    lay = win.diagram.layout_
    assert lay is not None
    x = lay.x(win.diagram.logical)
    seg = items.lines._seg[0]
    assert seg.tolist() == [x[m.gidx(2, 0)], 2.0, x[recv], 1.0]


def test_confirmed_mark_and_method_filter(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = _open(qtbot, S16)
    panel = win.races
    kinds = {type(r) for r in panel.shown()}
    assert kinds == {Race, ExactRace}
    race = next(r for r in panel.shown() if isinstance(r, Race))
    assert panel.is_confirmed(race)
    row = panel.shown().index(race)
    assert panel.model.data(panel.model.index(row, 1), 0) == "✓"
    panel.method.setCurrentText("classifier")
    assert [type(r) for r in panel.shown()] == [Race]
    panel.method.setCurrentText("exact")
    exact = panel.shown()
    assert len(exact) == 1 and isinstance(exact[0], ExactRace)
    assert (exact[0].s1, exact[0].s2) == ((0, 0), (2, 0))
    panel.select_race(exact[0])  # selecting an exact race draws its ghost send
    assert win.diagram.overlays()["race"].dashed
    panel.method.setCurrentText("classifier + exact")
    win.show_race(race)
    assert "race-confirmed" in win.diagram.overlays()


def test_deadlock_panel_overlay_marker_and_dot(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    win = _open(qtbot, RECV_RECV)
    m = win.model
    assert m is not None
    panel = win.deadlock_panel
    assert len(panel.deadlocks) == 1 and panel.table.rowCount() == 1
    d = panel.deadlocks[0]
    assert d.kind == "p2p" and d.ranks == [0, 1]
    assert win.diagram.stuck_events == {0: 1, 1: 1}  # deadlocked ranks marked distinctly
    win.diagram.redraw()
    assert win.diagram._stops.point_count() == 2
    assert set(win.diagram._stops._cls.tolist()) == {2}
    panel.select(0)
    ov = win.diagram.overlays()["deadlock"]
    a, b = m.gidx(0, 1), m.gidx(1, 1)
    assert sorted(map(tuple, ov.segments.tolist())) == sorted([(a, b), (b, a)])
    assert sorted(ov.highlight.tolist()) == sorted([a, b])
    win.diagram.redraw()
    assert win.diagram.overlay_layers.items["deadlock"].lines.segment_count() == 6  # + arrowheads
    out = tmp_path / "waitfor.dot"
    panel.export_dot(out)
    text = out.read_text()
    assert text.startswith("digraph deadlock {") and text.rstrip().endswith("}")
    assert "r0 -> r1" in text and "r1 -> r0" in text and "color=red" in text
    panel.table.clearSelection()
    assert "deadlock" not in win.diagram.overlays()


def test_live_model_gets_analyses(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.model.manager import ModelManager
    from mpvis.sim.api import simulate

    win = MainWindow()
    qtbot.addWidget(win)
    header, recs = simulate("showcase", 0)
    win.inbox.append(RunStarted(header, Path("journal")))
    win.inbox.append(RecordsArrived(recs))
    win.inbox.append(RunEnded())
    win.drain()
    assert win.analyses is not None and win.model is win.analyses.model
    assert isinstance(win.model, ModelManager) and win.model.input_ended
    assert win.analyses.exact is not None
    assert len(win.races.exact_races()) == len(win.analyses.exact.races)
    lay = win.diagram.layout_
    assert lay is not None and lay.logical_ready
    assert np.all(np.isfinite(lay.x_logical))


def test_live_p2p_deadlock_found_when_the_run_goes_idle(
    qtbot, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui import window as window_mod
    from mpvis.sim.api import simulate

    win = MainWindow()
    qtbot.addWidget(win)
    header, recs = simulate("p2p_deadlock", 0)
    win.inbox.append(RunStarted(header, Path("journal")))
    win.inbox.append(RecordsArrived(recs))
    win.drain()
    assert win.deadlock_panel.deadlocks == []  # the ranks may still be running
    monkeypatch.setattr(window_mod, "IDLE_MS", 0)
    win.drain()  # nothing new: the run is idle, the monitor is asked once
    assert win.deadlock_panel.deadlocks, "an idle run's p2p cycle is listed"
    d = win.deadlock_panel.deadlocks[0]
    assert set(win.diagram.stuck_events) == {r for r, _ in d.events}
