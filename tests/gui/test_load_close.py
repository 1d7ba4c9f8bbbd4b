"""Closing the window while a trace loads stops the loader's thread first (a
QThread destroyed while running aborts the program)."""

from __future__ import annotations

from pathlib import Path

import pytest
import shiboken6

from mpvis.gui.window import MainWindow
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.writer import write_trace

pytestmark = pytest.mark.slow


def test_deleting_the_window_mid_load_stops_the_loader(  # type: ignore[no-untyped-def]
        qtbot, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(8, program="synthetic.py"), generate_records(60_000, 8, seed=5))
    win = MainWindow()
    win.show()
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    qtbot.waitUntil(lambda: win.model is not None and win.model.event_count > 0, timeout=30000)
    assert win.loader is loader and loader.isRunning()  # shown, still loading
    cancel = loader.cancel
    gone: list[bool] = []
    win.destroyed.connect(lambda *_: gone.append(True))
    win.deleteLater()
    qtbot.waitUntil(lambda: bool(gone), timeout=30000)
    assert cancel.is_set()


def test_an_error_early_in_a_long_trace_is_reported(  # type: ignore[no-untyped-def]
        qtbot, tmp_path: Path) -> None:
    """The GUI thread stops at the bad line while the worker has many batches
    still to queue: the worker stops too and the error is reported."""
    path = tmp_path / "bad.jsonl"
    write_trace(path, make_header(4, program="synthetic.py"), generate_records(150_000, 4, seed=2))
    lines = path.read_text().splitlines()
    lines.insert(100, '{"rank": 0, "kind": "send"}')  # line 101: no seq
    path.write_text("\n".join(lines) + "\n")
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    messages: list[str] = []
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    loader.failed.connect(lambda msg, *_: messages.append(msg))
    qtbot.waitUntil(lambda: bool(messages), timeout=60000)
    assert ":101:" in messages[0]
    # the worker stopped: its thread ended (and the window deleted it)
    qtbot.waitUntil(lambda: not shiboken6.isValid(loader) or not loader.isRunning(),
                    timeout=30000)
