"""A frame index built from copies (issue 16: the window builds it on a worker
thread while the model and the layout keep growing)."""

from __future__ import annotations

import threading

import numpy as np

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.frame import FrameIndex, IndexInput
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport
from mpvis.scene.messages import message_index
from mpvis.sim.synthetic import generate_records


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
