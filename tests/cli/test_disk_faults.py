"""Disk faults of ``mpvis run`` (issue 15), on a real small tmpfs (root only):
a full disk gives one clear error naming the file, keeps the trace valid (no
cut line; every record in it is the clean run's), and the run exits
non-zero saying how many records were lost; a read-only output directory is
refused before mpiexec starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpvis.cli.run import EXIT_TRACE_INCOMPLETE
from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.timeout(240),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

#: Deterministic: every record but ``t`` is the same in every run.
PINGPONG = """
import os, sys
from mpi4py import MPI
if len(sys.argv) > 1:
    open(sys.argv[1], "w").close()  # the program started
comm = MPI.COMM_WORLD
r = comm.Get_rank()
for i in range(3000):
    if r == 0:
        comm.send(i, dest=1, tag=1)
        comm.recv(source=1, tag=2)
    else:
        comm.recv(source=0, tag=1)
        comm.send(i, dest=0, tag=2)
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def mpvis_run(tmp_path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pingpong.py").write_text(PINGPONG)
    env = dict(os.environ, MPVIS_RENDEZVOUS=str(tmp_path / "no-window.json"))
    return subprocess.run([sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", str(out),
                           "--", "pingpong.py", *extra], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=200, check=False)


def records(path: Path) -> dict[tuple[int, int], dict]:
    text = path.read_text()
    assert text.endswith("\n")  # no cut line
    out = {}
    for i, line in enumerate(text.splitlines()[1:], 2):
        try:
            rec = json.loads(line)
        except ValueError:
            raise AssertionError(f"{path}:{i}: not a record: {line[:200]!r}") from None
        rec.pop("t", None)
        out[(rec["rank"], rec["seq"])] = rec
    return out


def test_full_disk_keeps_a_valid_trace_and_says_what_was_lost(tmp_path: Path,
                                                            small_disk: Path) -> None:
    clean = mpvis_run(tmp_path, tmp_path / "clean.jsonl")
    assert clean.returncode in (0, 1), clean.stderr
    want = records(tmp_path / "clean.jsonl")
    out = small_disk / "t.jsonl"
    full = mpvis_run(tmp_path, out)
    assert full.returncode == EXIT_TRACE_INCOMPLETE, full.stderr
    assert f"cannot write the trace {out}: No space left on device" in full.stderr
    assert len(full.stderr.splitlines()) < 30  # one error, not one line per batch
    got = records(out)
    assert 0 < len(got) < len(want)
    assert all(want[k] == rec for k, rec in got.items())  # the clean run's records
    lost = int(full.stderr.split("the trace is incomplete: ")[1].split(" records lost")[0])
    assert lost == len(want) - len(got)
    check = subprocess.run([sys.executable, "-m", "mpvis", "check", str(out)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert check.returncode in (0, 1), check.stderr  # the kept trace opens


def test_read_only_output_directory_is_refused_before_mpiexec(tmp_path: Path,
                                                             small_disk: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    marker = tmp_path / "started"
    done = mpvis_run(tmp_path, small_disk / "t.jsonl", str(marker))
    assert done.returncode == 2 and "--out" in done.stderr and str(small_disk) in done.stderr
    assert not marker.exists()  # no rank ran


def test_a_full_journal_never_leaves_nul_bytes_or_a_cut_line(small_disk: Path) -> None:
    """The journal alone, filled up until a write fails, then dropped and
    garbage-collected: whatever its buffer held is never written later (a late
    flush at the old offset left a hole of NUL bytes once)."""
    import gc

    from mpvis.collector.journal import Journal
    from mpvis.protocol.records import make_header

    path = small_disk / "j.jsonl"
    journal = Journal(path, make_header(1))
    seq = 0
    while journal.failed is None:
        batch = [{"rank": 0, "seq": s, "kind": "state", "vars": {"pad": "x" * 300}}
                 for s in range(seq, seq + 777)]
        journal.append(batch)
        seq += 777
    assert "No space left on device" in journal.failed and str(path) in journal.failed
    written = journal.written
    journal.close()
    del journal
    gc.collect()
    data = path.read_bytes()
    assert b"\x00" not in data and data.endswith(b"\n")
    lines = data.decode().splitlines()
    assert [json.loads(x)["seq"] for x in lines[1:]] == list(range(written))
