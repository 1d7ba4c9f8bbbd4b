"""What keeps the window responsive at the end of a big load (issue 16): the
frame index rebuilt on a worker thread, the overview's histogram by bincount."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6 import QtCore

from mpvis.gui import frame_keeper
from mpvis.gui.overview import BINS, _histogram
from mpvis.gui.window import MainWindow
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.frame import FrameIndex
from mpvis.sim.synthetic import generate_records
from tests.gui.windows import (
    assert_frames_of_a_fresh_index,
    shown_window,
    window_growing,
    zoom_to_start,
)


def _drawn_then_grown(qtbot: Any, nprocs: int, events: int, seed: int, finish: bool
                      ) -> tuple[MainWindow, ModelManager, FrameIndex]:
    """A window whose first 3,000 events were drawn (their frame index built at
    once), then the rest added (and the input ended when ``finish``) and drained;
    the first index."""
    win, m, recs = window_growing(qtbot, nprocs, events, seed=seed, first=3_000)
    win.diagram.redraw()
    first = win.diagram.frames.index
    assert first is not None and first.count == m.event_count
    m.add_batch(recs[3_000:])
    if finish:
        m.finish()
    win.drain()
    return win, m, first


def test_a_stale_frame_index_is_rebuilt_off_the_gui_thread(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    win, m, first = _drawn_then_grown(qtbot, 6, 12_000, seed=2, finish=True)
    d = win.diagram
    d.redraw()  # stale: the old index serves this frame, a new one is being built
    lay = d.layout_
    assert lay is not None and lay.count == m.event_count > first.count
    qtbot.waitUntil(lambda: d.frames.index is not None and d.frames.index.count == lay.count,
                    timeout=20_000)
    got = d.frames.index
    assert got is not None and got is not first and got.layout is lay
    assert_frames_of_a_fresh_index(got, d)


def test_an_index_asked_for_before_the_model_changed_is_dropped(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    win, m, recs = window_growing(qtbot, 4, 8_000, seed=4, first=2_000)
    win.diagram.redraw()
    m.add_batch(recs[2_000:])
    win.drain()
    win.diagram.redraw()  # a rebuild starts for the first model ...
    other = ModelManager(make_header(4, program="synthetic.py"))
    other.add_batch(recs[:1_000])
    win.set_model(other, "other")  # ... which is replaced before it lands
    win.diagram.redraw()
    qtbot.wait(300)
    index = win.diagram.frames.index
    assert index is not None and index.layout is win.diagram.layout_
    assert index.count == other.event_count


def test_zoomed_out_the_last_build_does_not_keep_the_old_index(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The input ended and the density is shown (the index serves no frame): the
    old index is dropped while the last one is built (not two at once, the
    window's peak); a zoom-in meanwhile draws every event in view by the plain
    pass; the built index is then installed and is the full one."""
    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    monkeypatch.setattr(frame_keeper, "COPY_STEP", 1_000)  # several turns: still building
    win, _, first = _drawn_then_grown(qtbot, 4, 30_000, seed=6, finish=True)
    d = win.diagram
    d.fit_all()
    d.redraw()
    lay = d.layout_
    assert lay is not None and d.density_shown
    assert d.frames.building and d.frames.index is None  # dropped, the new one coming
    x = zoom_to_start(d, 400)  # no index yet: the plain pass over every event
    assert not d.density_shown and d._syms.point_count() > 0
    view = d.data_viewport()
    in_view = np.flatnonzero((x >= view.x0) & (x <= view.x1))
    drawn = {float(v) for v in d._syms._xy[:, 0]}
    assert 0 < len(in_view) < frame_keeper.frame.MAX_SYMBOLS
    assert {float(v) for v in x[in_view]} <= drawn
    qtbot.waitUntil(lambda: d.frames.index is not None, timeout=20_000)
    got = d.frames.index
    assert got is not None and got.count == lay.count and got is not first
    assert_frames_of_a_fresh_index(got, d)


