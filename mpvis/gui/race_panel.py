"""The race list: every race found, filtered by method, verdict, rank, situation and scope.

Adjacent races come from the model as they are found; non-adjacent ones are
added when the user clicks a ``recv(-1,-1)`` (section 3.2 of the paper).
Exact races (:class:`~mpvis.analysis.exact_events.ExactRace`, Cypher and Leu:
a match and a send that could have been matched instead) come from the exact
detector of the window's :class:`~mpvis.analysis.pipeline.Analyses`; the *✓*
column marks classifier races that the exact test confirms (the first
receive's match conflicts with the second message).  Selecting a row emits
:attr:`RacePanel.race_selected` with the ``Race`` or ``ExactRace``; the
window then highlights it.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.analysis.exact_events import ExactRace
from mpvis.analysis.exact_races import ExactRaceDetector
from mpvis.analysis.race_groups import SiteOf, relative_site
from mpvis.gui.race_group_view import GroupTableModel, group_rows
from mpvis.gui.race_rows import ExactRows, RaceRows, ShownRows
from mpvis.gui.table_model import ColumnsTableModel
from mpvis.model.races import Race
from mpvis.scene.vocabulary import (
    CONFIRMED,
    CONSUMPTION,
    COULD_MATCH,
    VERDICTS,
    event,
    situation_text,
)

_COLUMNS = (
    "#",
    "✓",
    "method",
    "rank",
    "receives",
    "situation",
    "verdict",
    "scope",
    "messages",
    "sites",
)
_VERDICT_COL = _COLUMNS.index("verdict")
METHOD_FILTERS = ("classifier + exact", "classifier", "exact")
Row = Race | ExactRace


def race_key(r: Race) -> tuple[int, int, tuple[int, int], tuple[int, int]] | None:
    """The exact test's key of a classifier race: (rank, first recv, message 1, message 2)."""
    m1, m2 = r.messages
    if m1 is None or m2 is None:
        return None
    return (r.rank, r.recvs[0], (m1[0], m1[1]), (m2[0], m2[1]))


ExactKey = tuple[int, int, tuple[int, int], tuple[int, int]]


def exact_key(e: ExactRace) -> ExactKey:
    return (e.rank, e.recv, (e.s1[0], e.s1[1]), (e.s2[0], e.s2[1]))


def exact_keys(exact: list[ExactRace]) -> set[ExactKey]:
    """The :func:`exact_key` of every race (what the ✓ of a classifier race looks up)."""
    return {exact_key(e) for e in exact}


class DetectorKeys(Container[ExactKey]):
    """:func:`exact_keys` of a detector that is no longer fed, without the set: each
    lookup asks the detector (a hash lookup in C; the set of a 1M-event trace's
    quarter of a million keys took about 50 bytes per event)."""

    def __init__(self, det: ExactRaceDetector) -> None:
        self._found = det.conflicts()

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 4:
            return False
        rank, recv, s1, s2 = key
        return (rank, recv, *s1, *s2) in self._found


_VERDICT_COLORS = {
    "legitimate": "#c62828",
    "unverified": "#ef6c00",
    "spurious": "#757575",
    "false": "#757575",
}
VERDICT_FILTERS = {
    "races (legitimate + unverified)": {"legitimate", "unverified"},
    "all pairs": {"legitimate", "unverified", "spurious", "false"},
    "legitimate": {"legitimate"},
    "unverified": {"unverified"},
    "spurious (same origin)": {"spurious"},
    "false (happened before)": {"false"},
}


def _msg(k: Any) -> str:
    return "-" if k is None else event(k[0], k[1])


