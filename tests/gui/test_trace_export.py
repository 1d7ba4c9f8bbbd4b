"""File > Export trace for Perfetto / as OTF2, on a trace opened in the window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpvis.gui.export_trace import export_shown_trace
from mpvis.gui.window import MainWindow
from mpvis.tracefile.reader import iter_records

pytestmark = pytest.mark.gui
pytest.importorskip("otf2")
TRACE = Path(__file__).resolve().parents[2] / "sample_traces" / "deadlock_three_cycle.jsonl"


def test_file_menu_exports_perfetto_and_otf2(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    win = MainWindow()
    qtbot.addWidget(win)
    texts = [a.text() for a in win.menuBar().actions()[0].menu().actions()]
    assert "Export trace for P&erfetto…" in texts and "Export trace as &OTF2…" in texts
    win.open_trace(TRACE)
    qtbot.waitUntil(lambda: win.loader is None and win.model is not None, timeout=20000)
    [pf] = export_shown_trace(win, "perfetto", tmp_path / "t.json")
    doc = json.loads(pf.read_text())
    assert sum(1 for e in doc["traceEvents"] if e.get("cat") == "deadlock") == 4
    [anchor] = export_shown_trace(win, "otf2", tmp_path / "t.otf2")
    key = lambda r: (r["rank"], r["seq"])  # noqa: E731
    assert sorted((r for _, r in iter_records(anchor)), key=key) == sorted(
        (r for _, r in iter_records(TRACE)), key=key)
    assert "wrote" in win.statusBar().currentMessage()
