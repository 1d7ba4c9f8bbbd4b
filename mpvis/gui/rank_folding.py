"""Folding many ranks into groups of similar behaviour, expanded with a click.

A run of 256 ranks or more does not fit as one row per rank.
:class:`RankFolder` takes groups (:func:`mpvis.scene.density.fold_ranks`:
ranks whose activity over the run is alike) and shows each folded group as
one row, its first rank's, labelled ``ranks 3-17 (15)`` (or ``ranks 0, 2… (136)``
when the members are not consecutive): the diagram hides the
other members (:meth:`DiagramView.set_rank_order`) and its density view
averages the whole group in that row (``DiagramView.density_rows``).  A click
on a folded group's row expands it (every member gets its own row again); a
click on any row of an expanded group folds it back.  Deadlocked ranks stay
labelled whatever their group (the diagram's own rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mpvis.scene.density import fold_ranks

if TYPE_CHECKING:
    from mpvis.gui.diagram import DiagramView

__all__ = ["FOLD_MIN_RANKS", "RankFolder", "group_label"]

#: Runs with at least this many ranks are folded when a trace is opened.
FOLD_MIN_RANKS = 256
#: At most this many rows once folded.
MAX_GROUPS = 40
#: Width of the rank labels' column while groups are folded (their labels are longer).
FOLDED_LABEL_PX = 156


def group_label(members: list[int]) -> str:
    """``rank 5`` for one rank; ``ranks 3-17 (15)`` for consecutive ranks (first-last,
    count); ``ranks 0, 2… (136)`` otherwise (the first two, count)."""
    if len(members) == 1:
        return f"rank {members[0]}"
    if members[-1] - members[0] + 1 == len(members):
        return f"ranks {members[0]}-{members[-1]} ({len(members)})"
    return f"ranks {members[0]}, {members[1]}… ({len(members)})"


class RankFolder:
    """The folded groups of one diagram, and which of them are expanded."""

    def __init__(self, view: DiagramView) -> None:
        self.view = view
        self.groups: list[list[int]] = []
        self.expanded: set[int] = set()  # indices into groups
        axis = view.getPlotItem().getAxis("left")
        self._label_px = int(axis.style.get("tickTextWidth", 76))  # unfolded width
        view.row_clicked.connect(self.toggle_row)

    def fold_similar(self, max_groups: int = MAX_GROUPS) -> None:
        """Group the view's ranks by behaviour (:func:`fold_ranks`) and fold them all."""
        lay = self.view.layout_
        if lay is None:
            return
        index = self.view.density_index()  # sorted per rank: no pass over the events
        self.fold(fold_ranks(lay, self.view.logical, max_groups=max_groups,
                             grid_of=None if index is None else index.grid))

    def fold(self, groups: list[list[int]]) -> None:
        """Show ``groups`` (each a list of ranks, together every rank once), all folded."""
        self.groups = [sorted(g) for g in groups if g]
        self.expanded = set()
        self.apply()

    def unfold_all(self) -> None:
        """One row per rank again."""
        self.groups = []
        self.expanded = set()
        self.apply()

    def apply(self) -> None:
        """Set the diagram's rows, labels and density rows from the groups."""
        view, lay = self.view, self.view.layout_
        if lay is None:
            return
        # pyqtgraph leaves out a tick label wider than its column: widen it while folded
        width = FOLDED_LABEL_PX if self.groups else self._label_px
        view.getPlotItem().getAxis("left").setStyle(tickTextWidth=width)
        if not self.groups:
            view.row_labels = {}
            view.density_rows = None
            view.set_rank_order(list(range(lay.nprocs)))
            return
        order: list[int] = []
        hidden: set[int] = set()
        labels: dict[int, str] = {}
        for i, members in enumerate(self.groups):
            order.extend(members)
            if i not in self.expanded and len(members) > 1:
                hidden.update(members[1:])
                labels[members[0]] = group_label(members)
        view.row_labels = labels
        view.set_rank_order(order, hidden)
        rows = lay.rows.astype(np.int64)
        for i, members in enumerate(self.groups):
            if i not in self.expanded:
                rows[members] = rows[members[0]]
        view.density_rows = rows
        view.schedule_redraw()  # on a turn of its own: the density of 256+ ranks

    def toggle_row(self, row: int) -> None:
        """Expand the folded group shown in ``row``, or fold the expanded group there."""
        lay = self.view.layout_
        if lay is None or not self.groups:
            return
        shown = np.flatnonzero(lay.rows == row)
        if not len(shown):
            return
        rank = int(shown[0])
        for i, members in enumerate(self.groups):
            if rank in members and len(members) > 1:
                self.expanded ^= {i}
                self.apply()
                return
