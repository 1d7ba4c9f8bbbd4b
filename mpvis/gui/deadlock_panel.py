"""The deadlock panel: what the deadlock monitor found, and its wait-for graph on the diagram.

Lists :attr:`mpvis.analysis.deadlock_monitor.DeadlockMonitor.deadlocks`
(Roy et al.'s wait-for graph, ``docs/deadlocks.md``) of the window's
:class:`~mpvis.analysis.pipeline.Analyses`.  Collective and lock misuse appear
while the records are fed; point-to-point cycles when the window asks the
monitor (a live run idle for a few seconds: ``check(final=False)``; the end of
the run or trace: ``final=True``).  Selecting a deadlock draws
:func:`mpvis.scene.deadlock_marks.deadlock_overlays` (the blocking events
ringed, the wait-for edges between them, the cycle in red) and scrolls to it;
*Export wait-for graph (DOT)…* writes :func:`mpvis.analysis.deadlock_report.to_dot`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from mpvis.analysis.deadlock_report import Deadlock, to_dot
from mpvis.gui.window_api import WindowApi
from mpvis.scene.deadlock_marks import OVERLAY_NAMES, deadlock_overlays

_COLUMNS = ("kind", "ranks", "check", "reason")


class DeadlockPanel(QtWidgets.QWidget):
    """A table of deadlocks above an export button; follows ``window.analyses``."""

    def __init__(self, window: WindowApi) -> None:
        super().__init__()
        self.window_ = window
        self.deadlocks: list[Deadlock] = []
        self.count = QtWidgets.QLabel()
        self.export = QtWidgets.QPushButton("Export wait-for graph (DOT)…")
        self.export.setEnabled(False)
        self.export.clicked.connect(self._export_clicked)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.count)
        top.addStretch(1)
        top.addWidget(self.export)
        self.table = QtWidgets.QTableWidget(0, len(_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(True)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.itemSelectionChanged.connect(self._selection)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.reason = QtWidgets.QLabel()
        self.reason.setWordWrap(True)
        self.reason.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addLayout(top)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.reason)
        window.deadlocks_changed.connect(self.refresh)
        window.model_replaced.connect(lambda _m: self.reset())
        self.refresh()

    def reset(self) -> None:
        """Forget the previous run's deadlocks (selection, reason, overlays), then
        show the current model's (File > Open, a new live run)."""
        self.deadlocks = []
        self.table.blockSignals(True)
        self.table.clearSelection()
        self.table.setRowCount(0)
        self.table.blockSignals(False)
        self.reason.setText("")
        self.count.setText("")
        self.export.setEnabled(False)
        self._clear_overlays()
        self.refresh()

    def refresh(self) -> None:
        """Show the monitor's current list (keeps the selection when it is still there)."""
        a = self.window_.analyses
        found = list(a.deadlock.deadlocks) if a is not None and a.deadlock is not None else []
        if found and [d.to_report() for d in found] == [d.to_report() for d in self.deadlocks]:
            return
        self.deadlocks = found
        self.table.blockSignals(True)
        self.table.setRowCount(len(found))
        for i, d in enumerate(found):
            cells = (d.kind, ", ".join(map(str, d.ranks)), d.check, d.reason)
            for j, text in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                item.setToolTip(d.reason)
                self.table.setItem(i, j, item)
        self.table.blockSignals(False)
        self.table.resizeColumnsToContents()
        self.table.resizeRowsToContents()
        self.count.setText(
            f"{len(found)} deadlock{'s' if len(found) != 1 else ''} found"
            if a is not None
            else "no deadlock analysis for this model"
        )
        self.export.setEnabled(False)
        self._clear_overlays()
        if found:
            dock = self.window_.docks.get("deadlocks")
            if dock is not None:
                dock.show()
                dock.raise_()

    def selected(self) -> Deadlock | None:
        rows = self.table.selectionModel().selectedRows()
        return self.deadlocks[rows[0].row()] if rows else None

    def select(self, i: int) -> None:
        """Select (and draw) deadlock ``i`` of the list."""
        self.table.selectRow(i)

    def _clear_overlays(self) -> None:
        for name in OVERLAY_NAMES:
            self.window_.diagram.clear_overlay(name)

    def _selection(self) -> None:
        d = self.selected()
        self.export.setEnabled(d is not None)
        self.reason.setText("" if d is None else d.reason)
        self._clear_overlays()
        m = self.window_.model
        if d is None or m is None:
            return
        overlays = deadlock_overlays(m, d)
        for name, ov in overlays.items():
            self.window_.diagram.set_overlay(name, ov)
        shown = [m.gidx(r, s) for r, s in d.events if s < m.count(r)]
        if shown:
            self.window_.diagram.fit_events(shown)  # every blocked rank in view
            self.window_.diagram.select_event(shown[0])

    def export_dot(self, path: str | Path, d: Deadlock | None = None) -> None:
        """Write the wait-for graph of ``d`` (default: the selected deadlock) as DOT."""
        d = d or self.selected()
        if d is None:
            raise ValueError("no deadlock selected")
        Path(path).write_text(to_dot(d), encoding="utf-8")

    def _export_clicked(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export wait-for graph", "waitfor.dot", "Graphviz DOT (*.dot *.gv)"
        )
        if path:
            try:
                self.export_dot(path)
            except OSError as exc:
                self.window_.show_message(f"cannot write {path}: {exc}", error=True)
                return
            self.window_.statusBar().showMessage(f"wrote {path}", 8000)


def make_deadlock_panel(window: WindowApi) -> QtWidgets.QWidget:
    """Factory for :func:`mpvis.gui.panels.register_panel` / ``window.add_panel``."""
    return DeadlockPanel(window)
