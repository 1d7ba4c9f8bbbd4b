"""Flip a recorded race from the window: a real recorded mpiexec run, replayed flipped."""

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

pytestmark = [
    pytest.mark.gui,
    pytest.mark.mpi,
    pytest.mark.timeout(180),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "race_wildcard.py"


def test_replay_with_a_race_flipped_from_the_window(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "mpvis", "run", "-n", "4", "--headless", "--out", str(trace),
         "--record", str(tmp_path / "rec"), "--", str(EXAMPLE)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.open_trace(trace)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=20000)
    m = win.model
    assert m is not None and m.header["record"] == str((tmp_path / "rec").resolve())
    ctl = win.findChild(FlipController)
    assert isinstance(ctl, FlipController)
    recvs = [g for g in range(m.event_count) if m.c_kind[g] == rk.KIND_CODE[rk.RECV]]
    flippable = [g for g in recvs if ctl.can_flip(g)]
    assert flippable, "the wildcard receives of rank 0 race"
    sends = [g for g in range(m.event_count) if m.c_kind[g] == rk.KIND_CODE[rk.SEND]]
    assert not any(ctl.can_flip(g) for g in sends)
    ctl.flip(flippable[0])
    qtbot.waitUntil(lambda: ctl.dialog is not None, timeout=120000)
    box = ctl.dialog.findChild(QtWidgets.QPlainTextEdit)
    text = box.toPlainText()
    assert "flip: receive" in text and "rank 0" in text
    ctl.dialog.grab().save(str(tmp_path / "flip.png"))
    print(text)