def test_zoomed_out_no_index_is_built_until_the_input_ends_or_a_zoom_in(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a large model grows and its density is shown, the frames need no
    index: none is built (copies and sorts of every event); a zoom-in starts one."""
    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    win, _, first = _drawn_then_grown(qtbot, 4, 30_000, seed=7, finish=False)
    d = win.diagram
    d.fit_all()
    d.redraw()
    assert d.density_shown and not d.frames.building and d.frames.index is first
    lay = d.layout_
    assert lay is not None and lay.count > 2 * first.count
    zoom_to_start(d, 400)
    assert not d.density_shown and d.frames.building and d.frames.index is first
    qtbot.waitUntil(lambda: d.frames.index is not first, timeout=20_000)
    got = d.frames.index
    assert got is not None and got.count == lay.count


def test_zoomed_in_the_old_index_serves_while_the_last_is_built(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Symbols are shown: the index serving frames is kept while the next is built."""
    monkeypatch.setattr(frame_keeper, "ASYNC_INDEX_MIN", 0)
    monkeypatch.setattr(frame_keeper, "COPY_STEP", 1_000)
    win, _, first = _drawn_then_grown(qtbot, 4, 30_000, seed=6, finish=True)
    d = win.diagram
    zoom_to_start(d, 400)
    assert not d.density_shown and d.frames.building and d.frames.index is first
    qtbot.waitUntil(lambda: d.frames.index is not first, timeout=20_000)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-2.0, 12.0), st.integers(-2, 12)), max_size=300),
       st.integers(1, 11), st.sampled_from([(0.0, 10.0), (3.0, 3.0), (-1.0, 4.5)]))
def test_overview_histogram_counts_as_histogram2d(
        pts: list[tuple[float, int]], rows: int, span: tuple[float, float]) -> None:
    lo, hi = span
    x = np.array([p[0] for p in pts], dtype=np.float64)
    y = np.array([p[1] for p in pts], dtype=np.float64)
    got = _histogram(x, y, lo, hi, rows)
    if hi > lo:  # numpy widens an empty range; the overview's range is never empty
        h, _, _ = np.histogram2d(x, y, bins=(BINS, rows), range=((lo, hi), (-0.5, rows - 0.5)))
        assert np.array_equal(got, h)
    inside = (x >= lo) & (x <= hi) & (y >= 0) & (y < rows)
    assert got.sum() == inside.sum()


def test_offered_races_get_their_tags_when_shown_and_a_muted_tag_quiets_them(
        qtbot: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpvis.gui.race_settings import RaceSettings
    from mpvis.scene.race_marks import race_tags
    from tests.fixtures import simulated_model

    monkeypatch.setattr(RaceSettings, "save", lambda self: None)  # no settings file written
    win = shown_window(qtbot)
    m = simulated_model("wildcard_race")
    win.set_model(m)
    n = win.notifier
    first = n.current
    assert first is not None
    tags = race_tags(m, first)  # the oracle: computed directly from the model
    assert n.tags(first) == tags
    assert n.btn_tag.isEnabled() == bool(tags)
    if tags:
        qtbot.mouseClick(n.btn_tag, QtCore.Qt.MouseButton.LeftButton)
        assert tags <= n.settings.muted_tags
        left = ([n.current] if n.current else []) + n.pending
        assert all(not (race_tags(m, r) & tags) for r in left)


def test_the_density_image_is_kept_while_nothing_it_shows_changed(qtbot: Any) -> None:
    from mpvis.gui.density_item import DensityItem
    from mpvis.scene.layout import Layout
    from mpvis.scene.lod import Viewport

    recs = list(generate_records(6_000, 4, seed=6))
    m = ModelManager(make_header(4, program="synthetic.py"))
    m.add_batch(recs[:3_000])
    lay = Layout(m)
    lay.update()

    def view() -> Viewport:
        lo, hi = lay.bounds(False)
        return Viewport(lo, hi, -0.5, 3.5, 300, 100)

    item = DensityItem()
    item.update_view(lay, False, view())
    first = item._image
    assert first is not None
    item.update_view(lay, False, view())
    assert item._image is first  # the same events, range and rows: not recomputed
    m.add_batch(recs[3_000:])
    lay.update()
    item.update_view(lay, False, view())
    fresh = DensityItem()  # the oracle: computed from scratch
    fresh.update_view(lay, False, view())
    assert item._image is not first and item._image is not None and fresh._image is not None
    assert item._image == fresh._image
    item.update_view(lay, False, view(), rows=np.array([0, 0, 1, 1]))  # folded rows
    assert item._image != fresh._image


def test_the_window_lists_the_exact_races_and_deadlocks_mpvis_check_finds(
        qtbot: Any, tmp_path: Any) -> None:
    from mpvis.analysis.pipeline import Analyses
    from mpvis.tracefile.reader import load_trace, read_header
    from mpvis.tracefile.writer import write_trace

    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(6, program="synthetic.py"), generate_records(8_000, 6, seed=9))
    win = shown_window(qtbot)
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    qtbot.waitSignal(loader.exact_ready, timeout=60_000).wait()
    qtbot.waitUntil(lambda: win.loader is None, timeout=10_000)
    oracle = Analyses.for_header(read_header(path))  # what mpvis check builds
    load_trace(path, model=oracle.model)
    assert oracle.exact is not None and win.analyses is not None
    assert win.analyses.exact is not None
    got = win.races.exact_races()
    # the same conflicts (found in another order: the model releases the records
    # in batches of other sizes)
    assert got and sorted(got, key=repr) == sorted(oracle.exact.races, key=repr)
    assert oracle.deadlock is not None and win.analyses.deadlock is not None
    assert [d.to_report() for d in win.analyses.deadlock.deadlocks] == [
        d.to_report() for d in oracle.deadlock.deadlocks]
    # the race panel's ✓ asks the detector: as the set of the exact races' keys does
    from mpvis.gui.race_panel import DetectorKeys, exact_keys, race_key
    keys = win.races.model.confirmed
    assert isinstance(keys, DetectorKeys)
    oracle_keys = exact_keys(oracle.exact.races)
    probes: list[object] = [*oracle_keys, *(race_key(r) for r in oracle.model.potential_races())]
    probes += [(0, 1, (2, 3), (4, 5)), (0, 1), "x", None]
    assert all((k in keys) == (k in oracle_keys) for k in probes)
    # the classifier's races listed while loading (now and then) are all there at the end
    listed = sorted((r.rank, r.recvs, r.verdict) for r in win.races.all_races())
    assert listed == sorted((r.rank, r.recvs, r.verdict) for r in oracle.model.potential_races())
    assert f"{len(listed)} receive pairs flagged" in win.status_label.text()


