"""Hostile trace files: ``mpvis check``, ``cone`` and ``predicate`` give a clean
error naming the file (and the line where there is one) or a valid report, in
bounded memory, never a traceback (issue 15).

The fuzz test mutates the sample traces (bit flips, truncation, huge or
negative numbers, wrong types, NUL bytes, deep nesting, blank lines, absurd
``nprocs``, damaged .gz/.zst) with hypothesis, within a fixed budget, and checks
every accepted file for silently dropped records: the report's event count
must be the number of event lines.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpvis.cli.main import main
from tests.tracefile.hostile import BASES, cases, decompress, sample, zst

#: Inputs the fuzz test tries (CI budget: well under 30 s on 2 cores);
#: MPVIS_FUZZ_EXAMPLES raises it for a longer hunt.
FUZZ_EXAMPLES = int(os.environ.get("MPVIS_FUZZ_EXAMPLES", "400"))
#: One input may take this long before the test calls it a hang.
HANG_SECONDS = 60


@contextlib.contextmanager
def _hang_guard() -> Iterator[None]:
    def on_alarm(signum: int, frame: object) -> None:
        raise AssertionError(f"no answer within {HANG_SECONDS} s: a hang")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HANG_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(*args: str) -> tuple[int, str, str]:
    """``mpvis ARGS`` in this process: exit code, stdout, stderr.  Any exception
    that escapes ``main`` (a traceback for a user) fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with _hang_guard(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


def assert_clean(path: Path, rc: int, out: str, err: str, *, named: bool = True) -> None:
    """Exit 0/1 with a report, or 2 with one ``mpvis:`` message naming the file
    (``named=False``: ``cone``/``predicate`` may also refuse what was asked of a
    valid trace: an event not in it, a variable never recorded)."""
    assert rc in (0, 1, 2), (rc, err)
    if rc == 2:
        assert err.startswith("mpvis: ") and "Traceback" not in err, err
        assert str(path) in err or not named, err


def event_lines(name: str, data: bytes) -> int:
    """Event lines of a file that decompresses cleanly (blank lines skipped)."""
    return sum(1 for ln in decompress(name, data).splitlines()[1:] if ln.strip())


COMMANDS = [("check", "--json"), ("cone", "0:0", "--json"),
            ("predicate", "--define", "a=0:x>3", "--conj", "a", "--json")]


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    for name, data in cases().items():
        (d / name).write_bytes(data)
    return d


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cases()))
@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_hostile_file_gives_clean_answer(hostile_dir: Path, name: str,
                                         command: tuple[str, ...]) -> None:
    path = hostile_dir / name
    rc, out, err = run_cli(command[0], str(path), *command[1:])
    assert_clean(path, rc, out, err, named=command[0] == "check")


@pytest.mark.parametrize(("name", "words"), [
    ("corrupt.gz", ":1: cannot read"), ("plain_named.gz", "not a valid gzip stream"),
    ("plain_named.zst", "not a valid zstd stream"), ("gzip_named.zst", "zstd"),
    ("zstd_named.gz", "gzip"), ("deep_value.jsonl", ":2: variable 'x' must be a JSON scalar"),
    ("deep_line.jsonl", ":2: line is not valid JSON"),
    ("nprocs_million.jsonl", ":1: header 'nprocs' is 1000000"),
    ("one_huge_line.gz", ":2: line is longer than 16 MiB"),
    ("nul_byte.jsonl", ":2: line is not valid JSON"),
    ("cut_small.gz", "truncated"),
])
def test_hostile_file_error_names_file_line_and_rule(hostile_dir: Path, name: str,
                                                      words: str) -> None:
    rc, _, err = run_cli("check", str(hostile_dir / name))
    assert rc == 2 and f"{hostile_dir / name}" in err and words in err, err


@pytest.mark.parametrize("name", ["wrong_typed_extra.jsonl", "sync_on_recv.jsonl",
                                  "odd_req_on_blocking_send.jsonl", "blank_lines.gz"])
def test_odd_but_valid_files_are_read_whole(hostile_dir: Path, name: str) -> None:
    """Fields the spec does not define for a kind are kept as extras, whatever their type."""
    data = (hostile_dir / name).read_bytes()
    rc, out, err = run_cli("check", str(hostile_dir / name), "--json")
    assert rc in (0, 1), err
    assert json.loads(out)["events"] == event_lines(name, data)


@pytest.mark.parametrize("name", ["cut_long.gz", "cut_long.zst"])
def test_cut_compressed_trace_keeps_what_decompresses_and_fails(hostile_dir: Path,
                                                               name: str) -> None:
    """An interrupted run's compressed trace: the complete records before the cut
    are reported, the cut is named, the exit code is 2 (a truncated .zst was read
    silently short before)."""
    rc, out, err = run_cli("check", str(hostile_dir / name), "--json")
    assert rc == 2 and "truncated" in err and "incomplete trace" in err
    events = json.loads(out)["events"]
    assert 0 < events < 20000
    assert f"the {events} complete events before the cut were read" in err


