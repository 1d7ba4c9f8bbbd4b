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


def _open(qtbot, win: MainWindow, path: Path) -> None:  # type: ignore[no-untyped-def]
    win.open_trace(path)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=30000)
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