class RaceTableModel(ColumnsTableModel):
    """Races as table rows."""

    COLUMNS = _COLUMNS

    def __init__(self) -> None:
        super().__init__()
        #: the program's directory: sites are shown relative to it
        self.base: str | None = None
        self.races: Sequence[Row] = []
        self.confirmed: Container[ExactKey] = set()

    def set_races(self, races: Sequence[Row]) -> None:
        self.beginResetModel()
        self.races = races
        self.endResetModel()

    def row_count(self) -> int:
        return len(self.races)

    def data(self, index: Any, role: int = 0) -> Any:
        r = self.races[index.row()]
        col = index.column()
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            if isinstance(r, ExactRace):
                return (
                    "-",
                    "",
                    "exact",
                    str(r.rank),
                    event(r.rank, r.recv),
                    "-",
                    "legitimate",
                    "-",
                    f"{_msg(r.s1)}, {_msg(r.s2)} (could match)",
                    "",
                )[col]
            key = race_key(r)
            return (
                str(r.id) if r.scope == "adjacent" else "-",
                "✓" if key is not None and key in self.confirmed else "",
                "classifier",
                str(r.rank),
                f"{event(r.rank, r.recvs[0])} / {event(r.rank, r.recvs[1])}",
                str(r.situation),
                r.verdict,
                r.scope,
                f"{_msg(r.messages[0])}, {_msg(r.messages[1])}",
                f"{relative_site(r.sites[0], self.base)} / "
                f"{relative_site(r.sites[1], self.base)}",
            )[col]
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and col == _VERDICT_COL:
            verdict = "legitimate" if isinstance(r, ExactRace) else r.verdict
            return QtGui.QBrush(QtGui.QColor(_VERDICT_COLORS.get(verdict, "#000")))
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and col == 1:
            return QtGui.QBrush(QtGui.QColor("#2e7d32"))
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(r, col)
        return None

    @staticmethod
    def _tooltip(r: Row, col: int) -> str | None:
        """Plain words for a cell (:mod:`mpvis.scene.vocabulary`)."""
        name = _COLUMNS[col]
        if name == "✓":
            return CONFIRMED
        if isinstance(r, ExactRace):
            return COULD_MATCH if name in ("messages", "method") else None
        if name == "situation":
            return (f"{situation_text(r.situation)}; {r.consumption}: "
                    f"{CONSUMPTION.get(r.consumption, '')}")
        if name == "verdict":
            return f"{r.verdict}: {VERDICTS.get(r.verdict, '')}"
        if name == "method":
            return "the 16-case classifier of MPVisualizer (Help > Glossary)"
        return None


