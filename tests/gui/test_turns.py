"""The GUI thread's work in turns of the event loop of its own (issue 16: a wait
between two frames is what runs in one turn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6 import QtCore, QtWidgets

from mpvis.gui import turns
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from tests.gui.windows import assert_frames_of_a_fresh_index, shown_window, window_growing


def test_parts_run_in_order_each_after_what_the_one_before_posted(qtbot: Any) -> None:
    """An event posted by a part (a paint asked for, say) is delivered before the
    next part runs: the two parts are not in one wait.  ``singleShot(0)`` would
    run both parts first, the event after them."""
    got: list[str] = []

    def part(name: str) -> Any:
        def run() -> None:
            got.append(name)
            QtCore.QTimer.singleShot(0, lambda: got.append(f"posted by {name}"))
        return run

    for name in "abc":
        turns.later(part(name))
    qtbot.waitUntil(lambda: len(got) == 6, timeout=5_000)
    assert got == ["a", "posted by a", "b", "posted by b", "c", "posted by c"]


def test_a_part_of_a_deleted_object_is_not_run(qtbot: Any) -> None:
    got: list[str] = []
    owner = QtWidgets.QWidget()
    turns.later(lambda: got.append("owner's"), owner)
    turns.later(lambda: got.append("other"))
    owner.deleteLater()  # a posted deletion: before the first part's turn
    qtbot.waitUntil(lambda: got == ["other"], timeout=5_000)
    qtbot.wait(50)
    assert got == ["other"]


def test_a_part_raising_does_not_stop_the_queue(qtbot: Any) -> None:
    got: list[int] = []

    def broken() -> None:
        raise RuntimeError("a bug in a part")

    with qtbot.capture_exceptions() as raised:
        turns.later(broken)
        turns.later(lambda: got.append(1))
        qtbot.waitUntil(lambda: bool(got), timeout=5_000)
    assert got == [1]
    assert [str(e[1]) for e in raised] == ["a bug in a part"]


def test_the_diagram_redraws_on_a_turn_of_its_own_once_for_many_asks(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    win = shown_window(qtbot)
    m = ModelManager(make_header(3, program="synthetic.py"))
    m.add_batch(list(generate_records(600, 3, seed=3)))
    win.set_model(m, "test")
    d = win.diagram
    qtbot.waitUntil(lambda: not d._redraw_pending, timeout=5_000)
    calls: list[int] = []
    real = d.redraw

    def counted() -> None:
        calls.append(1)
        real()

    monkeypatch.setattr(d, "redraw", counted)
    for _ in range(5):
        d.schedule_redraw()
    assert not calls  # not in the slot that asked
    qtbot.waitUntil(lambda: bool(calls), timeout=5_000)
    qtbot.wait(50)
    assert calls == [1]


def test_a_loading_window_lays_out_in_its_feeding_turns(
        qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``grew`` at the start of a turn of feeding: the diagram's layout and density
    index take in the new events (:meth:`DiagramView.keep_up`) before the drain,
    which waits a second between redraws while loading; the load ends with the
    layout of every event."""
    from mpvis.gui import diagram as diagram_mod
    from mpvis.gui import loader as loader_mod
    from mpvis.gui import window as window_mod
    from mpvis.tracefile.writer import write_trace

    monkeypatch.setattr(diagram_mod, "KEEP_UP_EVENTS", 500)
    monkeypatch.setattr(loader_mod, "FEED_STEP", 500)
    monkeypatch.setattr(loader_mod, "FEED_MS", 1)  # a step or so a turn: many turns
    monkeypatch.setattr(window_mod, "LOADING_REDRAW_S", 60.0)  # no drain's lay-out meanwhile
    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(4, program="synthetic.py"), generate_records(6_000, 4, seed=8))
    win = shown_window(qtbot)
    kept: list[tuple[int, int, int]] = []  # (layout count, density index done, model count)
    real = win.diagram.keep_up

    def keep_up() -> None:
        real()
        lay, di = win.diagram.layout_, win.diagram.density_index()
        assert lay is not None and di is not None and win.model is not None
        kept.append((lay.count, di.done, win.model.event_count))

    monkeypatch.setattr(win.diagram, "keep_up", keep_up)
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    qtbot.waitSignal(loader.exact_ready, timeout=60_000).wait()
    assert win.model is not None and win.model.event_count > 0
    laid_out = [c for c, _, _ in kept]
    assert len(set(laid_out)) > 2  # several steps while it loaded, not one at the end
    assert all(c == done for c, done, _ in kept)  # the density index went along
    assert all(n - c < 500 for c, _, n in kept)  # behind by less than KEEP_UP_EVENTS
    qtbot.waitUntil(lambda: win.diagram.layout_ is not None
                    and win.diagram.layout_.count == win.model.event_count, timeout=10_000)


