"""A compact batch's model columns, against ``extract`` of its dicts as oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.collector.model_columns import model_batch
from mpvis.model.ingest import SiteTable, extract
from mpvis.protocol.compact import CompactDecoder
from mpvis.protocol.compact_columns import compact_columns
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
