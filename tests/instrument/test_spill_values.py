"""A rank's spill file is read back whole whatever its records hold (issue 15):
a NaN or infinite ``state`` value is written as the journal writes it (null),
not as ``NaN``, which no trace reader accepts (the whole spill was refused)."""

from __future__ import annotations

import json
from pathlib import Path

from mpvis.instrument.transport import SocketSink
from mpvis.protocol.records import make_header
from mpvis.tracefile.spill import merge_spills
from tests.instrument.test_trace_library import _Collector, _recorder


def test_non_finite_state_values_spill_as_null(tmp_path: Path) -> None:
    coll = _Collector()
    spill = tmp_path / "spill-R-rank-0.jsonl"
    sink = SocketSink(coll.address, "secret", 0, spill_to=spill)
    rec = _recorder(rank=0)
    rec.state({"x": float("nan"), "y": float("inf"), "z": 1.5})
    rec.send(0, 0, 7, 1)
    written = sink.spill([rec.drain(1 << 30)], "the collector closed the connection")
    assert written == (spill, 2)
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(make_header(1, program="p")) + "\n")
    result = merge_spills(trace, [spill])
    assert result.added == 2 and not result.unmergeable
    state = json.loads(trace.read_text().splitlines()[1])
    assert state["kind"] == "state" and state["vars"] == {"x": None, "y": None, "z": 1.5}
