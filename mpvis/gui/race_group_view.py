"""The race list grouped by site pair (issue 14, item 3): one row per group.

The groups are :func:`mpvis.analysis.race_groups.group_races` over the races
the list's filters let through, the same grouping ``mpvis check`` prints, so
a task farm's thousands of races read as a few rows with counts.  Each row
keeps its races; selecting a row selects its first race in the diagram.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore

from mpvis.analysis.exact_events import ExactRace
from mpvis.analysis.race_groups import Group, SiteOf, group_races
from mpvis.gui.table_model import ColumnsTableModel
from mpvis.model.races import Race

Row = Race | ExactRace
_COLUMNS = ("races", "method", "sites (first / second receive, or receive / other send)",
            "verdicts", "ranks", "e.g.")


def group_rows(races: list[Row], site_of: SiteOf | None, base: str | None = None,
               ) -> list[tuple[Group, list[Row]]]:
    """The groups of ``races`` (largest first), each with its races in order."""
    entries: list[dict[str, Any]] = [r.to_report() for r in races]
    groups = group_races(entries, site_of=site_of, base=base)
    members: list[list[Row]] = [[] for _ in groups]
    for r, e in zip(races, entries, strict=True):
        members[int(e["group"])].append(r)
    return list(zip(groups, members, strict=True))


class GroupTableModel(ColumnsTableModel):
    """Groups of races as table rows."""

    COLUMNS = _COLUMNS

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[Group, list[Row]]] = []

    def set_rows(self, rows: list[tuple[Group, list[Row]]]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def row_count(self) -> int:
        return len(self.rows)

    def data(self, index: Any, role: int = 0) -> Any:
        if role not in (QtCore.Qt.ItemDataRole.DisplayRole, QtCore.Qt.ItemDataRole.ToolTipRole):
            return None
        g, races = self.rows[index.row()]
        ranks = g["ranks"]
        rank_text = (", ".join(map(str, ranks)) if len(ranks) <= 6
                     else f"{len(ranks)} ranks ({ranks[0]}..{ranks[-1]})")
        sep = " vs send " if g["method"] == "exact" else "  /  "
        return (
            str(len(races)),
            g["method"],
            f"{g['sites'][0]}{sep}{g['sites'][1]}",
            ", ".join(f"{n} {v}" for v, n in sorted(g["verdicts"].items())),
            rank_text,
            g["example"],
        )[index.column()]