def _limited(megabytes: int) -> None:
    limit = megabytes << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "words"), [("one_huge_line.gz", "longer than"),
                                             ("nprocs_million.jsonl", "nprocs")])
def test_memory_stays_bounded(hostile_dir: Path, name: str, words: str) -> None:
    """In a process limited to 600 MB of address space (a 1 GiB line needed 2.1 GB,
    nprocs=1e6 asked for 30.5 GiB): a clean error, no MemoryError."""
    proc = subprocess.run([sys.executable, "-m", "mpvis", "check", str(hostile_dir / name)],
                          capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=lambda: _limited(600))
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, \
        proc.stderr


# --------------------------------------------------------------------- fuzzing

HOSTILE_VALUES: list[Any] = [
    -1, -2**70, 2**31, 2**63, 2**64, 10**30, 1e308, -1e308, 0.5, True, None, "", "x",
    "\x00", [], {}, [0], [1, 2, 3], {"a": [1]}, [[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]],
]
FIELDS = ["rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking",
          "sync", "req", "recv", "send", "size", "reqs", "op", "root", "count", "lock",
          "vars", "nprocs", "version", "format"]


@st.composite
def mutated_traces(draw: st.DrawFn) -> tuple[str, bytes]:
    """A sample trace with one to three mutations, maybe compressed (and the
    compressed bytes maybe damaged)."""
    data = sample(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        data = _mutate(draw, data)
    suffix = draw(st.sampled_from([".jsonl", ".jsonl", ".gz", ".zst"]))
    if suffix == ".gz":
        data = gzip.compress(data)
    elif suffix == ".zst":
        data = zst(data)
    if suffix != ".jsonl" and draw(st.booleans()):
        data = _mutate_bytes(draw, data)
    return suffix, data


def _mutate_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    pos = draw(st.integers(0, max(len(data) - 1, 0)))
    how = draw(st.sampled_from(["flip", "cut", "nul"]))
    if how == "cut":
        return data[:pos]
    if how == "nul":
        return data[:pos] + b"\x00" + data[pos:]
    if not data:
        return data
    return data[:pos] + bytes([data[pos] ^ (1 << draw(st.integers(0, 7)))]) + data[pos + 1:]


def _mutate(draw: st.DrawFn, data: bytes) -> bytes:
    how = draw(st.sampled_from(["bytes", "field", "field", "field", "blank", "deep",
                                "nprocs", "long"]))
    lines = data.splitlines(keepends=True)
    if how == "bytes" or not lines:
        return _mutate_bytes(draw, data)
    i = draw(st.integers(0, len(lines) - 1))
    if how == "blank":
        lines.insert(i, b"\n" * draw(st.sampled_from([1, 100, 20000])))
    elif how == "long":
        lines.insert(i, b'{"x":"' + b"y" * draw(st.sampled_from([10, 100_000])) + b'"}\n')
    elif how == "deep":
        d = draw(st.sampled_from([50, 300, 2000]))
        lines[i] = lines[i].replace(b"}", b',"deep":' + b"[" * d + b"]" * d + b"}", 1)
    else:
        try:
            rec = json.loads(lines[0 if how == "nprocs" else i])
        except (ValueError, RecursionError):  # a line an earlier mutation broke
            return data
        if not isinstance(rec, dict):
            return data
        field = "nprocs" if how == "nprocs" else draw(st.sampled_from(FIELDS))
        rec[field] = draw(st.sampled_from(HOSTILE_VALUES))
        lines[0 if how == "nprocs" else i] = json.dumps(rec).encode() + b"\n"
    return b"".join(lines)


@pytest.mark.slow
def test_fuzz_mutated_traces(tmp_path: Path) -> None:
    """Every mutated trace gives a clean error naming the file, or a report that
    counts every event line of the file (nothing silently dropped)."""
    tried = {"inputs": 0, "accepted": 0}

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated_traces(), st.booleans())
    def one(trace: tuple[str, bytes], cone: bool) -> None:
        suffix, data = trace
        tried["inputs"] += 1
        path = tmp_path / f"t{tried['inputs']}{suffix}"
        path.write_bytes(data)
        rc, out, err = run_cli("check", str(path), "--json")
        assert_clean(path, rc, out, err)
        if rc in (0, 1):
            tried["accepted"] += 1
            assert json.loads(out)["events"] == event_lines(path.name, data)
        if cone:
            assert_clean(path, *run_cli("cone", str(path), "0:0", "--json"), named=False)
        path.unlink()

    one()
    print(f"fuzz: {tried['inputs']} mutated traces tried, {tried['accepted']} accepted")
    assert tried["inputs"] >= FUZZ_EXAMPLES // 2