def test_the_frame_index_copies_are_freed_without_the_cyclic_collector(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace loads with the cyclic collector off: the copies a frame index is
    built from (made a piece a turn) must go once built, by reference counts."""
    import gc
    import weakref

    from mpvis.gui import frame_keeper
    from mpvis.scene import frame

    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    monkeypatch.setattr(frame_keeper, "COPY_STEP", 700)  # several pieces, several turns
    made: list[weakref.ref[frame.InputCopy]] = []
    real = frame.InputCopy

    def tracked(*args: Any) -> frame.InputCopy:
        copy = real(*args)
        made.append(weakref.ref(copy))
        return copy

    monkeypatch.setattr(frame, "InputCopy", tracked)
    win, m, recs = window_growing(qtbot, 4, 6_000, seed=5, first=2_000)
    win.diagram.density_enabled = False  # symbols: the frames need the index
    win.diagram.redraw()
    was = gc.isenabled()
    gc.disable()
    try:
        m.add_batch(recs[2_000:])  # the input goes on (once ended: views, no copy)
        win.drain()
        win.diagram.redraw()  # stale: a copy is made in pieces, then built
        d = win.diagram
        qtbot.waitUntil(lambda: d.frames.index is not None
                        and d.frames.index.count == m.event_count, timeout=20_000)
        qtbot.waitUntil(lambda: not d.frames.building, timeout=5_000)
        assert made and all(r() is None for r in made)
    finally:
        if was:
            gc.enable()


def test_a_growing_models_message_index_is_extended_on_a_turn_of_its_own(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a large model grows, the drain leaves the message index to a turn of
    its own and a worker thread's merge; a frame index built meanwhile covers
    the events the message index looked at; at the end every event and message
    is in, as a fresh index has."""
    from mpvis.gui import frame_keeper, message_keeper
    from mpvis.scene.messages import message_index

    monkeypatch.setattr(message_keeper, "ASYNC_MIN", 1_000)
    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    win, m, recs = window_growing(qtbot, 5, 9_000, seed=12, first=2_000)
    d = win.diagram
    lay = d.layout_
    assert lay is not None

    def caught_up() -> bool:
        msgs = d.msg_keeper.index
        return msgs is not None and msgs.count == lay.count and not d.frames.building

    qtbot.waitUntil(caught_up, timeout=5_000)
    for lo in range(2_000, 10_000, 2_000):
        m.add_batch(recs[lo:lo + 2_000])
        if lo + 2_000 >= len(recs):
            m.finish()
        win.drain()
        msgs = d.msg_keeper.index
        assert msgs is not None
        assert msgs.count < lay.count == m.event_count  # left for a turn of its own
        d.redraw()  # a frame meanwhile: drawn, an index of what the messages cover
        qtbot.waitUntil(caught_up, timeout=10_000)
        index = d.frames.index
        # its messages are those of its events: none left out
        assert index is not None and index.count <= index.msgs.count
    assert m.input_ended
    d.redraw()
    qtbot.waitUntil(lambda: d.frames.index is not None and d.frames.index.count == lay.count,
                    timeout=20_000)
    got = d.frames.index
    assert_frames_of_a_fresh_index(got, d)
    assert got is not None and got.msgs.send.tolist() == message_index(lay).send.tolist()
    want = message_index(lay)
    held = d.msg_keeper.index
    assert held is not None and held.count == want.count
    for name in ("send", "consume", "unconsumed"):
        assert getattr(held, name).tolist() == getattr(want, name).tolist()


def test_a_merge_asked_for_an_old_layout_is_dropped(qtbot: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A new model shown while the message index of the old one is merged: the
    merge's result is not installed; the new layout's index is its own."""
    from mpvis.gui import message_keeper

    monkeypatch.setattr(message_keeper, "ASYNC_MIN", 1_000)
    win, m, recs = window_growing(qtbot, 4, 6_000, seed=3, first=2_000)
    d = win.diagram
    keeper = d.msg_keeper
    qtbot.waitUntil(lambda: keeper.index is not None and not keeper._merging, timeout=5_000)
    merges: list[object] = []
    keeper._merged.connect(lambda index, gen: merges.append(index))
    m.add_batch(recs[2_000:4_000])
    win.drain()
    qtbot.waitUntil(lambda: keeper._merging, timeout=5_000)  # its turn came
    old = d.layout_
    win.set_model(None)
    assert keeper.index is None
    qtbot.waitUntil(lambda: bool(merges), timeout=5_000)  # the merge ended: dropped
    assert keeper.index is None and d.layout_ is None and old is not None


def test_loading_redraws_are_spaced_by_their_cpu_not_the_time_between(
        qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace shown while it loads is redrawn every LOADING_REDRAW_S, later only
    when the redraw's own work (GUI-thread CPU) exceeds its share; the time the
    GUI thread spends elsewhere between the drain and its last part (the
    loader's feeding turns, a busy machine) does not push the next redraw back."""
    import time

    from mpvis.gui import window as window_mod
    from mpvis.gui.loader import TraceLoader

    win = shown_window(qtbot)
    m = ModelManager(make_header(4, program="synthetic.py"))
    win.set_model(m, "test")
    win.loader = TraceLoader(tmp_path / "never-started.jsonl", win)  # "loading"
    real = win.diagram.redraw

    def slow_redraw() -> None:
        real()
        time.sleep(0.5)  # wall time, not the redraw's CPU

    monkeypatch.setattr(win.diagram, "redraw", slow_redraw)
    m.add_batch(list(generate_records(3_000, 4, seed=9)))
    win.drain()
    planned = win._load_drawn  # the drain's start + LOADING_REDRAW_S
    done: list[float] = []
    real_done = win._loading_redrawn

    def loading_redrawn(began: float) -> None:
        real_done(began)
        done.append(win._load_drawn - began)

    monkeypatch.setattr(win, "_loading_redrawn", loading_redrawn)
    qtbot.waitUntil(lambda: bool(done) or win._load_drawn != planned, timeout=10_000)
    assert win._load_drawn == planned  # 0.5 s of wall time between: not counted
    assert win.diagram.redraw_cpu < 0.5
    assert done == [pytest.approx(window_mod.LOADING_REDRAW_S)]
    win.loader = None
