"""Extras held once per distinct value (Extras.add_many, from EventStore.append) and the
call column."""

from __future__ import annotations

from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import make_header


def _model(records: list[Record]) -> ModelManager:
    m = ModelManager(make_header(2))
    m.add_batch(records)
    m.finish()
    return m


def _send(seq: int, **fields: object) -> Record:
    """A send nobody receives, with ``fields`` as extras."""
    return {"rank": 0, "seq": seq, "kind": "send", "dest": 1, "tag": 0, "blocking": False,
            "sync": False, "req": seq, **fields}


def test_equal_extras_are_one_object_and_records_rebuild_unchanged() -> None:
    records = [
        _send(0, func="main"), _send(1, func="main"), _send(2, func="work"),
        _send(3, func=1), _send(4, func=True), _send(5, func=1.0),  # equal, not the same
        _send(6, func=[1]), _send(7, func=[1]),
        {"rank": 0, "seq": 8, "kind": "final", "call": 3, "func": "main"},
    ]
    m = _model(records)
    ex = [m.store.extras[g] for g in range(len(records))]
    assert ex[0] is ex[1] and ex[0] is not ex[2]
    assert len({id(e) for e in ex[3:8]}) == 5  # numbers and lists: not shared
    for g, rec in enumerate(records):
        got = m.record(0, g)
        assert got == rec and [type(v) for v in got.values()] == [type(v) for v in rec.values()]
    assert m.store.c_call[8] == 3 and "call" not in m.store.extras[8]  # a column, not an extra
    assert m.store.c_call[0] == -1
