"""A new rank order (folding 256+ ranks at the end of a load) does not make a
zoomed-out redraw compute every event's row (``Layout.y``: 80-165 ms of the GUI
thread at ten million events, for a frame that draws the density, issue 16)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.gui.windows import window_growing


def test_a_dense_redraw_after_a_new_rank_order_leaves_the_rows_of_the_events_alone(
        qtbot: Any) -> None:
    win, m, _recs = window_growing(qtbot, 8, 30_000, seed=6, first=30_000)
    m.finish()
    win.drain()
    d = win.diagram
    lay = d.layout_
    assert lay is not None
    d.select_event(123)
    d.set_rank_order(list(reversed(range(8))))
    d.redraw()
    assert d._density.isVisible()  # zoomed out: the density, no symbols
    assert lay._y_cache is None  # no row of every event computed
    # the selected event is still marked on its (new) row
    assert np.array_equal(d._select._xy, [[lay.x(False)[123], lay.y[123]]])