def test_the_race_list_reuses_its_filtered_classifier_races_only_while_they_are_unchanged(
        qtbot: Any) -> None:
    from mpvis.analysis.pipeline import Analyses
    from mpvis.gui.race_panel import RacePanel

    a = Analyses.for_header(make_header(6, program="synthetic.py"))
    a.model.add_batch(list(generate_records(6_000, 6, seed=11)))
    a.model.finish()
    assert a.exact is not None
    races, exact = a.model.potential_races(), a.exact.races
    assert races and exact

    def fresh(verdict: int, some: list[Any]) -> list[Any]:  # a panel that never filtered
        p = RacePanel()
        qtbot.addWidget(p)
        p.verdict.setCurrentIndex(verdict)
        p.set_lists(some, exact)
        return p.shown()

    panel = RacePanel()
    qtbot.addWidget(panel)
    panel.set_lists(races, [])
    panel.set_lists(None, exact)  # only the exact races are new
    assert panel.shown() == fresh(0, races)
    panel.verdict.setCurrentIndex(1)  # another filter: the classifier's races again
    assert panel.shown() == fresh(1, races)
    half = races[: len(races) // 2]
    panel.set_lists(half, None)  # other classifier races, the same exact ones
    assert panel.shown() == fresh(1, half) != fresh(1, races)


def test_a_bug_while_the_model_grows_ends_the_load_with_its_message(
        qtbot: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mpvis.gui import loader as loader_mod
    from mpvis.tracefile.writer import write_trace

    path = tmp_path / "t.jsonl"
    write_trace(path, make_header(4, program="synthetic.py"), generate_records(3_000, 4, seed=1))
    real = loader_mod.add_parsed
    calls = []

    def add_then_break(*args: Any) -> None:  # the second step hits a bug in the model
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("broken step")
        real(*args)

    monkeypatch.setattr(loader_mod, "add_parsed", add_then_break)
    monkeypatch.setattr(loader_mod, "FEED_STEP", 500)
    win = shown_window(qtbot)
    win.open_trace(path)
    loader = win.loader
    assert loader is not None
    with qtbot.waitSignal(loader.failed, timeout=30_000) as got:
        pass
    assert "internal error" in got.args[0] and "broken step" in got.args[0]
    assert len(calls) == 2  # no step after it
    assert got.args[1] is not None and got.args[1].model.event_count == 500  # shown
