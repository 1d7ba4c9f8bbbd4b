"""The predicate panel: local, disjunctive and conjunctive predicates on a cone.

MPVisualizer (``mpvisualizer-race-detection.txt`` section 1) evaluates
user-defined local predicates, and their disjunctions and conjunctions, on
the frontier of the causality cone the user selected.  This panel:

* defines named local predicates (a rank and an expression of
  :mod:`mpvis.analysis.predicate_lang`; a syntax error is shown with its
  column) and global ones (*all of* / *any of* a list of local ones), saved
  per program next to the race settings (``<config>/<program>.predicates.json``);
* shows, for the cone drawn by :mod:`mpvis.gui.cones_overlay`, each local
  predicate's value at the frontier event of its rank, and each global
  predicate's value on that cut;
* beyond the paper, *Find where it holds*: the least consistent cut where a
  conjunction holds, or the minimal one where a disjunction first does, drawn
  on the diagram as a green cut line (overlay ``predicate.cut``).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.analysis.cones import Cone
from mpvis.analysis.predicates import (
    Cut,
    GlobalPredicate,
    Mode,
    PredicateError,
    PredicateEvaluator,
    PredicateSet,
    detect_conjunctive,
    detect_disjunctive,
)
from mpvis.analysis.predicates import LocalPredicate as Local
from mpvis.gui import cones_overlay
from mpvis.gui.panels import register_panel
from mpvis.gui.race_settings import config_dir, program_key
from mpvis.model.manager import ModelManager
from mpvis.scene.overlay import Overlay

CUT = "predicate.cut"
CUT_COLOR = "#2e7d32"
_MODES: dict[str, Mode] = {"all of (conjunction)": "conj", "any of (disjunction)": "disj"}


def settings_path(header: dict[str, Any], directory: Path | None = None) -> Path:
    """Where the predicates of the program of ``header`` are saved."""
    return (directory or config_dir()) / f"{program_key(header)}.predicates.json"


def load_predicates(path: Path) -> PredicateSet:
    """The saved predicates (empty if none or unreadable)."""
    try:
        return PredicateSet.from_settings(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return PredicateSet()


class PredicatePanel(QtWidgets.QWidget):
    """See the module docstring."""

    def __init__(self, window: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.window_ = window
        self.diagram = window.diagram
        self.cones = cones_overlay.install(window)
        self.model: ModelManager | None = None
        self.evaluator: PredicateEvaluator | None = None
        self.preds = PredicateSet()
        self.path: Path | None = None
        self.cone: Cone | None = None
        self._build()
        self.cones.cone_changed.connect(self.show_cone)
        window.model_replaced.connect(self.set_model)
        window.model_updated.connect(self._model_grew)
        self.set_model(window.model)

    # ------------------------------------------------------------ widgets
    def _build(self) -> None:
        box = QtWidgets.QVBoxLayout(self)
        self.cone_label = QtWidgets.QLabel()
        self.cone_label.setWordWrap(True)
        box.addWidget(self.cone_label)
        self.local_table = QtWidgets.QTableWidget(0, 4)
        self.local_table.setHorizontalHeaderLabels(["name", "rank", "expression", "at frontier"])
        self.global_table = QtWidgets.QTableWidget(0, 3)
        self.global_table.setHorizontalHeaderLabels(["name", "of", "on the cone"])
        for t in (self.local_table, self.global_table):
            t.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
            t.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
            t.horizontalHeader().setStretchLastSection(True)
            t.verticalHeader().hide()
        box.addWidget(QtWidgets.QLabel("<b>Local predicates</b>"))
        box.addWidget(self.local_table, 2)
        row = QtWidgets.QHBoxLayout()
        self.name_edit = QtWidgets.QLineEdit(placeholderText="name")
        self.rank_spin = QtWidgets.QSpinBox()
        self.expr_edit = QtWidgets.QLineEdit(placeholderText='x > 3 and phase == "update"')
        add = QtWidgets.QPushButton("Add")
        add.clicked.connect(self._add_local_clicked)
        self.expr_edit.returnPressed.connect(self._add_local_clicked)
        for w, stretch in (
            (self.name_edit, 1),
            (QtWidgets.QLabel("rank"), 0),
            (self.rank_spin, 0),
            (self.expr_edit, 3),
            (add, 0),
        ):
            row.addWidget(w, stretch)
        box.addLayout(row)
        box.addWidget(QtWidgets.QLabel("<b>Global predicates</b>"))
        box.addWidget(self.global_table, 1)
        row = QtWidgets.QHBoxLayout()
        self.gname_edit = QtWidgets.QLineEdit(placeholderText="name")
        self.mode_combo = QtWidgets.QComboBox()
        self.mode_combo.addItems(list(_MODES))
        self.parts_edit = QtWidgets.QLineEdit(placeholderText="a, b")
        gadd = QtWidgets.QPushButton("Add")
        gadd.clicked.connect(self._add_global_clicked)
        gwidgets: list[tuple[QtWidgets.QWidget, int]] = [
            (self.gname_edit, 1),
            (self.mode_combo, 0),
            (self.parts_edit, 2),
            (gadd, 0),
        ]
        for gw, stretch in gwidgets:
            row.addWidget(gw, stretch)
        box.addLayout(row)
        row = QtWidgets.QHBoxLayout()
        find = QtWidgets.QPushButton("Find where it holds")
        find.clicked.connect(self._find_clicked)
        remove = QtWidgets.QPushButton("Remove")
        remove.clicked.connect(self._remove_clicked)
        clear = QtWidgets.QPushButton("Clear cut")
        clear.clicked.connect(lambda: self.diagram.clear_overlay(CUT))
        for w in (find, remove, clear):
            row.addWidget(w)
        box.addLayout(row)
        self.message = QtWidgets.QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        box.addWidget(self.message)

    # ------------------------------------------------------------ model
    def set_model(self, model: ModelManager | None) -> None:
        """A new run: load its program's predicates."""
        self.model = model
        self.evaluator = None if model is None else PredicateEvaluator(model)
        self.rank_spin.setMaximum(max((model.nprocs if model else 1) - 1, 0))
        if model is not None:
            self.path = settings_path(model.header, getattr(self.window_, "settings_dir", None))
            self.preds = load_predicates(self.path)
        self.cone = None
        self._say("")
        self.refresh()

    def _model_grew(self, *args: object) -> None:
        if self.preds.locals and self.cone is not None:
            self.refresh()

    def show_cone(self, cone: Cone | None) -> None:
        self.cone = cone
        self.refresh()

    # ------------------------------------------------------------ editing
    def add_local(self, name: str, rank: int, expr: str) -> str | None:
        """Define (or redefine) a local predicate; returns an error message or None."""
        try:
            pred = Local.make(name.strip(), rank, expr)
            if self.model is not None and rank >= self.model.nprocs:
                raise PredicateError(f"rank {rank} is not in the run")
            self.preds.add_local(pred)
        except PredicateError as exc:
            return self._say(str(exc), error=True)
        self._changed()
        return None

    def add_global(self, name: str, mode: Mode, parts: list[str]) -> str | None:
        """Define (or redefine) a global predicate (``mode`` ``conj`` or ``disj``)."""
        try:
            if not name.strip():
                raise PredicateError("a global predicate needs a name")
            self.preds.add_global(
                GlobalPredicate(
                    name.strip(),
                    mode,
                    tuple(p.strip() for p in parts if p.strip()),
                )
            )
        except PredicateError as exc:
            return self._say(str(exc), error=True)
        self._changed()
        return None

    def remove(self, name: str) -> None:
        self.preds.remove(name)
        self._changed()

    def _changed(self) -> None:
        self._say("")
        self.save()
        self.refresh()

    def save(self) -> None:
        """Write the program's predicates (atomically; errors ignored)."""
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.preds.to_settings(), indent=1), encoding="utf-8")
            os.replace(tmp, self.path)

    def _add_local_clicked(self) -> None:
        if (
            self.add_local(self.name_edit.text(), self.rank_spin.value(), self.expr_edit.text())
            is None
        ):
            self.name_edit.clear()
            self.expr_edit.clear()

    def _add_global_clicked(self) -> None:
        mode = _MODES[self.mode_combo.currentText()]
        if self.add_global(self.gname_edit.text(), mode, self.parts_edit.text().split(",")) is None:
            self.gname_edit.clear()
            self.parts_edit.clear()

    def _selected_name(self) -> str | None:
        for table in (self.global_table, self.local_table):
            rows = table.selectionModel().selectedRows()
            if rows:
                item = table.item(rows[0].row(), 0)
                return item.text() if item is not None else None
        return None

    def _remove_clicked(self) -> None:
        name = self._selected_name()
        if name is not None:
            self.remove(name)

    def _find_clicked(self) -> None:
        name = self._selected_name()
        if name is None:
            self._say("Select a predicate first.", error=True)
        else:
            self.find_cut(name)

    # ------------------------------------------------------------ results
    def find_cut(self, name: str) -> Cut | None:
        """Find the first cut where predicate ``name`` holds and draw it."""
        ev = self.evaluator
        if ev is None:
            return None
        if name in self.preds.globals:
            g = self.preds.globals[name]
            parts, mode = self.preds.parts_of(name), g.mode
        else:
            parts, mode = [self.preds.locals[name]], "conj"
        try:
            if mode == "conj":
                cut = detect_conjunctive(ev, parts)
                how = "the least consistent cut"
            else:
                res = detect_disjunctive(ev, parts)
                cut = res.cut
                how = "a minimal consistent cut" + (
                    f" ({res.minimal[0][0]} holds)" if res.minimal else ""
                )
        except PredicateError as exc:
            self._say(str(exc), error=True)
            return None
        if cut is None:
            self.diagram.clear_overlay(CUT)
            self._say(f"{name}: no consistent cut of the run satisfies it.")
            return None
        self.diagram.set_overlay(CUT, self._cut_overlay(cut, name))
        self._say(f"{name} holds first at {how} {list(cut)} (events per rank).")
        return cut

    def _cut_overlay(self, cut: Cut, name: str) -> Overlay:
        m = self.model
        assert m is not None
        lay = self.diagram.layout_
        rows = lay.rows if lay is not None else np.arange(m.nprocs, dtype=float)
        last = sorted(
            (rows[r], m.gidx(r, k - 1)) for r, k in enumerate(cut) if k > 0 and rows[r] >= 0
        )
        gs = np.array([g for _, g in last], dtype=np.int64)
        return Overlay(
            highlight=gs,
            polyline=gs,
            color=CUT_COLOR,
            width=2.5,
            dashed=True,
            label=f"first cut where {name} holds",
            z=2,
        )

    def values(self) -> tuple[dict[str, bool], dict[str, bool]]:
        """Local and global values on the current cone ({} without a cone)."""
        if self.cone is None or self.evaluator is None:
            return {}, {}
        local = self.evaluator.values_at(list(self.preds.locals.values()), self.cone.past)
        glob = {}
        for g in self.preds.globals.values():
            vals = [local[p] for p in g.parts]
            glob[g.name] = all(vals) if g.mode == "conj" else any(vals)
        return local, glob

    def refresh(self) -> None:
        """Redraw both tables and the cone summary."""
        cone, m = self.cone, self.model
        if cone is None or m is None:
            self.cone_label.setText(
                "<span style='color:#757575'>Right-click an event and choose "
                "<i>Causality cone</i> to evaluate the predicates on its frontier.</span>"
            )
        else:
            r, s = cone.event
            self.cone_label.setText(
                f"Cone of <b>{r}:{s}</b>: {cone.size} events, frontier "
                + ", ".join(f"{q}:{f}" for q, f in enumerate(cone.frontier) if f is not None)
            )
        local, glob = self.values()
        self.local_table.setRowCount(len(self.preds.locals))
        for i, p in enumerate(self.preds.locals.values()):
            at = "-"
            if p.name in local:
                f = cone.frontier[p.rank] if cone is not None else None
                where = "initial state" if f is None else f"{p.rank}:{f}"
                at = f"{'true' if local[p.name] else 'false'} at {where}"
            self._row(self.local_table, i, [p.name, str(p.rank), p.source, at], local.get(p.name))
        self.global_table.setRowCount(len(self.preds.globals))
        for i, g in enumerate(self.preds.globals.values()):
            joiner = " and " if g.mode == "conj" else " or "
            value = glob.get(g.name)
            text = "-" if value is None else ("true" if value else "false")
            self._row(self.global_table, i, [g.name, joiner.join(g.parts), text], value)

    @staticmethod
    def _row(table: QtWidgets.QTableWidget, i: int, cells: list[str], value: bool | None) -> None:
        for j, text in enumerate(cells):
            item = QtWidgets.QTableWidgetItem(text)
            if j == len(cells) - 1 and value is not None:
                item.setForeground(QtGui.QColor("#2e7d32" if value else "#c62828"))
            table.setItem(i, j, item)

    def _say(self, text: str, error: bool = False) -> str:
        self.message.setStyleSheet("color:#c62828" if error else "")
        self.message.setText(text)
        return text


register_panel("predicates", "Cones and predicates", PredicatePanel, area="right")
