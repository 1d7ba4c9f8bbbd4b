"""A trace is shown while it loads (issue 16): the window gets the model at once,
empty, and it grows in the GUI thread; the end result is the model that
:func:`~mpvis.tracefile.reader.load_trace` builds (the oracle)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.reader import load_trace
from mpvis.tracefile.writer import write_trace
from tests.gui.windows import shown_window

pytestmark = pytest.mark.slow


def test_a_trace_is_drawn_while_it_loads_and_ends_as_load_trace_builds_it(  # type: ignore[no-untyped-def]
        qtbot, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(8, program="synthetic.py"), generate_records(60_000, 8, seed=3))
    win = shown_window(qtbot)
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    seen: list[int] = []  # events shown while the loader was still at work

    def updated(_: object) -> None:
        if win.loader is not None and win.model is not None:
            seen.append(win.model.event_count)

    win.model_updated.connect(updated)
    qtbot.waitSignal(loader.exact_ready, timeout=120000).wait()
    qtbot.waitUntil(lambda: win.loader is None, timeout=10000)
    m, oracle = win.model, load_trace(path)
    assert m is not None and m.input_ended
    assert seen and 0 < min(seen) < oracle.event_count  # drawn before the end
    assert m.event_count == oracle.event_count
    for col in ("c_rank", "c_seq", "c_kind", "c_partner", "c_lamport"):
        assert np.array_equal(getattr(m, col).view(), getattr(oracle, col).view()), col
    assert len(m.races.races) == len(oracle.races.races)
    win.diagram.redraw()
    assert win.diagram.layout_ is not None and win.diagram.layout_.count == m.event_count


def test_a_bad_line_is_reported_with_the_events_before_it_shown(  # type: ignore[no-untyped-def]
        qtbot, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    write_trace(path, make_header(4, program="synthetic.py"), generate_records(20_000, 4, seed=1))
    lines = path.read_text().splitlines()
    lines.insert(9000, '{"rank": 0, "kind": "send"}')  # no seq: line 9001 breaks a rule
    path.write_text("\n".join(lines) + "\n")
    win = shown_window(qtbot)
    messages: list[str] = []
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    loader.failed.connect(lambda msg, *_: messages.append(msg))
    qtbot.waitUntil(lambda: bool(messages), timeout=60000)
    assert ":9001:" in messages[0]
    m = win.model
    assert m is not None and 0 < m.event_count < 20_000
