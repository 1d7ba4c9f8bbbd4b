"""The window a user trusts (issue 14): tests of the window's behaviour, offscreen."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PySide6 import QtCore

from mpvis.collector.feed import RankLeft, RecordsArrived, RunStarted
from mpvis.collector.rendezvous import discover, rendezvous_path
from mpvis.gui.window import MainWindow
from mpvis.model.manager import ModelManager
from tests.fixtures import simulated_model
from tests.gui.windows import shown_window


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


def _open(qtbot, win: MainWindow, path: Path, exact: bool = True) -> None:  # type: ignore[no-untyped-def]
    win.open_trace(path)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=30000)
    if exact:  # the exact races follow the model
        qtbot.waitUntil(lambda: win.analyses is None or (win.analyses.exact is not None
                        and bool(win.races.exact_races())), timeout=30000)
    win.diagram.redraw()


def test_race_list_groups_by_site_pair_like_check(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
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

    win = shown_window(qtbot)
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
    assert win.diagram.selected == g  # the receive clicked stays selected
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
    win = shown_window(qtbot)
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
    from PySide6 import QtGui

    from mpvis.gui.export import export_png
    from mpvis.model.manager import ModelManager
    from mpvis.sim.api import simulate

    win = shown_window(qtbot)
    header, recs = simulate("wildcard_race", 0)
    m = ModelManager(header)
    win.set_model(m, "live")
    m.add_batch(recs)
    m.finish()
    win.drain()
    win.diagram.fit_all()
    win.diagram.redraw()
    pop = win.notifier
    qtbot.waitUntil(pop.isVisible, timeout=10000)
    assert pop.current is not None
    # docked above the diagram: it covers no part of the data
    assert pop.parentWidget() is win.diagram.parentWidget()
    assert not pop.geometry().intersects(win.diagram.geometry())
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


def _synthetic(nprocs: int, n_events: int) -> ModelManager:
    from mpvis.protocol.records import make_header
    from mpvis.sim.synthetic import generate_records

    m = ModelManager(make_header(nprocs, program="synthetic.py"))
    m.add_batch(list(generate_records(n_events, nprocs)))
    m.finish()
    return m


@given(rows=st.floats(0.5, 5000), pixels=st.floats(1, 4000))
def test_label_step_is_the_smallest_power_of_two_that_fits(rows: float, pixels: float) -> None:
    from mpvis.gui.diagram import label_step

    step = label_step(rows, pixels)
    assert step & (step - 1) == 0  # a power of two
    assert step * pixels / rows >= 16 or step == 1 << 20
    assert step == 1 or (step // 2) * pixels / rows < 16


def test_64_ranks_get_readable_labels_and_a_real_time_axis(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
    win.resize(1200, 700)
    win.set_model(_synthetic(64, 6000), "synthetic")
    d = win.diagram
    d.fit_all()
    qtbot.wait(50)
    axis = d.getPlotItem().getAxis("left")
    rows = sorted(v for v, _ in axis._tickLevels[0])
    (_, _), (y0, y1) = d.vb.viewRange()
    px_per_row = d.vb.sceneBoundingRect().height() / (y1 - y0)
    assert 4 <= len(rows) < 64  # thinned out, still labelled
    assert min(b - a for a, b in itertools.pairwise(rows)) * px_per_row >= 16
    d.zoom_to_ranks(0, 7)  # zoomed to 8 ranks: every one is labelled
    qtbot.wait(50)
    assert len(axis._tickLevels[0]) >= 8
    bottom = d.getPlotItem().getAxis("bottom")
    label = bottom.labelString()
    assert "time" in label and "x0.001" not in label and "logical" not in label
    assert "(ms)" in label or "(µs)" in label or "(s)" in label
    d.set_logical(True)
    qtbot.waitUntil(lambda: d.logical, timeout=20000)
    assert "logical time" in bottom.labelString() and "(x" not in bottom.labelString()


def test_live_view_is_labelled_real_time(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.sim.api import simulate

    win = shown_window(qtbot)
    header, recs = simulate("ring", 0)
    win.inbox.append(RunStarted(header, Path("journal.jsonl")))
    win.drain()
    win.inbox.append(RecordsArrived(recs[:40]))
    win.drain()
    label = win.diagram.getPlotItem().getAxis("bottom").labelString()
    assert "logical" not in label and "time" in label


def _wheel(d: object, ctrl: bool) -> None:
    from PySide6 import QtCore, QtGui, QtWidgets

    view = d.viewport()  # type: ignore[attr-defined]
    pos = QtCore.QPointF(view.width() / 2, view.height() / 2)
    mods = QtCore.Qt.KeyboardModifier.ControlModifier if ctrl else (
        QtCore.Qt.KeyboardModifier.NoModifier)
    ev = QtGui.QWheelEvent(pos, view.mapToGlobal(pos), QtCore.QPoint(0, 0),
                           QtCore.QPoint(0, 240), QtCore.Qt.MouseButton.NoButton, mods,
                           QtCore.Qt.ScrollPhase.NoScrollPhase, False)
    QtWidgets.QApplication.sendEvent(view, ev)


def test_wheel_zooms_time_only_and_ctrl_wheel_the_ranks(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
    win.set_model(_synthetic(16, 2000), "synthetic")
    d = win.diagram
    d.fit_all()
    qtbot.wait(20)
    (x0, x1), (y0, y1) = d.vb.viewRange()
    _wheel(d, ctrl=False)
    (a0, a1), (b0, b1) = d.vb.viewRange()
    assert a1 - a0 < (x1 - x0) * 0.99 and (b0, b1) == pytest.approx((y0, y1))
    _wheel(d, ctrl=True)
    (c0, c1), (e0, e1) = d.vb.viewRange()
    assert (c0, c1) == pytest.approx((a0, a1)) and e1 - e0 < (b1 - b0) * 0.99


def test_shift_drag_zooms_into_the_box(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6 import QtCore, QtGui, QtWidgets

    win = shown_window(qtbot)
    win.set_model(_synthetic(16, 2000), "synthetic")
    d = win.diagram
    d.fit_all()
    qtbot.wait(20)
    view = d.viewport()
    (x0, x1), (y0, y1) = d.vb.viewRange()
    r = d.mapFromScene(d.vb.sceneBoundingRect()).boundingRect()
    p0 = QtCore.QPointF(r.left() + r.width() * 0.25, r.top() + r.height() * 0.25)
    p1 = QtCore.QPointF(r.left() + r.width() * 0.5, r.top() + r.height() * 0.5)
    shift = QtCore.Qt.KeyboardModifier.ShiftModifier
    left = QtCore.Qt.MouseButton.LeftButton
    kinds = QtCore.QEvent.Type

    def send(kind: QtCore.QEvent.Type, p: QtCore.QPointF, buttons: object) -> None:
        ev = QtGui.QMouseEvent(kind, p, view.mapToGlobal(p), left, buttons, shift)
        QtWidgets.QApplication.sendEvent(view, ev)

    send(kinds.MouseButtonPress, p0, left)
    for i in range(1, 11):
        send(kinds.MouseMove, p0 + (p1 - p0) * (i / 10), left)
    send(kinds.MouseButtonRelease, p1, QtCore.Qt.MouseButton.NoButton)
    (a0, a1), (b0, b1) = d.vb.viewRange()
    assert a1 - a0 < (x1 - x0) * 0.5 and b1 - b0 < (y1 - y0) * 0.5  # zoomed into the box
    assert x0 < a0 < a1 < x1


def test_go_to_an_event_a_rank_and_a_site(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.goto_box import GotoBox

    win = shown_window(qtbot)
    _open(qtbot, win, FARM)
    m = win.model
    assert m is not None and isinstance(win.goto, GotoBox)
    box, d = win.goto, win.diagram
    box.setText("3:1")
    qtbot.keyClick(box, QtCore.Qt.Key.Key_Return)
    assert d.selected == m.gidx(3, 1) and _view_contains(win, [m.gidx(3, 1)])
    assert box.go("rank 4")
    lay = d.layout_
    assert lay is not None
    (_, _), (y0, y1) = d.vb.viewRange()
    assert y0 <= lay.rows[4] <= y1 and y1 - y0 < 6
    assert box.go("master_worker.py:52")
    site = "master_worker.py:52"
    at_site = [g for g in range(m.event_count)
               if m.site_of(int(m.c_rank[g]), int(m.c_seq[g])) == site]
    assert d.selected == at_site[0] and _view_contains(win, at_site)
    assert not box.go("9:0") and "no rank 9" in win.statusBar().currentMessage()
    assert not box.go("nowhere.py:1") and "no event at a site" in win.statusBar().currentMessage()


@pytest.mark.slow
def test_loading_announces_every_phase_and_its_progress(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.loader import PHASES
    from mpvis.protocol.records import make_header
    from mpvis.sim.synthetic import generate_records
    from mpvis.tracefile.writer import write_trace

    path = tmp_path / "big.jsonl"
    write_trace(path, make_header(16, program="synthetic.py"), generate_records(120_000, 16))
    win = shown_window(qtbot)
    phases: list[str] = []
    progress: list[tuple[int, int]] = []
    labels: list[str] = []
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    loader.phase.connect(phases.append)
    loader.progressed.connect(lambda d, t: progress.append((d, t)))
    labels.append(win.status_label.text())
    qtbot.waitSignal(loader.exact_ready, timeout=120000).wait()
    qtbot.waitUntil(lambda: win.model is not None, timeout=10000)
    assert labels[0].startswith("loading big.jsonl")  # never "no trace" while loading
    assert phases[-3:] == list(PHASES[1:])  # (the first may come before we listen)
    assert any(t and d == t for d, t in progress)  # the exact pass reports up to its end


def test_opening_another_trace_resets_the_deadlock_panel(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
    _open(qtbot, win, ROOT / "sample_traces" / "deadlock_three_cycle.jsonl", exact=False)
    panel = win.deadlock_panel
    qtbot.waitUntil(lambda: bool(panel.deadlocks), timeout=20000)
    panel.select(0)
    assert panel.reason.text() and "deadlock" in win.diagram.overlays()
    _open(qtbot, win, ROOT / "sample_traces" / "ring.jsonl", exact=False)
    assert panel.deadlocks == [] and panel.table.rowCount() == 0
    assert panel.reason.text() == "" and "deadlock" not in win.diagram.overlays()


def test_races_speak_plainly(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.actions import show_glossary
    from mpvis.model.races import Race

    win = shown_window(qtbot)
    _open(qtbot, win, FARM)
    panel = win.races
    panel.method.setCurrentText("classifier")
    tm = panel.model
    col = {name: i for i, name in enumerate(
        tm.headerData(c, QtCore.Qt.Orientation.Horizontal, QtCore.Qt.ItemDataRole.DisplayRole)
        for c in range(tm.columnCount()))}
    race = tm.races[0]
    assert isinstance(race, Race)
    recvs = tm.data(tm.index(0, col["receives"]), QtCore.Qt.ItemDataRole.DisplayRole)
    assert recvs == f"0:{race.recvs[0]} / 0:{race.recvs[1]}"  # rank:seq, as the CLI
    tip = tm.data(tm.index(0, col["situation"]), QtCore.Qt.ItemDataRole.ToolTipRole)
    assert "recv(ANY_SOURCE, ANY_TAG), then recv(ANY_SOURCE, ANY_TAG)" in tip and "RCRC" in tip
    tip = tm.data(tm.index(0, col["verdict"]), QtCore.Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("legitimate: a real race")
    assert win._call_of(0, race.recvs[0]) == "recv(ANY_SOURCE, ANY_TAG) at master_worker.py:34"
    win.notifier.current = race
    win.notifier.refresh()
    assert "0:5 recv(ANY_SOURCE, ANY_TAG) at master_worker.py:34" in win.notifier.title.text()
    dlg = show_glossary(win)
    assert dlg.isVisible()


def _live_run(qtbot, tmp_path: Path) -> MainWindow:  # type: ignore[no-untyped-def]
    """A window showing a live run whose journal is a real file."""
    from mpvis.sim.api import simulate
    from mpvis.tracefile.writer import write_trace

    header, recs = simulate("ring", 0)
    journal = tmp_path / "journal.jsonl"
    write_trace(journal, header, recs)
    win = shown_window(qtbot)
    win.inbox.append(RunStarted(header, journal))
    win.inbox.append(RecordsArrived(recs))
    win.drain()
    return win


def test_a_live_run_is_saved_or_the_window_asks_before_closing(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6 import QtWidgets

    from mpvis.gui.keep_run import save_trace_as, unsaved_run

    win = _live_run(qtbot, tmp_path)
    assert unsaved_run(win)
    assert not win.close() and win.isVisible()  # asks instead
    box = win.findChild(QtWidgets.QMessageBox, "unsavedRun")
    assert box is not None and box.isVisible()
    box.button(QtWidgets.QMessageBox.StandardButton.Cancel).click()
    assert win.isVisible()
    out = tmp_path / "kept.jsonl"
    assert save_trace_as(win, out)
    assert out.read_bytes() == (tmp_path / "journal.jsonl").read_bytes()
    assert not unsaved_run(win) and win.close()  # saved: closes without asking


def test_discard_closes_the_window(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6 import QtWidgets

    win = _live_run(qtbot, tmp_path)
    assert not win.close()
    box = win.findChild(QtWidgets.QMessageBox, "unsavedRun")
    assert box is not None
    box.button(QtWidgets.QMessageBox.StandardButton.Discard).click()
    assert not win.isVisible()


def test_a_second_window_says_it_does_not_receive_runs(tmp_path: Path) -> None:
    import json
    import os
    import subprocess

    from mpvis.gui.app import may_advertise

    assert may_advertise(False) == (False, "")
    assert may_advertise(True) == (True, "")  # no other window
    other = subprocess.Popen(["sleep", "60"])
    try:
        path = rendezvous_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"host": "127.0.0.1", "port": 1, "token": "t", "pid": other.pid}, fh)
        ok, why = may_advertise(True)
        assert not ok and f"another mpvis window (pid {other.pid})" in why
    finally:
        other.kill()
        other.wait()


def test_wait_for_edges_have_arrowheads(qtbot) -> None:  # type: ignore[no-untyped-def]
    win = shown_window(qtbot)
    _open(qtbot, win, ROOT / "sample_traces" / "deadlock_three_cycle.jsonl", exact=False)
    panel = win.deadlock_panel
    qtbot.waitUntil(lambda: bool(panel.deadlocks), timeout=20000)
    panel.select(0)
    win.diagram.redraw()
    ov = win.diagram.overlays()["deadlock"]
    assert ov.arrows and len(ov.segments) >= 3  # a cycle of three ranks
    drawn = win.diagram.overlay_layers.items["deadlock"].lines.segment_count()
    assert drawn == 3 * len(ov.segments)  # each edge and its two strokes of arrowhead


def test_a_dead_ranks_reason_is_shown(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.scene.describe import details, summary
    from mpvis.sim.api import simulate

    win = shown_window(qtbot)
    header, recs = simulate("ring", 0)
    win.inbox.append(RunStarted(header, Path("journal.jsonl")))
    mine = [r for r in recs if r["rank"] != 2 or r["seq"] < 3]
    win.inbox.append(RecordsArrived(mine))
    win.inbox.append(RankLeft(2, "killed", "Traceback...\nZeroDivisionError: boom"))
    win.drain()
    m = win.model
    assert m is not None and 2 in m.dead
    assert "rank 2 died: killed" in win.statusBar().currentMessage()
    last = m.gidx(2, m.count(2) - 1)
    assert "rank 2 died here: killed" in summary(m, m.event_at(last))
    assert ("rank status", f"dead: {m.dead[2]}") in details(m, m.event_at(last))


def test_clicking_a_race_row_narrows_the_list_to_its_receive(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.model.races import Race

    win = shown_window(qtbot)
    _open(qtbot, win, FARM)
    panel = win.races
    panel.method.setCurrentText("classifier")
    race = panel.shown()[2]
    assert isinstance(race, Race)
    table = panel.table
    rect = table.visualRect(panel.model.index(2, 3))
    qtbot.mouseClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert panel.focus == (race.rank, race.recvs[0])
    rows = panel.shown()
    assert race in rows and all(race.recvs[0] in r.recvs for r in rows if isinstance(r, Race))
    assert panel.selected_races() == rows
    ends = [win.model.gidx(race.rank, s) for s in race.recvs] + [
        win.model.gidx(*x) for x in race.messages if x]
    assert _view_contains(win, ends)


def test_showing_a_cone_fits_it_in_view(qtbot) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui import cones_overlay

    win = shown_window(qtbot)
    m = simulated_model("master_worker")
    win.set_model(m, "master_worker")
    ctl = cones_overlay.install(win)
    win.diagram.zoom_x(0.0, 1e-9)  # looking elsewhere
    g = m.gidx(3, 12)
    ctl.show(g, past=True, future=True)
    cone = ctl.cone
    assert cone is not None
    fronts = [m.gidx(r, f) for r, f in enumerate(cone.frontier) if f is not None]
    fronts += [m.gidx(r, f) for r, f in enumerate(cone.future_frontier)
               if f is not None and f < m.count(r)]
    assert _view_contains(win, [g, *fronts])


def test_the_window_process_gives_numpy_arrays_no_huge_pages(qtbot) -> None:  # type: ignore[no-untyped-def]
    """``make_app`` turns NumPy's ``madvise(MADV_HUGEPAGE)`` of large arrays off
    (page faults that compact memory stalled the GUI thread); arrays still work."""
    import numpy as np

    from mpvis.gui.app import make_app

    multiarray = pytest.importorskip("numpy._core.multiarray")
    multiarray._set_madvise_hugepage(True)
    make_app()
    assert multiarray._get_madvise_hugepage() is False
    big = np.ones(1 << 21)  # 16 MiB: above NumPy's 4 MiB threshold
    assert float(big.sum()) == float(1 << 21)
