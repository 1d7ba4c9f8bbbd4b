"""The part every list-backed table of the window shares: a header of column names.

A subclass sets :attr:`COLUMNS` and :meth:`row_count`, and answers ``data``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6 import QtCore

__all__ = ["ColumnsTableModel"]


class ColumnsTableModel(QtCore.QAbstractTableModel):
    """A flat table (no children) with fixed, named columns."""

    COLUMNS: ClassVar[tuple[str, ...]] = ()

    def row_count(self) -> int:
        """How many rows the table has now."""
        raise NotImplementedError

    def rowCount(self, parent: Any = None) -> int:
        return 0 if parent is not None and parent.isValid() else self.row_count()

    def columnCount(self, parent: Any = None) -> int:
        return len(self.COLUMNS)

    def headerData(self, section: int, orientation: Any, role: int = 0) -> Any:
        if role == QtCore.Qt.ItemDataRole.DisplayRole and (
            orientation == QtCore.Qt.Orientation.Horizontal
        ):
            return self.COLUMNS[section]
        return None
