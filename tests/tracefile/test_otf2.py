"""OTF2 archives: mpvis's export reads back identically; Score-P-style archives are imported.

Archives are written by the ``otf2`` package's writer (mpvis's exporter, or
:mod:`tests.tracefile.otf2_scorep` as Score-P would write them) and read by
the package's reader through :func:`mpvis.tracefile.reader.load_trace`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mpvis.analysis.pipeline import Analyses
from mpvis.cli.main import main
from mpvis.tracefile.otf2_export import Otf2ExportError, write_otf2
from mpvis.tracefile.otf2_import import Otf2ImportError, read_otf2
from mpvis.tracefile.reader import TraceFileError, iter_records, load_trace, read_header
from tests.fixtures import shape_error
from tests.tracefile.otf2_scorep import FINAL, recv, send, write_scorep

otf2 = pytest.importorskip("otf2")

SAMPLES = Path(__file__).parents[2] / "sample_traces"
ALL_SAMPLES = sorted(SAMPLES.glob("*.jsonl")) + sorted(SAMPLES.glob("situations/*.jsonl"))


def records(path: Path) -> list[dict[str, Any]]:
    """The events, each checked to fit its kind's typed class (record_types)."""
    recs = sorted((r for _, r in iter_records(path)), key=lambda r: (r["rank"], r["seq"]))
    assert [e for r in recs if (e := shape_error(r)) is not None][:3] == []
    return recs


def export(trace: Path, out: Path, *, attributes: bool = True) -> Path:
    return write_otf2(out, read_header(trace), records(trace), attributes=attributes)


def verdicts(path: Path) -> tuple[list[Any], list[Any]]:
    """What ``mpvis check`` decides: races (method, rank, receives, situation,
    messages, verdict) and deadlocks (kind, ranks)."""
    a = Analyses.for_header(read_header(path))
    load_trace(path, model=a.model)
    rep = a.report()
    races = sorted((e["method"], e["rank"], e["recvs"], e.get("situation"), e["messages"],
                    e["verdict"]) for e in rep["races"])
    return races, sorted((d["kind"], d["ranks"]) for d in rep["deadlocks"])


@pytest.mark.parametrize("trace", ALL_SAMPLES, ids=lambda p: p.name)
def test_export_reads_back_identically(trace: Path, tmp_path: Path) -> None:
    anchor = export(trace, tmp_path / "out")
    assert read_header(anchor) == read_header(trace)
    assert records(anchor) == records(trace)


@pytest.mark.parametrize("trace", ALL_SAMPLES, ids=lambda p: p.name)
def test_export_without_attributes_keeps_what_otf2_can_say(trace: Path, tmp_path: Path
                                                           ) -> None:
    """Read as a Score-P archive (no mpvis attribute), each record keeps its kind
    and every field OTF2 has a place for."""
    anchor = export(trace, tmp_path / "out", attributes=False)
    _header, got = read_otf2(anchor)
    want = records(trace)
    assert [(r["rank"], r["seq"], r["kind"]) for r in got] == [
        (r["rank"], r["seq"], r["kind"]) for r in want]
    kept = {"send": ("dest", "tag", "blocking", "sync", "comm"),
            "consume": ("src", "tag", "recv", "comm"), "recv": ("blocking",),
            "coll": ("op",), "coll_exit": ("op",), "site": ()}
    for g, w in zip(got, want, strict=True):
        for f in kept.get(w["kind"], ()):
            assert g.get(f, 0) == w.get(f, 0), (w, g)
        if w.get("site") and w["kind"] != "state":  # a call's exit shares its site
            assert g.get("site") == w["site"]


RACY = ["situations/s16_RCRC.jsonl", "situations/s07_RCR_.jsonl", "master_worker.jsonl",
        "false_race.jsonl"]
DEADLOCKED = ["deadlock_recv_recv.jsonl", "deadlock_three_cycle.jsonl",
              "deadlock_coll_order.jsonl", "deadlock_lock_cycle.jsonl"]


