"""Frame index: viewport queries against brute force, and the level of detail's caps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene import frame
from mpvis.scene.binned import BinnedItems
from mpvis.scene.frame import FrameIndex, visible_pixels
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport
from mpvis.scene.messages import message_index
from mpvis.sim.synthetic import generate_records


@settings(max_examples=60, deadline=None)
@given(
    pts=st.lists(st.floats(-5, 15), min_size=4, max_size=4),
)
def test_visible_pixels_matches_sampling(pts: list[float]) -> None:
    view = Viewport(0.0, 10.0, 0.0, 10.0, 100, 100)
    x0, y0, x1, y1 = (np.array([v]) for v in pts)
    t = np.linspace(0, 1, 20001)
    xs, ys = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
    inside = (xs >= 0) & (xs <= 10) & (ys >= 0) & (ys <= 10)
    full = float(np.hypot((x1 - x0) * 10, (y1 - y0) * 10)[0])
    sampled = inside.mean() * full
    assert abs(float(visible_pixels(x0, y0, x1, y1, view)[0]) - sampled) <= full * 1e-3 + 1e-6


def _items(seed: int, n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 100, n)
    ext = rng.exponential(2.0, n) * (rng.random(n) < 0.5)
    group = rng.integers(0, 5, n)
    cls = rng.integers(0, 4, n)
    return x, x + ext, group, cls


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(0, 3000),
    a=st.floats(-10, 110),
    w=st.floats(0.01, 150),
    budget=st.sampled_from([10, 200, 10**6]),
)
@example(seed=0, n=1297, a=101.0, w=1.0, budget=10)  # found by CI: items reaching in
def test_binned_query_against_brute_force(
    seed: int, n: int, a: float, w: float, budget: int
) -> None:
    x, x_hi, group, cls = _items(seed, n)
    b = BinnedItems(np.arange(n), x, x_hi, group, cls)
    got, level = b.query(a, a + w, 800, 5.0, budget)
    meets = np.flatnonzero((x_hi >= a) & (x <= a + w))
    bw = (b.hi - b.lo) / level if level else 0.0
    near = np.flatnonzero((x_hi >= a - bw) & (x <= a + w + bw))
    assert set(got.tolist()) <= set(near.tolist())  # never an item beyond a bucket
    assert len(set(got.tolist())) == len(got)
    if level == 0:
        assert sorted(got.tolist()) == meets.tolist()  # all of them
    else:
        # every group with items starting in range keeps one, of its highest class
        # there (an item reaching into the range from a bucket outside it is
        # represented by that bucket's best, which need not reach that far)
        starts = np.flatnonzero((x >= a) & (x <= a + w))
        assert set(group[got].tolist()) >= set(group[starts].tolist())
        for gr in set(group[starts].tolist()):
            assert cls[got][group[got] == gr].max() >= cls[starts][group[starts] == gr].max()


@pytest.fixture(scope="module")
def big() -> tuple[Layout, FrameIndex]:
    m = ModelManager(make_header(16))
    m.add_batch(list(generate_records(40_000, 16, seed=3)))
    m.finish()
    lay = Layout(m)
    lay.update()
    return lay, FrameIndex(lay, message_index(lay), False)


def test_zoomed_out_frame_caps_symbols_and_line_pixels(
    big: tuple[Layout, FrameIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    lay, fi = big
    monkeypatch.setattr(frame, "MAX_SYMBOLS", 2_000)
    monkeypatch.setattr(frame, "MAX_LINES", 500)
    monkeypatch.setattr(frame, "LINE_PIXELS", 20_000)
    lo, hi = lay.bounds(False)
    view = Viewport(lo, hi, -0.5, 15.5, 800, 400)
    fr = fi.frame(view, keep_messages=np.array([7]))
    assert fr.events_decimated and fr.messages_decimated
    assert 0 < len(fr.events) <= 2_000 + 16  # bounded by rows x buckets
    assert 7 in fr.messages  # a kept line (the selection's) is always drawn
    xy = fi.msg_x[fr.messages]
    ys, yd = lay.rows[fi.msg_src[fr.messages]], lay.rows[fi.msg_dst[fr.messages]]
    px = visible_pixels(xy[:, 0], ys, xy[:, 1], yd, view)
    assert px.sum() <= 20_000 + px.max()  # the cap, plus the kept line
    assert len(fr.messages) <= 501
    assert fr.messages_in_view > len(fr.messages)


def test_zoomed_in_frame_draws_everything_in_view(
    big: tuple[Layout, FrameIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    lay, fi = big
    monkeypatch.setattr(frame, "LINE_PIXELS", 10**9)
    lo, hi = lay.bounds(False)
    x0, x1 = lo + (hi - lo) * 0.4, lo + (hi - lo) * 0.405
    view = Viewport(x0, x1, 2.5, 9.5, 800, 400)
    fr = fi.frame(view)
    x, y = lay.x(False)[: lay.count], lay.y
    mx, my = frame.MARGIN_PX / view.px_per_x, frame.MARGIN_PX / view.px_per_y
    brute = np.flatnonzero(
        (x >= x0 - mx) & (x <= x1 + mx) & (y >= view.y0 - my) & (y <= view.y1 + my)
    )
    assert not fr.events_decimated
    assert fr.events.tolist() == brute.tolist()
    assert not fr.messages_decimated
    xm = fi.msg_x
    ys, yd = lay.rows[fi.msg_src], lay.rows[fi.msg_dst]
    touching = np.flatnonzero(
        (np.fmax(xm[:, 0], xm[:, 1]) >= x0)
        & (np.fmin(xm[:, 0], xm[:, 1]) <= x1)
        & (np.fmax(ys, yd) >= view.y0)
        & (np.fmin(ys, yd) <= view.y1)
    )
    assert sorted(fr.messages.tolist()) == touching.tolist()


def test_a_fixed_layout_is_indexed_from_views_as_from_a_copy() -> None:
    """Once the input ended and every event is laid out, the real-time input is
    views of the layout (no copy: the window's peak at the last build) and builds
    the index the copy builds; while the input runs, or on the logical axis
    (filled in after the load), there is no such view."""
    m = ModelManager(make_header(5, program="synthetic.py"))
    lay = Layout(m)
    recs = list(generate_records(6_000, 5, seed=11))
    m.add_batch(recs[:3_000])
    lay.update()
    assert frame.IndexInput.fixed_view(lay, False) is None  # the input goes on
    m.add_batch(recs[3_000:])
    m.finish()
    assert frame.IndexInput.fixed_view(lay, False) is None  # not every event laid out
    lay.update()
    assert lay.has_time and lay.count == m.event_count
    assert frame.IndexInput.fixed_view(lay, True) is None
    fixed = frame.IndexInput.fixed_view(lay, False)
    assert fixed is not None and fixed.count == lay.count
    assert np.shares_memory(fixed.x, lay.x_real) and np.shares_memory(fixed.ranks, lay.ranks)
    msgs = message_index(lay)
    a = FrameIndex(lay, msgs, False, fixed)
    b = FrameIndex(lay, msgs, False, frame.IndexInput.copy_of(lay, False))
    lo, hi = lay.bounds(False)
    for x0, x1, w in ((lo, hi, 300), (lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.31, 800)):
        view = Viewport(x0, x1, -0.5, 5.5, w, 300)
        fa, fb = a.frame(view), b.frame(view)
        assert fa.events.tolist() == fb.events.tolist()
        assert fa.messages.tolist() == fb.messages.tolist()
