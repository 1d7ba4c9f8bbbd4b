"""The window a user trusts (issue 14): tests of the window's behaviour, offscreen."""

from __future__ import annotations

from pathlib import Path

from mpvis.collector.rendezvous import discover, rendezvous_path
from mpvis.gui.window import MainWindow


def test_an_invisible_window_does_not_advertise_itself(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.app import is_visible_platform, open_live_window

    win, live = open_live_window()
    qtbot.addWidget(win)
    try:
        assert not is_visible_platform()  # offscreen
        assert live.central.address is not None
        assert not rendezvous_path().exists() and discover() is None
    finally:
        live.stop()


ROOT = Path(__file__).resolve().parents[2]
FARM = ROOT / "sample_traces" / "master_worker.jsonl"


def _window(qtbot) -> MainWindow:  # type: ignore[no-untyped-def]
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    return win


def _open(qtbot, win: MainWindow, path: Path, exact: bool = True) -> None:  # type: ignore[no-untyped-def]
    win.open_trace(path)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=30000)
    if exact:  # the exact races follow the model
        qtbot.waitUntil(lambda: win.analyses is None or (win.analyses.exact is not None
                        and bool(win.races.exact_races())), timeout=30000)
    win.diagram.redraw()


def test_race_list_groups_by_site_pair_like_check(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = _window(qtbot)
    _open(qtbot, win, FARM)
    panel = win.races
    panel.method.setCurrentText("classifier")
    panel.grouped.setChecked(True)
    assert panel.group_table.isVisibleTo(win) and not panel.table.isVisibleTo(win)
    rows = panel.groups.rows
    assert len(rows) == 1  # 9 races of one master loop: one row
    g, races = rows[0]
    assert g["sites"] == ["master_worker.py:34", "master_worker.py:34"] and len(races) == 9
    assert "in 1 groups" in panel.count.text()
    with qtbot.waitSignal(panel.race_selected) as sig:
        panel.group_table.selectRow(0)
    assert sig.args[0] is races[0]
    panel.grouped.setChecked(False)
    assert panel.table.isVisibleTo(win) and panel.model.rowCount() >= 9


def _view_contains(win: MainWindow, gs: list[int]) -> bool:
    d = win.diagram
    lay = d.layout_
    assert lay is not None
    (x0, x1), (y0, y1) = d.vb.viewRange()
    xs = lay.x(d.logical)
    return all(x0 <= float(xs[g]) <= x1 and y0 <= float(lay.y[g]) <= y1 for g in gs)


def test_one_click_on_a_wildcard_receive_explains_its_races(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.model.races import Race

    win = _window(qtbot)
    _open(qtbot, win, FARM)
    m = win.model
    assert m is not None
    win.diagram.fit_all()
    g = m.gidx(0, 7)  # a recv(-1,-1) of the master loop: races with 0:5 and 0:9
    win.diagram.select_event(g)  # what a left click on its star does
    panel = win.races
    assert panel.focus == (0, 7) and panel.focus_label.isVisibleTo(win)
    rows = panel.shown()
    assert rows and all(r.rank == 0 and (7 in r.recvs if isinstance(r, Race) else r.recv == 7)
                        for r in rows)
    assert panel.selected_races() == rows  # all of them selected
    classifier = [r for r in rows if isinstance(r, Race)]
    ov = win.diagram.overlays()["race"]
    msgs = {(m.gidx(*msg), m.gidx(r.rank, c)) for r in classifier
            for msg, c in zip(r.messages, r.consumes, strict=True) if msg and c is not None}
    assert {tuple(s) for s in ov.segments.tolist()} == msgs  # both messages of each race
    race = classifier[0]
    ends = [m.gidx(race.rank, s) for s in race.recvs] + [m.gidx(*x) for x in race.messages if x]
    assert _view_contains(win, ends)  # both receives and both sends fitted
    panel.clear_focus()
    assert panel.focus is None and len(panel.shown()) > len(rows)


def test_selecting_a_deadlock_fits_every_blocked_rank(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = _window(qtbot)
    _open(qtbot, win, ROOT / "sample_traces" / "deadlock_three_cycle.jsonl", exact=False)
    m = win.model
    assert m is not None
    win.diagram.zoom_x(0.0, 1e-9)  # somewhere else entirely
    panel = win.deadlock_panel
    qtbot.waitUntil(lambda: bool(panel.deadlocks), timeout=20000)
    panel.select(0)
    d = panel.deadlocks[0]
    assert _view_contains(win, [m.gidx(r, s) for r, s in d.events if s < m.count(r)])


def test_race_popup_escape_dismiss_all_placement_and_exports(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6 import QtCore, QtGui

    from mpvis.gui.export import export_png
    from mpvis.model.manager import ModelManager
    from mpvis.sim.api import simulate

    win = _window(qtbot)
    header, recs = simulate("wildcard_race", 0)
    m = ModelManager(header)
    win.set_model(m, "live")
    m.add_batch(recs)
    m.finish()
    win.drain()
    win.diagram.fit_all()
    win.diagram.redraw()
    pop = win.notifier
    qtbot.waitUntil(lambda: pop.isVisible(), timeout=10000)
    assert pop.current is not None
    at = win._locate_race(pop.current)
    assert at is not None and not QtCore.QRectF(pop.geometry()).contains(at)
    # exports leave the pop-up out: the same picture with it shown or hidden
    export_png(win.centralWidget(), tmp_path / "with.png")
    pop.hide()
    export_png(win.centralWidget(), tmp_path / "without.png")
    pop.show()
    assert QtGui.QImage(str(tmp_path / "with.png")) == QtGui.QImage(str(tmp_path / "without.png"))
    waiting = len(pop.pending)
    win.activateWindow()
    pop.escape.activated.emit()  # what Escape does (a window shortcut)
    assert not pop.isVisible() and len(pop.pending) == waiting + 1
    pop.next()
    assert pop.isVisible()
    pop.btn_all.click()
    assert not pop.isVisible() and not pop.pending and pop.current is None
