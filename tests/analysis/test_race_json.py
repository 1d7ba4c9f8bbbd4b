"""The race table's JSON rows written in C (``_cjson.race_rows``, issue 16): the
same bytes as the Python templates they replaced (kept here as the reference)
for random tables, and clear errors, never a read out of bounds, for bad input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.analysis import _cjson
from mpvis.analysis.race_table import COLUMNS, NONE, STRING_COLUMNS, RaceTable, column_dtype

# The Python formatting race_table.py used before the C writer (the reference).
_EXACT_JSON = b'{"method":"exact","rank":%d,"recvs":[%d],"messages":[[%d,%d],[%d,%d]],"verdict":%s'
_CLASSIFIER_JSON = (b'{"method":"classifier","scope":%s,"rank":%d,"recvs":[%d,%d],"situation":%s,'
                    b'"messages":[%s,%s],"verdict":%s,"comm":%s,"consumption":%s,"sites":[%s,%s]'
                    b"%s%s")
_CONFIRMED = {-1: b"", 0: b',"confirmed":false', 1: b',"confirmed":true'}


def _reference_rows(table: RaceTable, lo: int, hi: int, text: list[bytes]) -> Iterator[bytes]:
    part = [table.cols[c][lo:hi].tolist() for c in COLUMNS]
    for (exact, scope, rank, r1, r2, situation, m1r, m1s, m2r, m2s, verdict, comm,
         consumption, site1, site2, confirmed, suppressed, group) in zip(*part, strict=True):
        tail = ((b',"suppressed":true' if suppressed else b"")
                + (b',"group":%d' % group if group >= 0 else b"") + b"}")
        if exact:
            yield (_EXACT_JSON % (rank, r1, m1r, m1s, m2r, m2s, text[verdict + 1])) + tail
            continue
        yield _CLASSIFIER_JSON % (
            text[scope + 1], rank, r1, r2,
            b"null" if situation == NONE else b"%d" % situation,
            b"null" if m1r == NONE else b"[%d,%d]" % (m1r, m1s),
            b"null" if m2r == NONE else b"[%d,%d]" % (m2r, m2s),
            text[verdict + 1], b"null" if comm == NONE else b"%d" % comm,
            text[consumption + 1], text[site1 + 1], text[site2 + 1],
            _CONFIRMED[confirmed], tail)


def _text(table: RaceTable) -> list[bytes]:
    return [b"null", *map(orjson.dumps, table.strings)]


def _limits(c: str) -> tuple[int, int]:
    info = np.iinfo(column_dtype(c))
    return int(info.min), int(info.max)


_EDGE = [NONE, NONE + 1, -1, 0, 1, 9, 10, 99, 100, 2**31 - 1, -(2**31), 2**63 - 1]


@st.composite
def tables(draw: st.DrawFn) -> RaceTable:
    """Random tables of any values the columns hold: integers anywhere in their
    type and at its edges, NONE, string ids within the table (-1 too),
    confirmed -1/0/1 (the values drawn by NumPy from a seed hypothesis draws)."""
    strings = draw(st.lists(st.text(max_size=6), max_size=5, unique=True))
    n = draw(st.integers(0, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cols: dict[str, Any] = {}
    for c in COLUMNS:
        lo, hi = _limits(c)
        if c in STRING_COLUMNS:
            values = rng.integers(-1, len(strings), n)
        elif c == "confirmed":
            values = rng.integers(-1, 2, n)
        else:
            values = rng.integers(lo, hi, n, endpoint=True)
            edges = np.array([v for v in _EDGE if lo <= v <= hi] + [0, 1], dtype=np.int64)
            some = rng.random(n) < 0.5  # half the rows: an edge value (0, 1, NONE, ...)
            values[some] = edges[rng.integers(0, len(edges), int(some.sum()))]
        cols[c] = values.astype(column_dtype(c))
    return RaceTable(cols, strings)


@settings(max_examples=300, deadline=None)
@given(tables(), st.data())
def test_c_rows_are_the_python_templates_bytes(table: RaceTable, data: st.DataObject) -> None:
    text = _text(table)
    n = len(table)
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    cols = [table.cols[c] for c in COLUMNS]
    assert _cjson.race_rows(cols, text, lo, hi) == b",".join(_reference_rows(table, lo, hi, text))
    assert b",".join(table.json_chunks()) == b",".join(_reference_rows(table, 0, n, text))


@settings(max_examples=50, deadline=None)
@given(tables())
def test_any_layout_of_the_columns(table: RaceTable) -> None:
    """Strided, reversed and wider columns give the rows of their values."""
    text = _text(table)
    n = len(table)
    wide = [np.repeat(table.cols[c].astype(np.int64), 2)[::2] for c in COLUMNS]  # stride 16
    assert _cjson.race_rows(wide, text, 0, n) == b",".join(_reference_rows(table, 0, n, text))
    back = RaceTable({c: table.cols[c][::-1] for c in COLUMNS}, table.strings)
    rev = [table.cols[c][::-1] for c in COLUMNS]  # negative strides
    assert _cjson.race_rows(rev, text, 0, n) == b",".join(_reference_rows(back, 0, n, text))


def test_entries_of_many_chunks_join_to_orjson() -> None:
    """A table over several chunks: the pieces joined are orjson's bytes of its entries."""
    rng = np.random.default_rng(7)
    base = RaceTable.from_entries([
        {"method": "classifier", "scope": "adjacent", "rank": 3, "recvs": [5, 9],
         "situation": 11, "messages": [[1, 2], None], "verdict": "legitimate", "comm": None,
         "consumption": "RCRC", "sites": ["a.py:3", "b\"\\é.py:4"], "confirmed": True},
        {"method": "exact", "rank": 0, "recvs": [7], "messages": [[4, 1], [2, 8]],
         "verdict": "legitimate", "suppressed": True, "group": 12},
    ])
    table = base.take(rng.integers(0, 2, 40_000))
    assert b"[" + b",".join(table.json_chunks()) + b"]" == orjson.dumps(list(table))