class RacePanel(QtWidgets.QWidget):
    """Filters above a table of races."""

    race_selected = QtCore.Signal(object)  # Race or None
    #: a user clicked a row: ``(rank, seq)`` of the race's (first) receive
    receive_clicked = QtCore.Signal(int, int)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._all = RaceRows(None, np.zeros(0, dtype=np.int64))  # the classifier's
        self._extra: list[Race] = []
        self._gen = 0  # bumped when the classifier's races change (not the exact ones)
        #: the classifier's races the filters let through, and (generation, filters) then
        self._passed: tuple[tuple[object, ...], RaceRows] = ((), self._all)
        self._exact = ExactRows(np.zeros((0, 6), dtype=np.int64))
        self.method = QtWidgets.QComboBox()
        self.method.addItems(list(METHOD_FILTERS))
        self.verdict = QtWidgets.QComboBox()
        self.verdict.addItems(list(VERDICT_FILTERS))
        self.rank = QtWidgets.QLineEdit()
        self.rank.setPlaceholderText("any rank")
        self.rank.setMaximumWidth(80)
        self.situation = QtWidgets.QComboBox()
        self.situation.addItems(["any situation", *(str(s) for s in (3, 4, 7, 8, 11, 12, 15, 16))])
        self.scope = QtWidgets.QComboBox()
        self.scope.addItems(["adjacent + non-adjacent", "adjacent", "nonadjacent"])
        self.count = QtWidgets.QLabel()
        self.grouped = QtWidgets.QCheckBox("group by site pair")
        self.grouped.setToolTip("one row per pair of program sites that race, with counts "
                                "(what 'mpvis check --summary' prints)")
        #: Site of event (rank, seq), set by the window; used to group exact races.
        self.site_of: SiteOf | None = None
        #: ``(rank, seq)`` of the receive the list is narrowed to (a click on it).
        self.focus: tuple[int, int] | None = None
        self.focus_label = QtWidgets.QPushButton()
        self.focus_label.setToolTip("the list shows the races of one receive: click to show all")
        self.focus_label.clicked.connect(self.clear_focus)
        self.focus_label.hide()
        top = QtWidgets.QHBoxLayout()
        for w in (
            QtWidgets.QLabel("Show"),
            self.method,
            self.verdict,
            QtWidgets.QLabel("rank"),
            self.rank,
            self.situation,
            self.scope,
            self.grouped,
            self.focus_label,
            self.count,
        ):
            top.addWidget(w)
        top.addStretch(1)
        self.table = QtWidgets.QTableView()
        self.model = RaceTableModel()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        self.table.selectionModel().selectionChanged.connect(self._selection)
        self.table.clicked.connect(self._row_clicked)
        self.groups = GroupTableModel()
        self.group_table = QtWidgets.QTableView()
        self.group_table.setModel(self.groups)
        self.group_table.setSelectionBehavior(
            QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.group_table.setSelectionMode(
            QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.group_table.horizontalHeader().setStretchLastSection(True)
        self.group_table.verticalHeader().hide()
        self.group_table.selectionModel().selectionChanged.connect(self._group_selection)
        self.group_table.hide()
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.table)
        lay.addWidget(self.group_table)
        self.grouped.toggled.connect(self.refilter)
        for combo in (self.method, self.verdict, self.situation, self.scope):
            combo.currentIndexChanged.connect(self.refilter)
        self.rank.textChanged.connect(self.refilter)
        self.refilter()

    def set_races(self, races: Sequence[Race] | RaceRows) -> None:
        """The model's adjacent races (the panel keeps non-adjacent ones it was given)."""
        self._all = RaceRows.of(races)
        self._gen += 1
        self.refilter()

    def set_exact(self, exact: Sequence[ExactRace]) -> None:
        """The exact detector's races; classifier races they confirm get a ✓."""
        self._take_exact(exact)
        self.refilter()

    def set_lists(self, races: Sequence[Race] | RaceRows | None,
                  exact: Sequence[ExactRace] | None,
                  confirmed: Container[ExactKey] | None = None) -> None:
        """:meth:`set_races` (unless ``races`` is ``None``: the classifier's races as
        they are) and (unless ``exact`` is ``None``) :meth:`set_exact` with one pass
        of the filters (a pass over a 1M-event trace's races is long: none over the
        classifier's races when only the exact ones changed);
        ``confirmed``: :func:`exact_keys` of ``exact`` (or :class:`DetectorKeys`), if known.
        The races may come as arrays (:class:`~mpvis.gui.race_rows.RaceRows`,
        :class:`~mpvis.gui.race_rows.ExactRows`): rows are made as they are shown."""
        if races is not None:
            self._all = RaceRows.of(races)
            self._gen += 1
        if exact is not None:
            self._take_exact(exact, confirmed)
        self.refilter()

    def _take_exact(self, exact: Sequence[ExactRace],
                    confirmed: Container[ExactKey] | None = None) -> None:
        if exact is not self._exact:
            self._exact = exact if isinstance(exact, ExactRows) else ExactRows(np.array(
                [(e.rank, e.recv, *e.s1, *e.s2) for e in exact], dtype=np.int64))
        self.model.confirmed = exact_keys(list(exact)) if confirmed is None else confirmed

    def is_confirmed(self, race: Race) -> bool:
        key = race_key(race)
        return key is not None and key in self.model.confirmed

    def clear(self) -> None:
        self._all, self._extra = RaceRows(None, np.zeros(0, dtype=np.int64)), []
        self._exact = ExactRows(np.zeros((0, 6), dtype=np.int64))
        self._gen += 1
        self.focus = None
        self.focus_label.hide()
        self.model.confirmed = set()
        self.refilter()

    def add_nonadjacent(self, races: list[Race]) -> None:
        """Add the on-demand races of a ``recv(-1,-1)`` (replacing those of the same receive)."""
        keys = {(r.rank, r.recvs[0]) for r in races}
        self._extra = [r for r in self._extra if (r.rank, r.recvs[0]) not in keys] + races
        self._gen += 1
        self.refilter()

    def shown(self) -> list[Row]:
        """The races the filters let through, in the table's order."""
        return list(self.model.races)

    def all_races(self) -> list[Race]:
        """The classifier's races (adjacent, then the non-adjacent ones asked for)."""
        return self._all.views() + self._extra

    def exact_races(self) -> list[ExactRace]:
        return list(self._exact)

    def refilter(self, *args: object) -> None:
        method = self.method.currentText()
        verdicts = VERDICT_FILTERS[self.verdict.currentText()]
        rank_text = self.rank.text().strip()
        rank = int(rank_text) if rank_text.isdigit() else None
        sit = self.situation.currentText()
        scope = self.scope.currentText()
        key = (self._gen, method, self.verdict.currentText(), rank, sit, scope, self.focus)
        wanted_scope = None if scope.startswith("adjacent +") else scope
        situation = int(sit) if sit.isdigit() else None
        if key != self._passed[0]:  # else the classifier's races passed as before
            none = RaceRows(None, np.zeros(0, dtype=np.int64))
            self._passed = key, (none if method == "exact" else self._all.where(
                verdicts, rank, situation, wanted_scope, self.focus))
        extra = [] if method == "exact" else [
            r for r in self._extra
            if r.verdict in verdicts
            and (rank is None or r.rank == rank)
            and (situation is None or r.situation == situation)
            and (wanted_scope is None or r.scope == wanted_scope)
            and (self.focus is None or (r.rank == self.focus[0] and self.focus[1] in r.recvs))]
        exact = ExactRows(np.zeros((0, 6), dtype=np.int64))
        if (
            method != "classifier"
            and "legitimate" in verdicts
            and situation is None
            and (not scope.startswith("nonadjacent"))
        ):  # all of them when no rank or receive is chosen (millions on 10M events)
            exact = self._exact if rank is None and self.focus is None else \
                self._exact.where(rank, self.focus)
        shown = ShownRows(self._passed[1], extra, exact)
        self.model.set_races(shown)
        total = len(self._all) + len(self._extra) + len(self._exact)
        grouped = self.grouped.isChecked()
        self.table.setVisible(not grouped)
        self.group_table.setVisible(grouped)
        self.groups.set_rows(group_rows(list(shown), self.site_of) if grouped else [])
        groups = f" in {len(self.groups.rows)} groups" if grouped else ""
        self.count.setText(f"{len(shown)} of {total}{groups}")

    def focus_receive(self, rank: int, seq: int) -> list[Row]:
        """Narrow the list to the races of receive ``rank:seq`` and select them all;
        return them (the first one is emitted as selected)."""
        self.focus = (rank, seq)
        self.focus_label.setText(f"only races of recv {rank}:{seq}  ✕")
        self.focus_label.show()
        self.refilter()
        rows = list(self.model.races)
        if rows:
            sel = QtCore.QItemSelection(self.model.index(0, 0),
                                        self.model.index(len(rows) - 1, len(_COLUMNS) - 1))
            self.table.selectionModel().select(
                sel, QtCore.QItemSelectionModel.SelectionFlag.ClearAndSelect
                | QtCore.QItemSelectionModel.SelectionFlag.Rows)
        return rows

    def clear_focus(self) -> None:
        """Show every race again."""
        self.focus = None
        self.focus_label.hide()
        self.refilter()

    def selected_races(self) -> list[Row]:
        """Every selected row's race, in table order."""
        rows = sorted(i.row() for i in self.table.selectionModel().selectedRows())
        return [self.model.races[i] for i in rows]

    def select_race(self, race: Row) -> bool:
        """Select ``race`` in the table if the filters show it."""
        rows = self.model.races
        i = rows.position(race) if isinstance(rows, ShownRows) else -1
        if i < 0:
            return False
        self.table.selectRow(i)
        return True

    def _row_clicked(self, index: QtCore.QModelIndex) -> None:
        """A click (not a programmatic selection) on a row: its receive's races."""
        if self.focus is not None or not index.isValid():
            return
        r = self.model.races[index.row()]
        self.receive_clicked.emit(r.rank, r.recv if isinstance(r, ExactRace) else r.recvs[0])

    def _group_selection(self, *args: object) -> None:
        rows = self.group_table.selectionModel().selectedRows()
        if rows:
            self.race_selected.emit(self.groups.rows[rows[0].row()][1][0])

    def _selection(self, *args: object) -> None:
        rows = self.table.selectionModel().selectedRows()
        self.race_selected.emit(self.model.races[rows[0].row()] if rows else None)
