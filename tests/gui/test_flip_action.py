"""Flip a recorded race from the window: a real recorded mpiexec run, replayed flipped."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

from mpvis.collector.mpiexec import find_mpiexec
from mpvis.gui.flip_action import FlipController
from mpvis.gui.window import MainWindow
from mpvis.protocol import records as rk

pytestmark = [pytest.mark.gui, pytest.mark.timeout(180)]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "race_wildcard.py"


def answer(qtbot, ctl: FlipController, text: str) -> None:  # type: ignore[no-untyped-def]
    """Click ``text`` in the question the flip asks before running a program."""
    qtbot.waitUntil(lambda: ctl.confirmation is not None, timeout=10000)
    box = ctl.confirmation
    assert box is not None
    button = next(b for b in box.buttons() if b.text().replace("&", "") == text)
    qtbot.mouseClick(button, QtCore.Qt.MouseButton.LeftButton)


@pytest.mark.slow
def test_a_trace_cannot_run_a_program_unasked(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A trace whose header names a program: the window shows the exact command
    and runs nothing unless the user says Run (issue 15)."""
    marker = tmp_path / "PWNED"
    evil = ["/bin/sh", "-c", f"touch {marker}"]
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2,
              "record": str(tmp_path / "rec"), "argv": evil, "cwd": str(tmp_path)}
    trace = tmp_path / "evil.jsonl"
    trace.write_text(json.dumps(header) + "\n" + json.dumps(
        {"rank": 1, "seq": 0, "kind": "recv", "src": -1, "tag": -1, "blocking": True}) + "\n")
    win = MainWindow()
    qtbot.addWidget(win)
    win.open_trace(trace)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=20000)
    ctl = win.findChild(FlipController)
    assert isinstance(ctl, FlipController)
    ctl.flip(0)
    box = ctl.confirmation
    assert box is not None and ctl.process is None  # asked first, nothing started
    shown = box.informativeText()
    assert shlex.join(evil) in shown and str(tmp_path) in shown
    answer(qtbot, ctl, "Cancel")
    assert ctl.confirmation is None and ctl.process is None
    ctl.flip(0)
    answer(qtbot, ctl, "Run")
    assert ctl.process is not None  # now it runs, as confirmed
    qtbot.waitUntil(lambda: ctl.process is None, timeout=60000)


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
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
    answer(qtbot, ctl, "Run")
    qtbot.waitUntil(lambda: ctl.dialog is not None, timeout=120000)
    assert ctl.dialog is not None
    box = ctl.dialog.findChild(QtWidgets.QPlainTextEdit)
    assert box is not None
    text = box.toPlainText()
    assert "flip: receive" in text and "rank 0" in text
    ctl.dialog.grab().save(str(tmp_path / "flip.png"))
    print(text)
