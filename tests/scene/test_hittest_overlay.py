"""Hit testing, overlays, messages, race marks and event descriptions (no Qt)."""

from __future__ import annotations

import json

import numpy as np

from mpvis.model.manager import ModelManager
from mpvis.scene import describe, messages
from mpvis.scene.hittest import event_at, events_in_box
from mpvis.scene.layout import Layout
from mpvis.scene.lod import Viewport
from mpvis.scene.overlay import Overlay, dim_mask, overlay_geometry
from mpvis.scene.race_marks import race_overlay, race_tags, races_csv, races_json
from mpvis.scene.symbols import CODE
from mpvis.sim.api import simulate
from tests.fixtures import model_of, simulated_model

HEADER = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 3}
SIT16 = [  # the spec's example: situation 16
    {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True, "sync": False},
    {"rank": 0, "seq": 1, "kind": "final"},
    {"rank": 2, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True, "sync": False},
    {"rank": 2, "seq": 1, "kind": "final"},
    {"rank": 1, "seq": 0, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
    {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 1, "send": [0, 0]},
    {"rank": 1, "seq": 2, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
    {"rank": 1, "seq": 3, "kind": "consume", "recv": 2, "src": 2, "tag": 1, "send": [2, 0]},
    {"rank": 1, "seq": 4, "kind": "final"},
]


def _sit16() -> tuple[ModelManager, Layout]:
    m = ModelManager(HEADER)
    m.add_batch(SIT16)
    m.finish()
    lay = Layout(m)
    lay.update()
    return m, lay


def test_symbols_distinguish_wildcards() -> None:
    m, lay = _sit16()
    assert lay.cls[m.gidx(1, 0)] == CODE["recv_any"]
    assert lay.cls[m.gidx(0, 0)] == CODE["send_blocking"]
    assert lay.cls[m.gidx(1, 1)] == CODE["consume"]


def test_hit_testing_finds_the_nearest_event_in_pixels() -> None:
    m, lay = _sit16()
    x = lay.x_logical
    g = m.gidx(1, 2)
    view = Viewport(-1, 10, -0.5, 2.5, 1100, 300)  # 100 px per unit
    assert event_at(lay, True, float(x[g]) + 0.05, 1.1, view) == g
    assert event_at(lay, True, float(x[g]) + 0.5, 1.0, view) is None  # 50 px away
    assert event_at(lay, True, float(x[g]), 1.5, view) is None  # between rows
    box = events_in_box(lay, True, (-1, 10, 0.5, 1.5))
    assert sorted(box.tolist()) == sorted(m.gidx(1, s) for s in range(5))


def test_overlay_geometry_follows_layout_and_hidden_rows() -> None:
    m, lay = _sit16()
    a, b = m.gidx(0, 0), m.gidx(1, 1)
    ov = Overlay(highlight=[a], segments=[[a, b]], polyline=[a, b], dim=[b])
    geo = overlay_geometry(ov, lay, logical=True)
    assert geo.segments_xy.tolist() == [[lay.x_logical[a], 0.0, lay.x_logical[b], 1.0]]
    lay.set_rows([1, 2])  # rank 0 hidden
    geo = overlay_geometry(ov, lay, logical=True)
    assert len(geo.segments_xy) == 0 and len(geo.highlight_xy) == 0
    mask = dim_mask([ov], lay.count)
    assert mask is not None and mask.tolist() == [i == b for i in range(lay.count)]
    inverse = dim_mask([Overlay(dim=[b], dim_others=True)], lay.count)
    assert inverse is not None and int(inverse.sum()) == lay.count - 1


def test_messages_and_unconsumed() -> None:
    m = model_of(*simulate("p2p_deadlock", 0), finish=False)
    lay = Layout(m)
    lay.update()
    idx = messages.message_index(lay)
    kind = m.c_kind.view()
    assert len(idx.send) + len(idx.unconsumed) == int((kind == 0).sum())
    seg = messages.message_segments(lay, idx, logical=True)
    assert (seg[:, 2] > seg[:, 0]).all()
    ext = messages.rank_extents(lay, True)
    assert len(messages.process_lines(lay, ext)) == m.nprocs
    stubs = messages.unconsumed_segments(lay, idx, logical=True)
    assert len(stubs) == len(idx.unconsumed) > 0
    x, y = lay.x(True), lay.y
    dest_rows = lay.rows[m.c_peer.view()[idx.unconsumed]]
    assert (stubs[:, 0] == x[idx.unconsumed]).all() and (stubs[:, 2] > stubs[:, 0]).all()
    # a stub heads toward its destination's row and stops short of it
    frac = (stubs[:, 3] - y[idx.unconsumed]) / (dest_rows - y[idx.unconsumed])
    assert np.allclose(frac, messages.STUB_SHARE)


def test_race_marks_and_exports() -> None:
    m, _ = _sit16()
    races = m.potential_races()
    assert len(races) == 1
    ov = race_overlay(m, races[0])
    assert {m.gidx(1, 0), m.gidx(1, 2)} <= set(ov.highlight.tolist())
    assert sorted(map(tuple, ov.segments.tolist())) == sorted(
        [(m.gidx(0, 0), m.gidx(1, 1)), (m.gidx(2, 0), m.gidx(1, 3))]
    )
    assert race_tags(m, races[0]) == {1}
    lines = races_csv(races).splitlines()
    assert lines[0].startswith("id,method,scope,rank") and len(lines) == 2
    data = json.loads(races_json(races))
    assert data["races"][0]["situation"] == 16 and data["races"][0]["messages"] == [[0, 0], [2, 0]]


def test_descriptions() -> None:
    m, _ = _sit16()
    assert "recv(ANY_SOURCE, ANY_TAG)" in describe.summary(m, m.event(1, 0))
    rows = dict(describe.details(m, m.event(1, 1)))
    assert rows["message partner"] == "0:0"  # rank:seq, the notation of the CLI
    assert rows["vector clock"] == [1, 2, 0]
    assert np.all(np.array(rows["vector clock"]) >= 0)


def test_cone_mask_is_the_cones_by_happened_before() -> None:
    """The oracle: each event tested one by one with the model's happened-before."""
    from mpvis.analysis.cones import cone_of
    from mpvis.scene.overlay import cone_mask

    m = simulated_model("ring")
    for origin in (m.event(1, 2), m.event(0, 0), m.event(m.nprocs - 1, m.count(m.nprocs - 1) - 1)):
        cone = cone_of(m, *origin.key)
        for past, future in ((True, False), (False, True), (True, True), (False, False)):
            mask = cone_mask(m, cone, origin.index, past=past, future=future)
            expected = [e == origin
                        or (past and e.happened_before(origin))
                        or (future and origin.happened_before(e))
                        for e in m.events]
            assert mask.tolist() == expected
