"""The race list: every race found, filtered by verdict, rank, situation and scope.

Adjacent races come from the model as they are found; non-adjacent ones are
added when the user clicks a ``recv(-1,-1)`` (section 3.2 of the paper).
Selecting a race emits :attr:`RacePanel.race_selected`; the window then
highlights both receives and both messages.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from mpvis.model.races import Race

_COLUMNS = ("#", "rank", "receives", "situation", "verdict", "scope", "messages", "sites")
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
    return "-" if k is None else f"{k[0]}#{k[1]}"


class RaceTableModel(QtCore.QAbstractTableModel):
    """Races as table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.races: list[Race] = []

    def set_races(self, races: list[Race]) -> None:
        self.beginResetModel()
        self.races = races
        self.endResetModel()

    def rowCount(self, parent: Any = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self.races)

    def columnCount(self, parent: Any = None) -> int:
        return len(_COLUMNS)

    def headerData(self, section: int, orientation: Any, role: int = 0) -> Any:
        if role == QtCore.Qt.ItemDataRole.DisplayRole and (
            orientation == QtCore.Qt.Orientation.Horizontal
        ):
            return _COLUMNS[section]
        return None

    def data(self, index: Any, role: int = 0) -> Any:
        r = self.races[index.row()]
        col = index.column()
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return (
                str(r.id) if r.scope == "adjacent" else "-",
                str(r.rank),
                f"#{r.recvs[0]} / #{r.recvs[1]}",
                str(r.situation),
                r.verdict,
                r.scope,
                f"{_msg(r.messages[0])}, {_msg(r.messages[1])}",
                f"{r.sites[0] or '?'} / {r.sites[1] or '?'}",
            )[col]
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and col == 4:
            return QtGui.QBrush(QtGui.QColor(_VERDICT_COLORS.get(r.verdict, "#000")))
        return None


class RacePanel(QtWidgets.QWidget):
    """Filters above a table of races."""

    race_selected = QtCore.Signal(object)  # Race or None

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._all: list[Race] = []
        self._extra: list[Race] = []
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
        top = QtWidgets.QHBoxLayout()
        for w in (
            QtWidgets.QLabel("Show"),
            self.verdict,
            QtWidgets.QLabel("rank"),
            self.rank,
            self.situation,
            self.scope,
            self.count,
        ):
            top.addWidget(w)
        top.addStretch(1)
        self.table = QtWidgets.QTableView()
        self.model = RaceTableModel()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        self.table.selectionModel().selectionChanged.connect(self._selection)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.table)
        for combo in (self.verdict, self.situation, self.scope):
            combo.currentIndexChanged.connect(self.refilter)
        self.rank.textChanged.connect(self.refilter)
        self.refilter()

    def set_races(self, races: list[Race]) -> None:
        """The model's adjacent races (the panel keeps non-adjacent ones it was given)."""
        self._all = list(races)
        self.refilter()

    def clear(self) -> None:
        self._all, self._extra = [], []
        self.refilter()

    def add_nonadjacent(self, races: list[Race]) -> None:
        """Add the on-demand races of a ``recv(-1,-1)`` (replacing those of the same receive)."""
        keys = {(r.rank, r.recvs[0]) for r in races}
        self._extra = [r for r in self._extra if (r.rank, r.recvs[0]) not in keys] + races
        self.refilter()

    def shown(self) -> list[Race]:
        """The races the filters let through, in the table's order."""
        return list(self.model.races)

    def all_races(self) -> list[Race]:
        return self._all + self._extra

    def refilter(self, *args: object) -> None:
        verdicts = VERDICT_FILTERS[self.verdict.currentText()]
        rank_text = self.rank.text().strip()
        rank = int(rank_text) if rank_text.isdigit() else None
        sit = self.situation.currentText()
        scope = self.scope.currentText()
        shown = [
            r
            for r in self.all_races()
            if r.verdict in verdicts
            and (rank is None or r.rank == rank)
            and (not sit.isdigit() or r.situation == int(sit))
            and (scope.startswith("adjacent +") or r.scope == scope)
        ]
        self.model.set_races(shown)
        self.count.setText(f"{len(shown)} of {len(self.all_races())}")

    def select_race(self, race: Race) -> bool:
        """Select ``race`` in the table if the filters show it."""
        for i, r in enumerate(self.model.races):
            if r is race:
                self.table.selectRow(i)
                return True
        return False

    def _selection(self, *args: object) -> None:
        rows = self.table.selectionModel().selectedRows()
        self.race_selected.emit(self.model.races[rows[0].row()] if rows else None)
