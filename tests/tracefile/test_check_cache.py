"""The cache of ``mpvis check``: same output warm as cold, never trusted blindly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpvis.cli.main import main
from mpvis.tracefile import check_cache

ROOT = Path(__file__).resolve().parents[2]
FARM = ROOT / "sample_traces" / "master_worker.jsonl"
IDENT = "rank 0 comm 0 master_worker.py:34 / master_worker.py:34"


@pytest.fixture
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache directory that caches traces of any size, and a private config."""
    monkeypatch.setenv("MPVIS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MPVIS_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("MPVIS_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "cache"


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "farm.jsonl"
    path.write_bytes(FARM.read_bytes())
    return path


@pytest.mark.parametrize("extra", [["--json"], [], ["--summary"], ["--json", "--nonadjacent"]])
def test_a_warm_check_prints_what_a_cold_one_does(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str],
        extra: list[str]) -> None:
    trace = _trace(tmp_path)
    sup = tmp_path / "intended.txt"
    sup.write_text(IDENT + "\n")
    for more in ([], ["--suppress", str(sup)]):
        fresh = _check(capsys, str(trace), *extra, *more, "--no-cache")
        cold = _check(capsys, str(trace), *extra, *more)
        assert list(cache_env.glob("*.npz"))
        warm = _check(capsys, str(trace), *extra, *more)
        assert fresh == cold == warm
    if "--json" in extra:
        rep = json.loads(warm[1])
        assert any(g["suppressed"] for g in rep["groups"])  # marks counted after reading


def test_the_options_that_change_the_report_have_their_own_cache(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path)
    _check(capsys, str(trace), "--json")
    _check(capsys, str(trace), "--json", "--nonadjacent")
    assert len(list(cache_env.glob("*.npz"))) == 2


def test_a_changed_trace_is_checked_again(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path)
    before = _check(capsys, str(trace), "--json")
    lines = trace.read_text().splitlines(keepends=True)
    # the same run without its last rank's final record: another report
    last = max(i for i, ln in enumerate(lines) if '"final"' in ln)
    trace.write_text("".join(lines[:last] + lines[last + 1:]))
    after = _check(capsys, str(trace), "--json", "--no-cache")
    assert _check(capsys, str(trace), "--json") == after != before


@pytest.mark.parametrize("damage", ["garbage", "truncated", "pickle", "wrong_columns",
                                    "bad_index"])
def test_a_damaged_cache_is_ignored_with_a_note_and_rewritten(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str],
        damage: str) -> None:
    trace = _trace(tmp_path)
    want = _check(capsys, str(trace), "--json")
    (path,) = cache_env.glob("*.npz")
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not a zip file at all")
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    else:
        with np.load(path, allow_pickle=False) as z:
            arrays: dict[str, Any] = dict(z)
        if damage == "pickle":
            arrays["race_rank"] = np.array([object()] * len(arrays["race_rank"]), dtype=object)
        elif damage == "bad_index":
            arrays["race_verdict"] = arrays["race_verdict"] + 1000
        else:
            arrays["race_group"] = arrays["race_group"][:-1]
        with open(path, "wb") as f:
            np.savez(f, allow_pickle=True, **arrays)
    code, out, err = _check(capsys, str(trace), "--json")
    assert (code, out) == want[:2]
    assert "ignoring the damaged check cache" in err
    assert path.read_bytes() != b"not a zip file at all"
    assert _check(capsys, str(trace), "--json")[2] == ""  # rewritten: read without a note


def test_small_traces_are_not_cached_by_default(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MPVIS_CACHE_MIN_BYTES")
    assert os.path.getsize(FARM) < check_cache.MIN_BYTES
    _check(capsys, str(_trace(tmp_path)), "--json")
    assert not cache_env.exists() or not list(cache_env.glob("*.npz"))


# -- what is cached: a report whose races are columns -----------------------------------

def test_a_report_of_race_dicts_is_not_cached(tmp_path: Path, cache_env: Path) -> None:
    trace = _trace(tmp_path)
    report = {"nprocs": 1, "events": 0, "races": [], "deadlocks": []}
    assert not check_cache.save(trace, {}, report, [])
    assert check_cache.load(trace, {}) is None


def test_a_missing_trace_is_the_check_s_error_not_a_cache_note(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _check(capsys, str(tmp_path / "nothing.jsonl"))
    assert code == 2
    assert "invalid trace" in err and "cache" not in err


def test_the_least_recently_written_caches_go_first(
        tmp_path: Path, cache_env: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _trace(tmp_path), tmp_path / "farm2.jsonl"
    second.write_bytes(first.read_bytes())
    _check(capsys, str(first), "--json")
    (old,) = cache_env.glob("*.npz")
    monkeypatch.setattr(check_cache, "MAX_BYTES", old.stat().st_size + 1)
    _check(capsys, str(second), "--json")
    (kept,) = cache_env.glob("*.npz")
    assert kept != old  # the one just written stays
