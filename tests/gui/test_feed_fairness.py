"""The loader's turns of feeding leave the other timers of the GUI thread their
turn (issue 16): a timer that fell due during a turn of feeding runs before the
next one, so a wait between two frames holds one turn of feeding, not two."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from PySide6 import QtCore

from mpvis.gui import loader as loader_module
from mpvis.gui import turns
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.writer import write_trace
from tests.gui.windows import shown_window

#: The other timer's interval (ms): turns of feeding longer than this (plus
#: slack for the timer's own lateness) must see it run before the next turn.
TICK_MS = 4
LONG_S = 0.010


def test_a_timer_due_during_a_turn_of_feeding_runs_before_the_next_turn(
        qtbot: Any, tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(8, program="synthetic.py"), generate_records(120_000, 8, seed=3))
    seen: list[tuple[str, float, float]] = []  # (what, began, ended)
    feed = loader_module.TraceLoader._feed

    def timed_feed(self: loader_module.TraceLoader) -> None:
        began = time.perf_counter()
        feed(self)
        seen.append(("feed", began, time.perf_counter()))

    # the class's slot, before the loader connects it to its timer
    monkeypatch.setattr(loader_module.TraceLoader, "_feed", timed_feed)
    win = shown_window(qtbot)
    ticker = QtCore.QTimer(win)
    ticker.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
    ticker.setInterval(TICK_MS)
    ticker.timeout.connect(lambda: seen.append(("tick", time.perf_counter(), 0.0)))
    ticker.start()
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    with qtbot.waitSignal(loader.loaded, timeout=120_000):
        pass
    ticker.stop()
    feeds = [i for i, (what, _, _) in enumerate(seen) if what == "feed"]
    long_pairs = [(i, j) for i, j in itertools.pairwise(feeds)
                  if seen[i][2] - seen[i][1] > LONG_S]
    assert len(long_pairs) >= 3, "the load made too few long turns of feeding to tell"
    starved = [(i, j) for i, j in long_pairs
               if not any(what == "tick" for what, _, _ in seen[i + 1:j])]
    assert not starved, f"{len(starved)} of {len(long_pairs)} long turns followed by another"


def test_no_turn_of_feeding_comes_between_two_parts_queued_together(
        qtbot: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Parts queued with :func:`mpvis.gui.turns.later` (a drain's message index,
    then its redraw) run on consecutive turns of the feeding: a turn of feeding
    that fell due between them is left for later (at most ``MAX_SKIPS`` in a row)."""
    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(8, program="synthetic.py"), generate_records(150_000, 8, seed=5))
    seen: list[str] = []
    turn = loader_module.TraceLoader._feed_turn

    def fed(self: loader_module.TraceLoader, a: Any) -> None:
        seen.append("feed")
        turn(self, a)

    monkeypatch.setattr(loader_module.TraceLoader, "_feed_turn", fed)
    win = shown_window(qtbot)
    win.open_trace(path)
    loader = win.loader
    assert loader is not None

    def queue_two() -> None:  # as the window's drain does, from a timer of its own
        if not turns.pending():
            turns.later(lambda: seen.append("first"))
            turns.later(lambda: seen.append("second"))

    drains = QtCore.QTimer(win)
    drains.setInterval(TICK_MS)
    drains.timeout.connect(queue_two)
    drains.start()
    with qtbot.waitSignal(loader.loaded, timeout=120_000):
        pass
    drains.stop()
    qtbot.waitUntil(lambda: not turns.pending(), timeout=10_000)
    firsts = [i for i, what in enumerate(seen) if what == "first"]
    assert len(firsts) >= 3, "the load made too few turns of feeding to tell"
    for i in firsts:
        assert "second" in seen[i + 1:], seen[i:]
        assert seen[i + 1:seen.index("second", i)].count("feed") == 0, seen[i:i + 6]


def test_a_part_queued_inside_a_long_slot_runs_after_the_timers_due_meanwhile(
        qtbot: Any) -> None:
    """An idle turn queue starts its timer once the slot that queued a part has
    returned: the first part does not run in the same wait as that slot, ahead
    of a timer that fell due during it."""
    got: list[str] = []
    ticker = QtCore.QTimer()
    ticker.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
    ticker.setInterval(TICK_MS)
    ticker.timeout.connect(lambda: got.append("tick"))

    def long_slot() -> None:
        got.append("slot")
        turns.later(lambda: got.append("part"))
        until = time.perf_counter() + 0.030  # past the ticker's next time
        while time.perf_counter() < until:
            pass

    ticker.start()
    QtCore.QTimer.singleShot(0, long_slot)
    qtbot.waitUntil(lambda: "part" in got, timeout=5_000)
    ticker.stop()
    after = got[got.index("slot") + 1:]
    assert after.index("tick") < after.index("part"), got
