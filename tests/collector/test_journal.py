"""The journal admits each record once, in seq order, and stays a valid trace file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mpvis.collector.journal import Journal
from mpvis.protocol.records import make_header


def rec(rank: int, seq: int, **kw: object) -> dict:
    return {"rank": rank, "seq": seq, "kind": "state", "vars": {"x": seq}, **kw}


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_records_are_written_before_append_returns(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.jsonl", make_header(2))
    good = j.append([rec(0, 0), rec(1, 0), rec(0, 1)])
    assert len(good) == 3
    # Flushed: another reader sees them while the journal is still open.
    assert [(r["rank"], r["seq"]) for r in lines(j.path)[1:]] == [(0, 0), (1, 0), (0, 1)]
    j.close()


def test_duplicates_dropped_gaps_and_bad_records_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    j = Journal(tmp_path / "j.jsonl", make_header(2))
    j.append([rec(0, 0), rec(0, 1)])
    with caplog.at_level(logging.WARNING):
        good = j.append(
            [
                rec(0, 1),  # duplicate
                rec(0, 3),  # gap
                {"rank": 5, "seq": 0, "kind": "final"},  # rank out of range
                {"rank": 1, "seq": 0, "kind": "nonsense"},
                rec(0, 2),
                rec(1, 0, blob=b"\x00"),  # JSON cannot hold bytes
                rec(1, 1),  # follows a refused record
                {"rank": 0, "seq": 3, "kind": "final"},
            ]
        )
    j.close()
    assert [(r["rank"], r["seq"]) for r in good] == [(0, 2), (0, 3)]
    assert j.duplicates == 1 and j.rejected == 5
    assert "rank 0, seq 3" in caplog.text and "gap" in caplog.text
    assert "rank 5" in caplog.text and "nonsense" in caplog.text
    assert "JSON" in caplog.text
    body = lines(j.path)
    assert body[0]["nprocs"] == 2
    assert [(r["rank"], r["seq"]) for r in body[1:]] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert j.finals == {0}
