"""``mpvis export``: Perfetto (trace-event JSON) and CSV, checked against the trace itself."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mpvis.cli.main import main
from mpvis.tracefile.export import export_trace
from mpvis.tracefile.reader import iter_records, load_trace

jsonschema = pytest.importorskip("jsonschema")

SAMPLES = Path(__file__).parents[2] / "sample_traces"
ALL_SAMPLES = sorted(SAMPLES.glob("*.jsonl")) + sorted(SAMPLES.glob("situations/*.jsonl"))
SCHEMA = json.loads((Path(__file__).parent / "trace_event_schema.json").read_text())


def perfetto(trace: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "trace.json"
    export_trace(trace, "perfetto", out)
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def messages(trace: Path) -> int:
    """Consumes that name or imply a send: what the model matched."""
    m = load_trace(trace)
    return sum(1 for r in range(m.nprocs) for s in range(m.count(r))
               if m.record(r, s)["kind"] == "consume" and m.partner(r, s) is not None)


@pytest.mark.parametrize("trace", ALL_SAMPLES, ids=lambda p: p.name)
def test_perfetto_export_follows_the_trace_event_format(trace: Path, tmp_path: Path) -> None:
    doc = perfetto(trace, tmp_path)
    jsonschema.validate(doc, SCHEMA)
    ev = doc["traceEvents"]
    nprocs = load_trace(trace).nprocs
    names = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert names == {r: f"rank {r}" for r in range(nprocs)}  # one track per rank
    slices = [e for e in ev if e["ph"] == "X"]
    assert len(slices) == sum(1 for _ in iter_records(trace))
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(starts) == len(ends) == messages(trace)  # one flow per message
    assert starts.keys() == ends.keys()
    for tid in names:
        _assert_nested([e for e in slices if e["tid"] == tid])
    for fid, s in starts.items():  # each end binds to a slice that is there
        assert any(x["tid"] == s["tid"] and x["ts"] == s["ts"] and x["cat"] == "send"
                   for x in slices)
        f = ends[fid]
        assert any(x["tid"] == f["tid"] and x["ts"] == f["ts"] and x["cat"] == "consume"
                   for x in slices)


def _assert_nested(slices: list[dict[str, Any]]) -> None:
    """Slices of one track nest or follow each other, never overlap partly."""
    stack: list[float] = []
    for e in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1] <= e["ts"]:
            stack.pop()
        end = e["ts"] + e["dur"]
        assert not stack or end <= stack[-1] + 1e-9, e
        stack.append(end)


def test_races_and_deadlocks_are_marked(tmp_path: Path) -> None:
    racy = perfetto(SAMPLES / "situations/s16_RCRC.jsonl", tmp_path)
    marks = [e for e in racy["traceEvents"] if e["ph"] == "i"]
    assert [(e["cat"], e["tid"], e["args"]["situation"], e["args"]["verdict"])
            for e in marks if e["args"].get("method") == "classifier"] == [
        ("race", 1, 16, "legitimate")]
    dl = perfetto(SAMPLES / "deadlock_three_cycle.jsonl", tmp_path)
    marks = [e for e in dl["traceEvents"] if e["ph"] == "i"]
    assert {e["tid"] for e in marks if e["s"] == "t"} == {0, 1, 2}
    assert all(e["cat"] == "deadlock" and e["cname"] == "terrible" for e in marks)
    assert sum(1 for e in marks if e["s"] == "p") == 1


@pytest.mark.parametrize("trace", [SAMPLES / "ring.jsonl", SAMPLES / "master_worker.jsonl",
                                   SAMPLES / "deadlock_coll_order.jsonl"], ids=lambda p: p.name)
def test_csv_export(trace: Path, tmp_path: Path) -> None:
    assert main(["export", str(trace), "--format", "csv", "-o", str(tmp_path / "t")]) == 0
    with (tmp_path / "t" / "events.csv").open() as f:
        events = list(csv.DictReader(f))
    with (tmp_path / "t" / "messages.csv").open() as f:
        msgs = list(csv.DictReader(f))
    recs = [r for _, r in iter_records(trace)]
    assert Counter((e["rank"], e["seq"], e["kind"]) for e in events) == Counter(
        (str(r["rank"]), str(r["seq"]), r["kind"]) for r in recs)
    sends = [r for r in recs if r["kind"] == "send"]
    assert len(msgs) == len(sends)
    consumed = [m for m in msgs if m["consume_seq"]]
    assert len(consumed) == messages(trace)
    by_key = {(r["rank"], r["seq"]): r for r in recs}
    for m in consumed:
        c = by_key[(int(m["dest"]), int(m["consume_seq"]))]
        assert (c["kind"], c["src"], c["tag"], c["recv"]) == (
            "consume", int(m["send_rank"]), int(m["tag"]), int(m["recv_seq"]))


def test_export_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"header"}\n')
    assert main(["export", str(bad), "-f", "perfetto", "-o", str(tmp_path / "x.json")]) == 2
    assert "invalid trace" in capsys.readouterr().err
    out = tmp_path / "no" / "such" / "dir" / "x.json"
    assert main(["export", str(SAMPLES / "ring.jsonl"), "-f", "perfetto", "-o", str(out)]) == 2
    assert "cannot write" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["export", str(SAMPLES / "ring.jsonl"), "-f", "svg", "-o", str(out)])
