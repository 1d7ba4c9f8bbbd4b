"""The parser process gives the same model as parsing in the loading process."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.lines import BATCH_LINES
from mpvis.tracefile.reader import LoadCancelled, TraceFileError, load_trace
from mpvis.tracefile.writer import write_trace

COLUMNS = ("c_rank", "c_seq", "c_kind", "c_t", "c_comm", "c_peer", "c_tag", "c_flags",
           "c_req", "c_ref", "c_partner", "c_size", "c_lamport")


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic trace spanning several parser chunks, wildcards and collectives."""
    path = tmp_path_factory.mktemp("big") / "synthetic.jsonl"
    write_trace(path, make_header(8, program="synthetic"),
                generate_records(3 * BATCH_LINES, 8, seed=7))
    return path


@pytest.mark.slow
def test_same_model_either_way(big_trace: Path) -> None:
    here = load_trace(big_trace, parallel=False)
    there = load_trace(big_trace, parallel=True)
    assert here.event_count == there.event_count > 2 * BATCH_LINES
    for name in COLUMNS:
        a, b = getattr(here, name).view(), getattr(there, name).view()
        assert np.array_equal(a, b, equal_nan=name == "c_t"), name
    sites_here = [here.sites[i] if i >= 0 else None for i in here.c_site.view().tolist()]
    sites_there = [there.sites[i] if i >= 0 else None for i in there.c_site.view().tolist()]
    assert sites_here == sites_there
    assert here.extras == there.extras
    assert [r.to_report() for r in here.potential_races()] == [
        r.to_report() for r in there.potential_races()]
    assert here.vector_clock(3, here.count(3) - 1) == there.vector_clock(3, there.count(3) - 1)


@pytest.mark.slow
def test_error_in_a_later_chunk_keeps_every_good_record(big_trace: Path, tmp_path: Path) -> None:
    lines = big_trace.read_bytes().splitlines(keepends=True)
    bad_at = 2 * BATCH_LINES + 100  # 0-based index of the line made bad
    lines[bad_at] = b'{"rank": 0, "seq": \n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    errors = []
    for parallel in (False, True):
        with pytest.raises(TraceFileError) as info:
            load_trace(path, parallel=parallel)
        err = info.value
        assert err.line == bad_at + 1 and "not valid JSON" in err.rule
        assert err.model is not None and err.model.event_count == bad_at - 1  # minus header
        errors.append(str(err))
    assert errors[0] == errors[1]


@pytest.mark.slow
def test_rule_error_names_the_line_in_a_later_chunk(big_trace: Path, tmp_path: Path) -> None:
    lines = big_trace.read_bytes().splitlines(keepends=True)
    bad_at = BATCH_LINES + 5
    rec = json.loads(lines[bad_at])
    rec["rank"] = 99
    lines[bad_at] = json.dumps(rec).encode() + b"\n"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    for parallel in (False, True):
        with pytest.raises(TraceFileError) as info:
            load_trace(path, parallel=parallel)
        assert info.value.line == bad_at + 1 and "rank" in info.value.rule


def test_cancel_stops_the_parser_process(big_trace: Path) -> None:
    cancel = threading.Event()
    calls = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        cancel.set()

    with pytest.raises(LoadCancelled):
        load_trace(big_trace, parallel=True, progress=progress, cancel=cancel)
    assert len(calls) == 1
    assert _children() == set(), "the parser process outlived the load"


def _children() -> set[int]:
    """Live child processes of this process (Linux /proc)."""
    tasks = Path(f"/proc/{os.getpid()}/task")
    if not tasks.exists():
        pytest.skip("needs /proc")
    pids: set[int] = set()
    for task in tasks.iterdir():
        pids.update(int(x) for x in (task / "children").read_text().split())
    return pids
