"""A flipped race shown as a diagram beside the recorded one (issue 14, item 6):
a real recorded mpiexec run, replayed flipped from the window."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

from mpvis.collector.mpiexec import find_mpiexec
from mpvis.gui.flip_action import FlipController
from mpvis.gui.window import MainWindow
from mpvis.protocol import records as rk
from tests.gui.test_flip_action import answer

pytestmark = [
    pytest.mark.gui,
    pytest.mark.mpi,
    pytest.mark.timeout(180),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "race_wildcard.py"


def test_flipped_run_is_drawn_beside_the_recorded_one(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "mpvis", "run", "-n", "4", "--headless", "--out", str(trace),
         "--record", str(tmp_path / "rec"), "--", str(EXAMPLE)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    win.open_trace(trace)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=20000)
    m = win.model
    assert m is not None
    ctl = win.findChild(FlipController)
    assert isinstance(ctl, FlipController)
    recvs = [g for g in range(m.event_count)
             if m.c_kind[g] == rk.KIND_CODE[rk.RECV] and ctl.can_flip(g)]
    g = recvs[-1]  # the second racing receive: its flip changes what it takes
    which = f"{int(m.c_rank[g])}:{int(m.c_seq[g])}"
    ctl.flip(g)
    answer(qtbot, ctl, "Run")  # the window asks before running what a trace names
    qtbot.waitUntil(lambda: ctl.dialog is not None, timeout=120000)
    assert ctl.flipped_path == tmp_path / "rec" / f"flip-{which.replace(':', '-')}.jsonl"
    assert ctl.flipped_path.is_file() and ctl.flipped is not None  # the trace is saved
    assert ctl.views is not None
    recorded, flipped = ctl.views
    assert recorded.model is m and flipped.model is ctl.flipped
    assert ctl.divergence and 0 in ctl.divergence  # rank 0 took another message
    for view in ctl.views:
        marks = view.overlays()["divergence"].highlight.tolist()
        vm = view.model
        assert vm is not None
        assert marks == [vm.gidx(r, s) for r, s in ctl.divergence.items() if s < vm.count(r)]
    summary = ctl.dialog.findChild(QtWidgets.QLabel, "flipSummary")
    assert summary is not None and f"Race of receive {which} flipped" in summary.text()
    assert f"0:{ctl.divergence[0]}" in summary.text()
    assert "flip: receive" in ctl.dialog.findChild(QtWidgets.QPlainTextEdit).toPlainText()
