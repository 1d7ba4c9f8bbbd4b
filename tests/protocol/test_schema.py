"""The shipped JSON Schemas accept every sample trace, every OTF2 import of
one, and every ``mpvis check --json`` report; they reject broken records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpvis.cli.main import main
from mpvis.protocol.schema import load_schema
from mpvis.tracefile.reader import iter_records, read_header

jsonschema = pytest.importorskip("jsonschema")

SAMPLES = Path(__file__).parents[2] / "sample_traces"
ALL_SAMPLES = sorted(SAMPLES.glob("*.jsonl")) + sorted(SAMPLES.glob("situations/*.jsonl"))
RECORD = jsonschema.Draft202012Validator(load_schema("record"))
REPORT = jsonschema.Draft202012Validator(load_schema("report"))


def test_schemas_are_valid() -> None:
    for name in ("record", "report"):
        jsonschema.Draft202012Validator.check_schema(load_schema(name))
    with pytest.raises(ValueError, match="no schema"):
        load_schema("nothing")


@pytest.mark.parametrize("trace", ALL_SAMPLES, ids=lambda p: p.name)
def test_sample_traces_and_their_reports_follow_the_schemas(
        trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    RECORD.validate(read_header(trace))
    for _, rec in iter_records(trace):
        RECORD.validate(rec)
    code = main(["check", "--json", "--nonadjacent", str(trace)])
    assert code in (0, 1)
    REPORT.validate(json.loads(capsys.readouterr().out))


def test_otf2_imports_follow_the_schema(tmp_path: Path) -> None:
    pytest.importorskip("otf2")
    from tests.tracefile.otf2_scorep import FINAL, recv, send, write_scorep

    anchor = write_scorep(tmp_path / "a", 2, {
        0: [*send(1, 3), ("enter", "MPI_Isend"), ("isend", 1, 4, 99), ("leave",),
            ("enter", "MPI_Wait"), ("isend_done", 99), ("leave",), *FINAL],
        1: [*recv(0, 3), ("enter", "MPI_Irecv"), ("irecv_req", 5), ("leave",),
            ("enter", "MPI_Wait"), ("irecv", 0, 4, 5), ("leave",), *FINAL]})
    RECORD.validate(read_header(anchor))
    for _, rec in iter_records(anchor):
        RECORD.validate(rec)


@pytest.mark.parametrize("bad", [
    {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": -1, "blocking": True, "sync": False},
    {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": False, "sync": False},
    {"rank": 0, "seq": 0, "kind": "recv", "src": -2, "tag": 1, "blocking": True},
    {"rank": 0, "seq": 0, "kind": "consume", "recv": 0, "src": -1, "tag": 1},
    {"rank": 0, "seq": 0, "kind": "state", "vars": {"x": [1]}},
    {"rank": 0, "seq": 0, "kind": "teleport"},
    {"kind": "header", "format": "mpvis-trace", "version": 2, "nprocs": 2},
])
def test_broken_records_are_rejected(bad: dict[str, object]) -> None:
    assert not RECORD.is_valid(bad)
