"""Where ranks stopped, as the diagram marks them (no Qt).

A rank suspended by the user, a rank that died and a rank blocked in a
deadlock each get a mark at the event where it stands: a pause sign, a cross
and a red octagon (:data:`STOP_SPECS`, in that order: a mark's class is its
index).  A deadlocked rank's mark is at the blocking event the deadlock
names, the others at :meth:`~mpvis.model.manager.ModelManager.where` the rank
is; ranks hidden, events not laid out yet or without an ``x`` are not marked.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mpvis.model.manager import ModelManager
from mpvis.scene import symbols as sym
from mpvis.scene.layout import Layout

#: The marks' symbols, by class.
STOP_SPECS = [
    sym.SymbolSpec("suspended", "suspended here", "pause", sym.SUSPENDED_COLOR, "#bf360c", 16),
    sym.SymbolSpec("dead", "died here", "cross", sym.DEAD_COLOR, "#000000", 16),
    sym.SymbolSpec("deadlocked", "deadlocked here", "octagon", "#d50000", "#4a0000", 20),
]
SUSPENDED, DEAD, DEADLOCKED = range(3)


def stop_marks(model: ModelManager, layout: Layout, logical: bool,
               deadlocked: dict[int, int]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int8]]:
    """``(points (k, 2) of x and row, classes (k,))`` of the ranks' marks;
    ``deadlocked``: rank -> seq of its blocking event."""
    pts: list[tuple[float, float]] = []
    cls: list[int] = []
    x = layout.x(logical)
    for r in range(model.nprocs):
        if layout.rows[r] < 0:
            continue
        s: int | None
        if r in deadlocked:
            s, c = deadlocked[r], DEADLOCKED
        else:
            status = model.status(r)
            if status not in ("suspended", "dead"):
                continue
            s, c = model.where(r), (SUSPENDED if status == "suspended" else DEAD)
        if s is None or s >= model.count(r):
            continue
        g = model.gidx(r, s)
        if g < layout.count and not np.isnan(x[g]):
            pts.append((float(x[g]), float(layout.rows[r])))
            cls.append(c)
    return np.array(pts, dtype=np.float64).reshape(-1, 2), np.array(cls, dtype=np.int8)
