"""Where the diagram marks stopped ranks (``mpvis.scene.stop_marks``), without Qt."""

from __future__ import annotations

import numpy as np

from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.scene.layout import Layout
from mpvis.scene.stop_marks import DEAD, DEADLOCKED, STOP_SPECS, SUSPENDED, stop_marks


def _run() -> tuple[ModelManager, Layout]:
    """Rank 0 waits in a blocking receive nobody sends to, rank 1 dies after a
    send, rank 2 sends and finishes, rank 3 receives rank 1's message."""
    m = ModelManager(make_header(4, program="stops.py"))
    m.add_batch([
        {"rank": 0, "seq": 0, "kind": "recv", "t": 1.0, "src": 2, "tag": 9, "blocking": True},
        {"rank": 1, "seq": 0, "kind": "send", "t": 1.5, "dest": 3, "tag": 0, "blocking": True,
         "sync": False, "size": 8},
        {"rank": 3, "seq": 0, "kind": "recv", "t": 2.0, "src": 1, "tag": 0, "blocking": True},
        {"rank": 3, "seq": 1, "kind": "consume", "t": 2.5, "recv": 0, "src": 1, "tag": 0,
         "send": [1, 0]},
        {"rank": 2, "seq": 0, "kind": "send", "t": 3.0, "dest": 3, "tag": 5, "blocking": True,
         "sync": False, "size": 8},
        {"rank": 2, "seq": 1, "kind": "final", "t": 3.5},
    ])
    m.mark_rank_dead(1, "killed by signal 9")
    lay = Layout(m)
    lay.update()
    return m, lay


def test_suspended_dead_and_deadlocked_ranks_are_marked_where_they_stand() -> None:
    m, lay = _run()
    pts, cls = stop_marks(m, lay, False, {})
    assert m.status(0) == "suspended" and m.status(1) == "dead"
    x = lay.x(False)
    marks = {(float(px), float(py)): int(c) for (px, py), c in zip(pts, cls, strict=True)}
    assert marks == {(float(x[m.gidx(0, 0)]), 0.0): SUSPENDED,
                     (float(x[m.gidx(1, 0)]), 1.0): DEAD}
    # a deadlock names the blocking event: that mark replaces the rank's own
    pts, cls = stop_marks(m, lay, False, {0: 0, 3: 1})
    got = sorted(zip(pts[:, 1].tolist(), cls.tolist(), strict=True))
    assert got == [(0.0, DEADLOCKED), (1.0, DEAD), (3.0, DEADLOCKED)]
    assert [s.name for s in STOP_SPECS] == ["suspended", "dead", "deadlocked"]


def test_hidden_ranks_unknown_events_and_unlaid_events_get_no_mark() -> None:
    m, lay = _run()
    lay.set_rows([1, 2, 3], hidden={0})  # rank 0 hidden
    pts, cls = stop_marks(m, lay, False, {3: 7})  # rank 3 has no event 7
    assert cls.tolist() == [DEAD] and pts[:, 1].tolist() == [0.0]  # rank 1 on row 0 now
    empty = Layout(m)  # nothing laid out yet
    pts, cls = stop_marks(m, empty, False, {0: 0})
    assert pts.shape == (0, 2) and cls.dtype == np.int8 and not len(cls)
