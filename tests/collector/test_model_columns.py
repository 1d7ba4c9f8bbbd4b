"""A compact batch's model columns, against ``extract`` of its dicts as oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.collector.feed import RankEnd, RecordsArrived, RunEnded, RunStarted
from mpvis.collector.live_run import LiveRun
from mpvis.collector.model_columns import model_batch
from mpvis.model.ingest import SiteTable, extract
from mpvis.protocol.codes import (
    MVC_BLOCKING,
    MVC_SEND,
    MVK_CONSUME,
    MVK_FINAL,
    MVK_RECV_CONSUME,
    MVK_SEND,
)
from mpvis.protocol.compact import RECORD, CompactDecoder, compact_body
from mpvis.protocol.compact_columns import CompactColumns, compact_columns
from mpvis.protocol.records import make_header
from tests.protocol.test_compact_columns import NPROCS, bodies

FIELDS = ("rank", "seq", "code", "t", "site", "comm", "peer", "tag", "flags", "req", "ref",
          "sseq", "size", "call")


@settings(max_examples=300, deadline=None)
@given(bodies(), st.integers(0, NPROCS - 1), st.sampled_from([[], ["x.py:9"], ["b.py:2"]]))
def test_model_columns_are_those_extract_builds(
    body: dict[str, Any], rank: int, known: list[str]
) -> None:
    block = compact_columns(CompactDecoder(rank), body, NPROCS)
    if block is None:
        return
    mine, theirs = SiteTable(), SiteTable()
    for s in known:  # sites the model knows already keep their ids
        mine.add(s)
        theirs.add(s)
    oracle = extract(block.records(), NPROCS, theirs)
    cols = model_batch(block, mine)
    if cols is None:  # a value too large for the model's columns: extract says which
        assert oracle.error is not None or oracle.extras
        return
    assert oracle.error is None and not oracle.extras and cols.n == oracle.n == len(block)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(cols, f), getattr(oracle, f), err_msg=f)
        assert getattr(cols, f).dtype == getattr(oracle, f).dtype, f
    assert mine.names == theirs.names


def _block(rank: int, recs: bytes, sites: list[str]) -> CompactColumns:
    block = compact_columns(CompactDecoder(rank), compact_body(0, recs, 1, sites, 0, []), 2)
    assert block is not None
    return block


def _live(parts: list[Any]) -> tuple[LiveRun, list[str]]:
    run = LiveRun()
    notices = run.take(RunStarted(make_header(2), Path("unused.jsonl")))
    for part in parts:
        notices += run.take(RecordsArrived(part))
    notices += run.take(RunEnded(nprocs=2, ranks=(RankEnd(0, "final"), RankEnd(1, "final"))))
    return run, [str(n) for n in notices]


def _ring_blocks(bad_consume: bool) -> list[CompactColumns]:
    """Rank 0 sends to rank 1 (10 times), rank 1 receives each (merged receives); with
    ``bad_consume`` rank 1's 4th record is a consume whose ``recv`` is a send."""
    sends = b"".join(RECORD.pack(MVK_SEND, MVC_BLOCKING, 0, 1, s, 0.1 * s, 0, 1, 3, 0, 0, s)
                     for s in range(10)) + RECORD.pack(MVK_FINAL, 0, 0, 0, 10, 2.0, 0, 0, 0, 0,
                                                       0, -1)
    recvs = [RECORD.pack(MVK_RECV_CONSUME, MVC_BLOCKING | MVC_SEND, 0, 1, 2 * i, 0.1 * i + 0.05,
                         100 << 32, 0, 3, 3 << 32, i, i) for i in range(10)]
    if bad_consume:
        recvs[2] = RECORD.pack(MVK_SEND, MVC_BLOCKING, 0, 1, 4, 0.3, 0, 0, 3, 0, 0, 4) + \
            RECORD.pack(MVK_CONSUME, MVC_SEND, 0, 1, 5, 0.31, 0, 0, 3, 4, 2, 5)
    final = RECORD.pack(MVK_FINAL, 0, 0, 0, 20, 2.0, 0, 0, 0, 0, 0, -1)
    return [_block(0, sends, ["r.py:1"]), _block(1, b"".join(recvs) + final, ["r.py:2"])]


@pytest.mark.parametrize("bad_consume", [False, True])
def test_a_live_run_fed_columns_builds_the_model_dicts_build(bad_consume: bool) -> None:
    """LiveRun takes a CompactColumns part as columns: the same model, the same
    notices (a record the model refuses, its rank cut there) as from its dicts."""
    blocks = _ring_blocks(bad_consume)
    by_columns, said = _live(list(blocks))
    by_dicts, said_too = _live([b.records() for b in _ring_blocks(bad_consume)])
    assert said == said_too
    assert bool(said) == bad_consume
    a, b = by_columns.analyses, by_dicts.analyses
    assert a is not None and b is not None
    for col in ("c_rank", "c_seq", "c_kind", "c_t", "c_site", "c_comm", "c_peer", "c_tag",
                "c_flags", "c_req", "c_ref", "c_partner", "c_call"):
        np.testing.assert_array_equal(getattr(a.model, col).view(), getattr(b.model, col).view())
    assert a.model.sites == b.model.sites and a.model.dead == b.model.dead
    assert by_columns.losses() == by_dicts.losses()
