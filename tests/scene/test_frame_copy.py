"""A frame index built from copies (issue 16: the window builds it on a worker
thread while the model and the layout keep growing)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.frame import FrameIndex, IndexInput, InputCopy
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport
from mpvis.scene.messages import message_index
from mpvis.sim.synthetic import generate_records
from tests.scene.growing import grow


def test_an_index_of_copies_frames_as_one_read_from_the_layout_while_both_grow() -> None:
    recs = list(generate_records(30_000, 8, seed=5))
    m = ModelManager(make_header(8, program="synthetic.py"))
    m.add_batch(recs[:12_000])
    lay = Layout(m)
    lay.update()
    msgs = message_index(lay)
    data = IndexInput.copy_of(lay, False)
    assert data.count == lay.count
    built: list[FrameIndex] = []
    worker = threading.Thread(target=lambda: built.append(FrameIndex(lay, msgs, False, data)))
    worker.start()
    # the model and the layout grow meanwhile: no view of their buffers is held
    # (a held view would make the model's append raise BufferError)
    for lo in range(12_000, len(recs), 3_000):
        m.add_batch(recs[lo:lo + 3_000])
        lay.update()
    worker.join()
    m.finish()
    lay.update()
    assert lay.count > data.count
    copied = built[0]
    assert copied.count == data.count
    # the oracle: the same events read from the layout now (their x do not move)
    old = lay.x(False)[: data.count]
    assert np.array_equal(old, data.x, equal_nan=True)
    x = old[~np.isnan(old)]
    lo_x, hi_x = float(x.min()), float(x.max())
    for k in range(6):
        a = lo_x + (hi_x - lo_x) * k / 6
        view = Viewport(a, a + (hi_x - lo_x) / 4, -0.5, 7.5, 900, 400)
        fresh = FrameIndex(lay, msgs, False, IndexInput(
            data.count, old, np.array(lay.ranks[: data.count]), lay.cls[: data.count]))
        f1, f2 = copied.frame(view), fresh.frame(view)
        assert f1.events.tolist() == f2.events.tolist()
        assert f1.messages.tolist() == f2.messages.tolist()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 900), min_size=1, max_size=6), st.integers(1, 700),
       st.booleans(), st.integers(0, 2**16))
def test_an_input_copied_a_piece_at_a_time_while_the_layout_grows_is_the_one_copied_at_once(
        cuts: list[int], piece: int, logical: bool, seed: int) -> None:
    """:class:`InputCopy`: pieces copied between growth steps of the model (the
    window copies one piece a turn of its event loop while the model grows) give
    the input copied at once, as of the count when the copy started, and the
    same frames (a logical ``x`` may get its value between pieces: the oracle
    reads the same events from the layout once the copy ended, and the only
    differences allowed are NaN in the copy where the layout now has a value)."""
    recs = list(generate_records(3_000, 5, seed=seed))
    m = ModelManager(make_header(5, program="synthetic.py"))
    lay = Layout(m)
    steps = grow(m, lay, recs, cuts)
    next(steps)
    copy = InputCopy(lay, logical)
    msgs = message_index(lay)  # as of the same events, as the window asks
    n = copy.count
    assert n == lay.count
    while not copy.step(piece):
        next(steps, None)  # the model and the layout grow between two pieces
    got = copy.result()
    assert got.count == n
    now = lay.x(logical)[:n]
    same = (got.x == now) | (np.isnan(got.x) & np.isnan(now))
    assert (same | np.isnan(got.x)).all()  # a logical x may have come since its piece
    if not logical:
        assert same.all()  # real time: every x was there when the copy started
    assert np.array_equal(got.ranks, lay.ranks[:n]) and got.ranks.dtype == np.int32
    assert np.array_equal(got.cls, lay.cls[:n])
    whole = IndexInput(n, got.x.copy(), np.array(lay.ranks[:n]), np.array(lay.cls[:n]))
    a, b = FrameIndex(lay, msgs, logical, got), FrameIndex(lay, msgs, logical, whole)
    x = got.x[~np.isnan(got.x)]
    if len(x):
        lo, hi = float(x.min()), float(x.max()) + 1.0
        for k in range(3):
            x0 = lo + (hi - lo) * k / 3
            view = Viewport(x0, x0 + (hi - lo) / 2, -0.5, 4.5, 600, 300)
            assert a.frame(view).events.tolist() == b.frame(view).events.tolist()


def test_an_input_is_not_handed_out_before_every_piece_is_copied() -> None:
    m = ModelManager(make_header(3, program="synthetic.py"))
    m.add_batch(list(generate_records(500, 3, seed=1)))
    lay = Layout(m)
    lay.update()
    copy = InputCopy(lay, False)
    assert not copy.step(100)
    with pytest.raises(ValueError, match="100 of"):
        copy.result()
    assert copy.step(10**9) and copy.result().count == lay.count
