"""What the window keeps once a trace is loaded (issue 16: the window's memory)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

from PySide6 import QtCore

from tests.gui.windows import shown_window

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_a_trace_opened_after_another_lets_the_first_model_go(qtbot: Any) -> None:
    """Each loaded trace's model stayed in memory: its loader, a child of the
    window, held it, and the loader's ``gc.freeze`` kept its cycles from ever
    being collected.  Now only the model shown is alive (no collection asked
    for here: what the window does by itself)."""
    win = shown_window(qtbot)
    models: list[weakref.ref[Any]] = []
    for name in ("ring.jsonl", "master_worker.jsonl", "ring.jsonl"):
        win.open_trace(SAMPLES / name)
        loader = win.loader
        assert loader is not None
        with qtbot.waitSignal(loader.finished, timeout=60000):
            pass
        del loader
        assert win.model is not None
        models.append(weakref.ref(win.model))
        # (its loader goes at the next turn of the event loop)
        qtbot.waitUntil(lambda: not win.findChildren(QtCore.QThread), timeout=10000)
    # (the last load's collection runs on a turn of its own after it)
    qtbot.waitUntil(lambda: [m() is not None for m in models] == [False, False, True],
                    timeout=10000)
    gc.collect()
    assert win.model is models[-1]() and win.model is not None and win.model.input_ended


def test_reference_cycles_made_while_a_trace_loads_are_collected_at_its_end(qtbot: Any) -> None:
    """The loader stops the cyclic collector while the model grows and freezes
    what is left at the end: garbage made meanwhile (the frame index builds'
    copies of the layout) was never freed.  The window collects it when the
    load is done."""
    win = shown_window(qtbot)

    class Node:
        other: object = None

    refs: list[weakref.ref[Node]] = []

    def make_cycle(*_: object) -> None:  # while the trace loads, the collector stopped
        a, b = Node(), Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))

    win.open_trace(SAMPLES / "master_worker.jsonl")
    loader = win.loader
    assert loader is not None
    loader.started.connect(make_cycle)
    with qtbot.waitSignal(loader.finished, timeout=60000):
        pass
    qtbot.waitUntil(lambda: win.loader is None and bool(refs) and refs[0]() is None,
                    timeout=10000)
