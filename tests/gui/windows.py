"""The window the GUI tests drive: a real :class:`MainWindow`, shown offscreen."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.gui.diagram import DiagramView
from mpvis.gui.window import MainWindow
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import make_header
from mpvis.scene.frame import FrameIndex
from mpvis.scene.messages import message_index
from mpvis.sim.synthetic import generate_records


def shown_window(qtbot: Any) -> MainWindow:
    """A new empty window at 1200x800, shown, closed by ``qtbot`` after the test."""
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    return win


def window_growing(qtbot: Any, nprocs: int, events: int, seed: int, first: int
                   ) -> tuple[MainWindow, ModelManager, list[Record]]:
    """A shown window on a model of the synthetic program fed live: ``events``
    records generated, the first ``first`` of them added and drained (the rest
    returned for the test to add)."""
    win = shown_window(qtbot)
    m = ModelManager(make_header(nprocs, program="synthetic.py"))
    win.set_model(m, "test")
    recs = list(generate_records(events, nprocs, seed=seed))
    m.add_batch(recs[:first])
    win.drain()
    return win, m, recs


def zoom_to_start(diagram: DiagramView, share: float) -> npt.NDArray[np.float64]:
    """Zoom ``diagram`` to the first ``1/share`` of its run's span (real time) and
    redraw; the events' ``x``."""
    lay = diagram.layout_
    assert lay is not None
    x = lay.x(False)
    lo = float(np.nanmin(x))
    diagram.zoom_x(lo, lo + (float(np.nanmax(x)) - lo) / share)
    diagram.redraw()
    return x


def assert_frames_of_a_fresh_index(index: FrameIndex | None, diagram: DiagramView) -> None:
    """``index`` draws the diagram's current view as an index built now from its
    layout does (events and messages)."""
    lay = diagram.layout_
    assert index is not None and lay is not None
    oracle = FrameIndex(lay, message_index(lay), False)
    view = diagram.data_viewport()
    got, want = index.frame(view), oracle.frame(view)
    assert got.events.tolist() == want.events.tolist()
    assert got.messages.tolist() == want.messages.tolist()
