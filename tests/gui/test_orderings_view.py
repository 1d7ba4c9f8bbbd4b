"""POEG subgroups shaded in the window; a race's orderings explored from it (real mpiexec)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore

from mpvis.collector.mpiexec import find_mpiexec
from mpvis.gui.flip_action import FlipController
from mpvis.gui.orderings_view import OrderingsController
from mpvis.gui.window import MainWindow
from mpvis.sim.neighbor_exchange import neighbor_exchange_trace

pytestmark = [pytest.mark.gui]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "order_bug.py"


def _open(qtbot, path: Path) -> MainWindow:  # type: ignore[no-untyped-def]
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.open_trace(path)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=20000)
    return win


def test_subgroups_are_shaded_with_their_counts(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    header, records = neighbor_exchange_trace(3, 2)
    trace = tmp_path / "fig10.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))
    win = _open(qtbot, trace)
    ctl = win.findChild(OrderingsController)
    assert isinstance(ctl, OrderingsController)
    ctl.toggle.setChecked(True)  # View > POEG subgroups
    assert ctl.shown and ctl.decomposition is not None
    assert ctl.decomposition.orderings == 6268
    rects, _ = ctl.bands.rects()
    assert len(rects) == 6  # rank 0: 1, rank 1: one per Sendrecv (4), rank 2: 1
    assert sorted(ctl.bands.counts) == [1, 1, 2, 2, 2, 2]
    assert "6268" in win.statusBar().currentMessage()
    win.grab().save(str(tmp_path / "subgroups.png"))
    ctl.show_subgroups(False)
    assert len(ctl.bands.rects()[0]) == 0 and not ctl.toggle.isChecked()


@pytest.mark.mpi
@pytest.mark.timeout(240)
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_explore_a_race_from_the_window(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "mpvis", "run", "-n", "3", "--headless", "--out", str(trace),
         "--record", str(tmp_path / "rec"), "--", str(EXAMPLE)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    win = _open(qtbot, trace)
    ctl = win.findChild(OrderingsController)
    assert isinstance(ctl, OrderingsController)
    m = win.model
    racing = [g for g in range(m.event_count) if ctl.can_explore(g)]
    assert racing, "rank 0's wildcard receives race"
    ctl.explore(racing[0])
    flips = win.findChild(FlipController)
    box = flips.confirmation
    assert box is not None and ctl.process is None  # asked first: the trace names the program
    assert "explore" in box.informativeText() and "Exploring" in box.text()
    run = next(b for b in box.buttons() if b.text().replace("&", "") == "Run")
    qtbot.mouseClick(run, QtCore.Qt.MouseButton.LeftButton)
    assert ctl.process is not None
    assert not ctl.can_explore(racing[0])  # one exploration at a time
    qtbot.waitUntil(lambda: ctl.dialog is not None, timeout=200000)
    assert ctl.result is not None
    (diff,) = ctl.result["differences"]
    assert diff["what"] == ["rank 0 printed 'folded: 21' instead of 'folded: 12'"]
    beside = ctl.beside
    assert beside is not None
    qtbot.addWidget(beside)
    qtbot.waitUntil(lambda: beside.loader is None and beside.model is not None, timeout=20000)
    assert beside.x() > win.x()
    shutil.rmtree(Path(diff["trace"]).parent)  # the window keeps the runs for the user
