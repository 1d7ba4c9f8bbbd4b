"""File > Export trace for Perfetto / as OTF2: the trace the window shows, for other viewers.

A thin dialog over :func:`mpvis.tracefile.export.export_model`: the window's
model (a saved trace or a live run so far) and its analyses' report (races and
deadlocks, marked in the Perfetto file).
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtGui, QtWidgets

from mpvis.analysis.report import build_report
from mpvis.gui.window_api import WindowApi
from mpvis.tracefile.export import export_model
from mpvis.tracefile.otf2_export import Otf2ExportError
from mpvis.tracefile.otf2_names import Otf2Missing

#: format -> (menu text, default file name, file dialog filter)
CHOICES = {
    "perfetto": ("Export trace for P&erfetto…", "trace.perfetto.json",
                 "Chrome trace-event JSON (*.json)"),
    "otf2": ("Export trace as &OTF2…", "traces.otf2", "OTF2 anchor file (*.otf2)"),
}


def add_trace_exports(win: WindowApi, menu: QtWidgets.QMenu) -> None:
    """Add the actions to ``menu`` (stored on the window as ``act_export_<format>``)."""
    for fmt, (text, _name, _filter) in CHOICES.items():
        act = QtGui.QAction(text, win)
        act.triggered.connect(lambda _checked=False, f=fmt: _ask(win, f))
        menu.addAction(act)
        setattr(win, f"act_export_{fmt}", act)


def _ask(win: WindowApi, fmt: str) -> None:
    _text, name, filt = CHOICES[fmt]
    path, _ = QtWidgets.QFileDialog.getSaveFileName(win, "Export trace", name, filt)
    if path:
        export_shown_trace(win, fmt, path)


def export_shown_trace(win: WindowApi, fmt: str, path: str | Path) -> list[Path]:
    """Write the window's trace as ``fmt``; says on the status bar what was written,
    or in a message box why nothing was (no trace, the otf2 package missing...)."""
    m = win.model
    if m is None:
        QtWidgets.QMessageBox.information(win, "Export trace", "No trace is shown.")
        return []
    report = win.analyses.report() if win.analyses is not None else build_report(m)
    try:
        written = export_model(m, m.header, report, fmt, path)
    except (Otf2ExportError, Otf2Missing, OSError, ValueError) as exc:
        QtWidgets.QMessageBox.warning(win, "Export trace", str(exc))
        return []
    win.statusBar().showMessage("wrote " + ", ".join(map(str, written)), 8000)
    return written
