"""The Python API (mpvis.open -> Run): the same findings as the CLI, views
that agree with the trace's own records, tables, formats, a light import."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import zstandard

import mpvis
from mpvis.analysis.predicates import PredicateError
from mpvis.cli.main import main
from mpvis.errors import MpvisError
from mpvis.model.entities import Consume
from mpvis.tracefile.reader import TraceFileError

SAMPLES = Path(__file__).parent.parent / "sample_traces"
TRACES = sorted(SAMPLES.glob("*.jsonl")) + sorted(SAMPLES.glob("situations/s1[56]*.jsonl"))


def _raw(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return lines[0], lines[1:]


def _cli_json(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    return code, json.loads(capfd.readouterr().out)


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_findings_are_those_of_mpvis_check(trace: Path, capfd: pytest.CaptureFixture[str]
                                           ) -> None:
    run = mpvis.open(trace)
    _, report = _cli_json(capfd, "check", "--json", "--no-settings", str(trace))
    assert run.races() == report["races"]
    assert run.deadlocks() == report["deadlocks"]
    assert run.errors() == report["errors"]
    assert run.groups() == report["groups"]
    assert run.report == report
    assert [r for r in report["races"] if r["method"] == "exact"] == run.races("exact")
    shown = [r for r in report["races"] if r["verdict"] in ("legitimate", "unverified")]
    assert run.races(shown=True) == shown


@pytest.mark.parametrize("trace", [SAMPLES / "master_worker.jsonl",
                                   SAMPLES / "situations" / "s16_RCR_.jsonl"],
                         ids=lambda p: p.name)
def test_check_options_are_those_of_the_cli(trace: Path, capfd: pytest.CaptureFixture[str]
                                            ) -> None:
    run = mpvis.open(trace)
    _, report = _cli_json(capfd, "check", "--json", "--no-settings", "--nonadjacent",
                          "--all-conflicts", str(trace))
    assert run.check(nonadjacent=True, all_conflicts=True) == report
    assert run.report == run.check()


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_views_agree_with_the_records(trace: Path) -> None:
    """Every event view gives back its record; messages are the trace's sends,
    linked to the consumes that name them; statuses are those of the report."""
    header, recs = _raw(trace)
    run = mpvis.open(trace)
    by_rank: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        by_rank[r["rank"]].append(r)
    assert len(run.processes) == header["nprocs"]
    for p in run.processes:
        mine = by_rank[p.rank]
        assert len(p.events) == len(mine) == p.event_count
        for e, r in zip(p.events, mine, strict=True):
            assert e.key == (r["rank"], r["seq"]) and e.kind == r["kind"]
            assert {k: v for k, v in e.fields.items() if k in r} == r
            assert isinstance(e, Consume) == (r["kind"] == "consume")
        assert list(p.events[1:3]) == list(p.events)[1:3]
    for st, p in zip(run.report["ranks"], run.processes, strict=True):
        assert (st["status"], st.get("at")) == (p.status, p.stopped_at)
        if p.stopped_at is not None:
            assert p.stopped_event == p.events[p.stopped_at]
    sends = {(r["rank"], r["seq"]) for r in recs if r["kind"] == "send"}
    named = {tuple(r["send"]): (r["rank"], r["seq"]) for r in recs
             if r["kind"] == "consume" and "send" in r}
    assert {m.send.key for m in run.messages} == sends
    for m in run.messages:
        c = m.consume
        assert (c.key if c else None) == named.get(m.send.key)
        assert (m.src, m.dest) == (m.send.rank, m.send.fields["dest"])
    assert len(run.events) == len(recs)


def test_cone_and_predicate_are_those_of_the_cli(capfd: pytest.CaptureFixture[str]) -> None:
    trace = str(SAMPLES / "master_worker.jsonl")
    run = mpvis.open(trace)
    _, cone = _cli_json(capfd, "cone", "--json", trace, "1:1")
    assert run.cone("1:1").to_json() == cone
    assert run.cone((1, 1)) == run.cone(run.event("1:1"))
    defs = ["a=1:kind == 'consume'", "b=2:kind == 'send'"]
    _, conj = _cli_json(capfd, "predicate", "--json", trace, *(f"--define={d}" for d in defs))
    assert run.predicate(*defs) == tuple(conj["cut"])
    _, disj = _cli_json(capfd, "predicate", "--json", "--disj", "a,b", trace,
                        *(f"--define={d}" for d in defs))
    assert list(run.predicate(*defs, mode="disj").cut or ()) == disj["cut"]


def test_bad_references_and_predicates_are_refused() -> None:
    run = mpvis.open(SAMPLES / "ring.jsonl")
    for ref in ("9:0", "0:999", "x", (0, -1)):
        with pytest.raises(KeyError):
            run.event(ref)  # type: ignore[arg-type]  # deliberately bad references
    with pytest.raises(KeyError, match="another run"):
        run.event(mpvis.open(SAMPLES / "ring.jsonl").event("0:0"))
    with pytest.raises(PredicateError, match="never records 'x'"):
        run.predicate("a=0:x > 1")
    with pytest.raises(PredicateError, match="not in the run"):
        run.predicate("a=7:kind == 'send'")
    with pytest.raises(MpvisError):
        run.predicate("a=0:kind ==")


@pytest.mark.slow
def test_tables_pandas_and_arrow() -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    trace = SAMPLES / "master_worker.jsonl"
    _, recs = _raw(trace)
    run = mpvis.open(trace)
    ev, msgs = run.to_pandas()
    want = sorted(recs, key=lambda r: (r["rank"], r["seq"]))
    assert len(ev) == len(want)
    for row, r in zip(ev.itertuples(), want, strict=True):
        assert (row.rank, row.seq, row.kind, row.site) == (r["rank"], r["seq"], r["kind"],
                                                            r.get("site"))
        peer = r.get("dest", r.get("src"))
        assert (None if peer is None else int(peer)) == (None if row.peer is mpvis_na()
                                                         else int(row.peer))
    sends = [r for r in recs if r["kind"] == "send"]
    assert sorted(zip(msgs.send_rank, msgs.send_seq, strict=True)) == sorted(
        (r["rank"], r["seq"]) for r in sends)
    consumed = {tuple(r["send"]): r["seq"] for r in recs if r["kind"] == "consume"}
    for row in msgs.itertuples():
        got = consumed.get((row.send_rank, row.send_seq))
        assert (None if row.consume_seq is mpvis_na() else int(row.consume_seq)) == got
    tables = run.to_arrow()
    assert tables.events.num_rows == len(ev) and tables.messages.num_rows == len(msgs)
    assert tables.events.column("kind").to_pylist() == list(ev.kind)
    assert tables.messages.column("consume_seq").null_count == int(msgs.consume_seq.isna().sum())


def mpvis_na() -> Any:
    import pandas as pd

    return pd.NA


def test_missing_extra_says_how_to_install() -> None:
    code = ("import sys; sys.modules['pandas'] = None; import mpvis\n"
            "run = mpvis.open(sys.argv[1])\n"
            "try:\n    run.to_pandas()\nexcept mpvis.MpvisError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "ring.jsonl")],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    assert "pip install 'mpvis[pandas]'" in out


def test_compressed_and_otf2_read_alike(tmp_path: Path) -> None:
    trace = SAMPLES / "master_worker.jsonl"
    raw = trace.read_bytes()
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "t.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    shutil.copy(trace, tmp_path / "t.jsonl")
    want = mpvis.open(trace).report
    for name in ("t.jsonl.gz", "t.jsonl.zst"):
        assert mpvis.open(tmp_path / name).report == want
    pytest.importorskip("otf2")
    from mpvis.tracefile.otf2_export import write_otf2
    from mpvis.tracefile.reader import iter_records, read_header

    recs = sorted((r for _, r in iter_records(trace)), key=lambda r: (r["rank"], r["seq"]))
    anchor = write_otf2(tmp_path / "otf2", read_header(trace), recs)
    run = mpvis.open(anchor)
    assert run.races() == want["races"] and run.model.event_count == want["events"]


def test_truncated_file(tmp_path: Path) -> None:
    raw = (SAMPLES / "master_worker.jsonl").read_bytes()
    packed = gzip.compress(raw * 1)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    with pytest.raises(TraceFileError) as info:
        mpvis.open(cut)
    assert isinstance(info.value, MpvisError)
    run = mpvis.open(cut, allow_truncated=True)
    assert not run.complete and 0 < run.model.event_count < 93


def test_importing_mpvis_stays_light() -> None:
    """The in-rank library imports mpvis; neither loads NumPy nor the API."""
    code = ("import sys, mpvis, mpvis.instrument; "
            "print(sorted(m for m in ('numpy', 'mpvis.api', 'mpvis.model') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "[]"
    with pytest.raises(AttributeError):
        _ = mpvis.no_such_name  # type: ignore[attr-defined]  # deliberately absent
