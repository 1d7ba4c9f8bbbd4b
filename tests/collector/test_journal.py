"""The journal admits each record once, in seq order, and stays a valid trace file."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from mpvis.collector.journal import WRITE_PIECE, Journal
from mpvis.protocol.codes import MVC_BLOCKING, MVK_SEND
from mpvis.protocol.compact import RECORD, CompactDecoder, compact_body
from mpvis.protocol.compact_columns import CompactColumns, compact_columns
from mpvis.protocol.records import make_header
from tests.cli.test_disk_faults import small_disk  # noqa: F401 (a fixture)


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


def _sends(n: int) -> CompactColumns:
    recs = b"".join(RECORD.pack(MVK_SEND, MVC_BLOCKING, 0, 1, s, s * 1e-3, 0, 0, s % 7, 0, 0, s)
                    for s in range(n))
    block = compact_columns(CompactDecoder(0), compact_body(0, recs, 1, ["s.py:1"], 0, []), 1)
    assert block is not None
    return block


def test_a_block_is_written_from_its_columns_in_pieces(tmp_path: Path) -> None:
    block = _sends(2 * WRITE_PIECE + 5)
    j = Journal(tmp_path / "j.jsonl", make_header(1))
    assert j.takes(block) and j.append_columns(block) == len(block)
    assert j.written == len(block) and j.next_seq(0) == len(block) and not j.takes(block)
    assert lines(j.path)[1:] == block.records()
    j.close()


def test_a_full_disk_keeps_the_whole_pieces_of_a_block(request: pytest.FixtureRequest) -> None:
    """The disk fills up during a block: the pieces written before stay (whole lines),
    the rest of the block is unwritten, and so are later blocks (a 1 MB tmpfs)."""
    disk: Path = request.getfixturevalue("small_disk")
    block = _sends(3 * WRITE_PIECE)
    piece = len(block.jsonl()) // 3
    j = Journal(disk / "j.jsonl", make_header(1))
    free = shutil.disk_usage(disk).free
    (disk / "filler").write_bytes(b"x" * (free - piece - piece // 2))
    assert j.append_columns(block) == WRITE_PIECE
    assert j.failed is not None and "No space left on device" in j.failed
    assert j.written == WRITE_PIECE and j.unwritten == 2 * WRITE_PIECE
    assert lines(j.path)[1:] == block.records()[:WRITE_PIECE]
    later_part = compact_columns(CompactDecoder(0), compact_body(
        0, b"".join(RECORD.pack(MVK_SEND, MVC_BLOCKING, 0, 1, s, 0.0, 0, 0, 1, 0, 0, s)
                    for s in range(3 * WRITE_PIECE, 3 * WRITE_PIECE + 2)), 1, ["s.py:1"], 0, []), 1)
    assert later_part is not None
    assert j.append_columns(later_part) == 0 and j.unwritten == 2 * WRITE_PIECE + 2
    j.close()