@pytest.mark.parametrize("name", RACY + DEADLOCKED)
def test_exported_archive_gets_the_same_verdicts(name: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    trace = SAMPLES / name
    anchor = export(trace, tmp_path / "out")
    assert verdicts(anchor) == verdicts(trace)
    assert main(["check", "--json", str(trace)]) == main(["check", "--json", str(anchor)])
    jsonl_out, otf2_out = capsys.readouterr().out.splitlines()
    assert json.loads(jsonl_out)["races"] == json.loads(otf2_out)["races"]
    assert json.loads(jsonl_out)["deadlocks"] == json.loads(otf2_out)["deadlocks"]


def _racy_scorep(tmp_path: Path) -> Path:
    return write_scorep(tmp_path / "racy", 3, {
        0: send(1, 1) + FINAL,
        1: recv(0, 1) + recv(2, 1) + FINAL,
        2: send(1, 1) + FINAL,
    })


def test_scorep_racy_run_with_wildcards_assumed(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Score-P records the sender, not the posted wildcard: with MPVIS_OTF2_RECV=any
    the verdicts are those of the same run traced by mpvis (situation 16)."""
    anchor = _racy_scorep(tmp_path)
    monkeypatch.setenv("MPVIS_OTF2_RECV", "any")
    assert verdicts(anchor) == verdicts(SAMPLES / "situations/s16_RCRC.jsonl")


def test_scorep_receives_default_to_their_real_sender(tmp_path: Path) -> None:
    anchor = _racy_scorep(tmp_path)
    recvs = [r for r in records(anchor) if r["kind"] == "recv"]
    assert [(r["src"], r["tag"]) for r in recvs] == [(0, 1), (2, 1)]
    assert verdicts(anchor) == ([], [])


def test_scorep_deadlocked_run(tmp_path: Path) -> None:
    """Both ranks entered MPI_Recv and never got a message: the archive ends there."""
    anchor = write_scorep(tmp_path / "dl", 2, {0: [("enter", "MPI_Recv")],
                                               1: [("enter", "MPI_Recv")]})
    same = tmp_path / "same.jsonl"
    lines = [read_header(SAMPLES / "deadlock_recv_recv.jsonl")] + [
        r for r in records(SAMPLES / "deadlock_recv_recv.jsonl") if r["kind"] != "state"]
    for r in lines[1:]:
        r["seq"] = 0
    same.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert verdicts(anchor)[1] == verdicts(same)[1] == [("p2p", [0, 1])]
    recs = records(anchor)
    assert [(r["kind"], r["src"], r["blocking"]) for r in recs] == [("recv", -1, True)] * 2


def test_scorep_nonblocking_collectives_sites_and_subcommunicators(tmp_path: Path) -> None:
    big = 2**40  # Score-P's request ids need not fit 32 bits
    anchor = write_scorep(tmp_path / "nb", 3, {
        0: [("enter", "MPI_Isend"), ("isend", 1, 5, big), ("leave",),
            ("enter", "MPI_Waitall"), ("isend_done", big), ("leave",),
            ("enter", "MPI_Ssend"), ("sub", ("send", 2, 6)), ("leave",),
            ("enter", "MPI_Bcast"), ("coll_begin",), ("coll_end", "bcast", 2), ("leave",),
            ("enter", "MPI_Finalize"), ("leave",)],
        1: [("enter", "MPI_Irecv"), ("irecv_req", big + 1), ("leave",),
            ("enter", "MPI_Irecv"), ("irecv_req", 7), ("leave",),
            ("enter", "MPI_Test"), ("test", 7), ("leave",),
            ("enter", "MPI_Wait"), ("cancel", 7), ("leave",),
            ("enter", "MPI_Wait"), ("irecv", 0, 5, big + 1), ("leave",),
            ("enter", "MPI_Recv"), ("sub", ("recv", 1, 6)), ("leave",),
            ("param", "iteration", 3),
            ("enter", "MPI_Bcast"), ("coll_begin",), ("coll_end", "bcast", 2), ("leave",)],
        2: [("enter", "MPI_Bcast"), ("coll_begin",)],
    }, sites=True, sub_ranks=[2, 0, 1])
    got = {(r["rank"], r["seq"]): r for _, r in iter_records(anchor)}
    s = got[(0, 0)]
    assert (s["kind"], s["blocking"], s["req"], s["dest"], s["site"]) == (
        "send", False, 0, 1, "prog.c:10")
    assert got[(0, 1)]["kind"] == "wait" and got[(0, 1)]["reqs"] == [0]
    ss = got[(0, 2)]  # the sub communicator's local rank 2 is world rank 1
    assert (ss["dest"], ss["sync"], ss["mode"], ss["comm"]) == (1, True, "synchronous", 1)
    assert (got[(0, 3)]["kind"], got[(0, 3)]["op"], got[(0, 3)]["root"]) == ("coll", "bcast", 2)
    assert got[(0, 5)]["kind"] == "final"
    r1 = [got[(1, i)] for i in range(sum(1 for k in got if k[0] == 1))]
    assert [r["kind"] for r in r1] == ["recv", "recv", "wait", "consume", "wait", "recv",
                                       "consume", "state", "coll", "coll_exit"]
    assert r1[2]["cancelled"] == [r1[1]["req"]]
    assert (r1[3]["recv"], r1[3]["src"], r1[3]["tag"]) == (0, 0, 5)
    assert (r1[0]["src"], r1[0]["tag"]) == (0, 5)  # posted arguments: the real sender's
    assert (r1[1]["src"], r1[1]["tag"]) == (-1, -1)  # cancelled: nothing known
    assert (r1[6]["src"], r1[6]["comm"]) == (0, 1)  # its local rank 1 is world rank 0
    assert r1[7]["vars"] == {"iteration": 3}
    assert [r["kind"] for r in (got[(2, 0)],)] == ["coll"] and (2, 1) not in got
    a = Analyses.for_header(read_header(anchor))
    load_trace(anchor, model=a.model)
    assert a.model.status(2) != "finished"


def test_not_an_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "traces.otf2"
    bad.write_text("this is not OTF2\n")
    with pytest.raises(TraceFileError, match="not a readable OTF2 archive"):
        read_header(bad)
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpvis: invalid trace:") and "Traceback" not in err


@pytest.mark.parametrize("part", ["definitions", "events"])
def test_truncated_archive(part: str, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    anchor = export(SAMPLES / "ring.jsonl", tmp_path / "out")
    files = ([anchor.with_suffix(".def")] if part == "definitions"
             else sorted((anchor.parent / "traces").glob("*.evt")))
    for f in files:
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFileError) as info:
        load_trace(anchor)
    assert str(anchor) in str(info.value)
    assert main(["check", str(anchor)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_missing_archive_and_existing_output(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError, match="cannot open: No such file"):
        read_header(tmp_path / "nothing.otf2")
    export(SAMPLES / "ring.jsonl", tmp_path / "out")
    with pytest.raises(Otf2ExportError, match="exists already"):
        export(SAMPLES / "ring.jsonl", tmp_path / "out")


def test_attribute_contradicting_its_event_is_refused(tmp_path: Path) -> None:
    """An archive whose mpvis attribute names another destination than its MpiSend."""
    with otf2.writer.open(str(tmp_path / "lying"), timer_resolution=1000) as tr:
        d = tr.definitions
        node = d.system_tree_node("node")
        locs = [d.location(f"rank {r}", group=d.location_group(f"rank {r}",
                                                                system_tree_parent=node))
                for r in range(3)]
        d.group("MPI", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
                members=locs)
        world = d.comm("MPI_COMM_WORLD", group=d.group(
            "world", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
            members=[0, 1, 2]), parent=None)
        attr = d.attribute("mpvis:record", "", otf2.Type.STRING)
        lie = {"rank": 0, "seq": 0, "kind": "send", "dest": 2, "tag": 1, "blocking": True,
               "sync": False}
        tr.event_writer_from_location(locs[0])(
            otf2.events.MpiSend(10, 1, world, 1, 4, attributes={attr: json.dumps(lie)}))
    with pytest.raises(Otf2ImportError, match="the mpvis attribute says dest=2 but the "
                                              "MpiSend event says 1"):
        read_otf2(tmp_path / "lying" / "traces.otf2")


def test_missing_package_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "otf2", None)
    anchor = tmp_path / "traces.otf2"
    anchor.write_text("x")
    with pytest.raises(TraceFileError, match=r"pip install 'mpvis\[otf2\]'"):
        read_header(anchor)


@pytest.mark.parametrize("name", ["master_worker.jsonl", "deadlock_coll_order.jsonl",
                                  "deadlock_lock_cycle.jsonl"])
def test_cli_export_read_by_the_packages_own_reader(name: str, tmp_path: Path) -> None:
    trace = SAMPLES / name
    anchor = tmp_path / "run.otf2"
    assert main(["export", str(trace), "--format", "otf2", "-o", str(anchor)]) == 0
    recs = records(trace)
    with otf2.reader.open(str(anchor)) as tr:
        assert len(tr.definitions.locations) == read_header(trace)["nprocs"]
        kinds = Counter(type(ev).__name__ for _loc, ev in tr.events)
        regions = {r.name for r in tr.definitions.regions}
    want = Counter(r["kind"] for r in recs)
    assert kinds["MpiSend"] + kinds["MpiIsend"] == want["send"]
    assert kinds["MpiRecv"] + kinds["MpiIrecv"] == want["consume"]
    assert kinds["MpiCollectiveBegin"] == want["coll"]
    assert kinds["MpiCollectiveEnd"] == want["coll_exit"]
    assert kinds["RmaRequestLock"] == want["lock"]
    assert kinds["CallingContextEnter"] >= kinds["CallingContextLeave"]
    assert ("MPI_Finalize" in regions) == (want["final"] > 0)
    assert records(anchor) == recs