def _good() -> tuple[list[Any], list[bytes]]:
    table = RaceTable.from_entries([
        {"method": "classifier", "scope": "adjacent", "rank": 3, "recvs": [5, 9],
         "situation": 11, "messages": [[1, 2], None], "verdict": "legitimate", "comm": 0,
         "consumption": "RCRC", "sites": [None, "b.py:4"]}])
    return [table.cols[c] for c in COLUMNS], _text(table)


def test_bad_input_raises() -> None:
    cols, text = _good()
    assert _cjson.race_rows(cols, text, 0, 1).startswith(b'{"method":"classifier"')
    assert _cjson.race_rows(cols, text, 1, 1) == b""
    with pytest.raises(ValueError, match="columns expected"):
        _cjson.race_rows(cols[:-1], text, 0, 1)
    with pytest.raises(ValueError, match="has 1 rows, 2 asked"):
        _cjson.race_rows(cols, text, 0, 2)
    with pytest.raises(ValueError, match="rows"):
        _cjson.race_rows(cols, text, -1, 1)
    with pytest.raises(ValueError, match="rows"):
        _cjson.race_rows(cols, text, 1, 0)
    with pytest.raises(ValueError, match="outside the table"):
        _cjson.race_rows(cols, text[:2], 0, 1)  # a string id beyond the list
    k = COLUMNS.index("site1")
    for bad in (-2, 2**31 - 1):
        with pytest.raises(ValueError, match="outside the table"):
            _cjson.race_rows([*cols[:k], np.array([bad], np.int32), *cols[k + 1:]], text, 0, 1)
    with pytest.raises(TypeError, match="must be bytes"):
        _cjson.race_rows(cols, [b"null", "x", b'"y"', b'"z"', b'"w"'], 0, 1)  # type: ignore[list-item]
    k = COLUMNS.index("confirmed")
    with pytest.raises(ValueError, match="confirmed 2"):
        _cjson.race_rows([*cols[:k], np.array([2], np.int8), *cols[k + 1:]], text, 0, 1)
    for bad_col in (np.array([1.0]), np.array([1], np.uint32), np.zeros((1, 1), np.int64)):
        with pytest.raises(TypeError, match="signed integers"):
            _cjson.race_rows([*cols[:2], bad_col, *cols[3:]], text, 0, 1)
    with pytest.raises(TypeError):
        _cjson.race_rows([*cols[:2], [3], *cols[3:]], text, 0, 1)  # not a buffer
    with pytest.raises(TypeError):
        _cjson.race_rows(cols, tuple(text), 0, 1)  # type: ignore[arg-type]
