"""The C part of the central process's column path (``mpvis/protocol/_cjournal.c``) on
inconsistent or hostile input: a clear exception or ``None``, never a crash.

Its results on good batches are checked against the dict expansion in
``test_compact_columns.py`` (the journal lines byte for byte, every column)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.protocol._cjournal import expand, lines
from mpvis.protocol.compact import RECORD_SIZE

_N = 3
_ROWS = np.arange(_N, dtype=np.int64)
_TEMPLATES = ((b'{"a":', 0, b',"t":', 1, b',"s":', 2, b"}\n"),)
_GOOD: tuple[Any, ...] = (_ROWS, b"[0.5,1e-7,2.0]", (np.array([0, 1, 0]), (b"null", b'"x"')))


def test_lines_writes_each_row_by_its_template_after_the_prefix() -> None:
    shape = np.array([0, -1, 0, 0], dtype=np.int64)
    cols = (np.array([1, 0, -20, 300]), b"[0.5,0,1e-7,2.0]",
            (np.array([0, 0, 1, 0]), (b"null", b'"x"')))
    assert lines(b"R", _TEMPLATES, shape, cols, (b'{"o":1}',)) == (
        b'R{"a":1,"t":0.5,"s":null}\n{"o":1}\nR{"a":-20,"t":1e-7,"s":"x"}\n'
        b'R{"a":300,"t":2.0,"s":null}\n')


def test_extreme_integers_are_written_exactly() -> None:
    values = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0], dtype=np.int64)
    got = lines(b"", ((0, b"\n"),), np.zeros(3, dtype=np.int64), (values,), ())
    assert got.split() == [str(int(v)).encode() for v in values]


@pytest.mark.parametrize(("shape", "columns", "others", "error", "says"), [
    ([0, 1, 0], _GOOD, (), ValueError, "no template 1"),
    ([0, -2, 0], _GOOD, (), ValueError, "no template -2"),
    ([0, -1, 0], _GOOD, (), ValueError, "lines of other rows"),
    ([0, 0, 0], _GOOD, (b"x",), ValueError, "lines of other rows"),
    ([0, 0, 0], (_ROWS, b"[0.5,1e-7]", _GOOD[2]), (), ValueError, "JSON array of 3"),
    ([0, 0, 0], (_ROWS, b'[0.5,"a,b",1]', _GOOD[2]), (), ValueError, "JSON array of 3"),
    ([0, 0, 0], (_ROWS, b"0.5,1,2", _GOOD[2]), (), ValueError, "JSON array of 3"),
    ([0, 0, 0], (_ROWS, _GOOD[1], (np.array([0, 2, 0]), (b"a", b"b"))), (), ValueError,
     "id has no text"),
    ([0, 0, 0], (_ROWS, _GOOD[1], (np.array([0, -1, 0]), (b"a",))), (), ValueError,
     "id has no text"),
    ([0, 0, 0], (_ROWS[:2], _GOOD[1], _GOOD[2]), (), ValueError, "2 values for 3 rows"),
    ([0, 0, 0], (_ROWS.astype(np.float64), _GOOD[1], _GOOD[2]), (), TypeError, "int64"),
    ([0, 0, 0], (_ROWS, _GOOD[1], (np.array([0, 1, 0]), ("a", "b"))), (), TypeError, "bytes"),
    ([0, 0, 0], (_ROWS, _GOOD[1]), (), ValueError, "names column 2 of 2"),
])
def test_inconsistent_input_is_a_clear_error(shape: list[int], columns: tuple[Any, ...],
                                             others: tuple[bytes, ...], error: type[Exception],
                                             says: str) -> None:
    with pytest.raises(error, match=says):
        lines(b"", _TEMPLATES, np.array(shape, dtype=np.int64), columns, others)


def test_a_template_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="template"):
        lines(b"", ((b"x", 1.5),), np.zeros(1, dtype=np.int64), (_ROWS[:1],), ())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lines"):
        lines(b"", [], np.zeros(1, dtype=np.int64), (), ())  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=8 * RECORD_SIZE + 3), st.integers(-2, 9),
       st.integers(-1, 9))
def test_any_bytes_are_columns_or_none(recs: bytes, nprocs: int, nsites: int) -> None:
    """Random records (any kind, flags, values, lengths): never a crash; when taken,
    consistent columns whose rows keep the rules ``expand`` promises."""
    got = expand(recs, nprocs, nsites)
    if got is None:
        return
    rows, ints, t, flags, others, final = got
    assert len(recs) % RECORD_SIZE == 0 and rows >= len(recs) // RECORD_SIZE
    cols = np.frombuffer(ints, dtype=np.int64).reshape(9, rows)
    assert len(t) == 8 * rows and len(flags) == 4 * rows
    seq, site, comm, peer = cols[0], cols[1], cols[2], cols[3]
    assert seq[0] >= 0 and (np.diff(seq) == 1).all()
    assert ((site >= 0) & (site < nsites)).all()
    kind = np.frombuffer(flags, dtype=np.uint8)[:rows]
    assert others == np.count_nonzero((kind >= 4) & (kind <= 7)) == np.count_nonzero(cols[8] == -1)
    assert final == (kind == 8).any()
    p2p = (kind >= 1) & (kind <= 3)
    assert (comm[p2p] >= 0).all() and (peer[p2p] < nprocs).all()


def test_ids_may_be_bytes_or_bools() -> None:
    texts = (b"false", b"true")
    for ids in (np.array([True, False]), np.array([1, 0], dtype=np.uint8)):
        assert lines(b"", ((0, b"\n"),), np.zeros(2, dtype=np.int64), ((ids, texts),), ()) == \
            b"true\nfalse\n"
    with pytest.raises(ValueError, match="id has no text"):
        lines(b"", ((0, b"\n"),), np.zeros(1, dtype=np.int64),
              ((np.array([2], dtype=np.uint8), texts),), ())


def test_a_column_may_be_a_row_of_a_buffer() -> None:
    """``(buffer, row, size)``: the ``row``-th run of n values of ``size`` bytes."""
    ints = np.array([[1, 2], [30, -4]], dtype=np.int64).tobytes()
    flags = bytes([0, 1, 1, 0])
    tpl = ((0, b" ", 1, b"\n"),)
    shape = np.zeros(2, dtype=np.int64)
    assert lines(b"", tpl, shape, ((ints, 1, 8), ((flags, 1, 1), (b"f", b"t"))), ()) == \
        b"30 t\n-4 f\n"
    for bad, error, says in [((ints, 2, 8), ValueError, "no row 2"),
                             ((ints, -1, 8), ValueError, "no row -1"),
                             ((ints, 0, 4), ValueError, "values of 4 bytes"),
                             ((ints, 0, 1), ValueError, "values of 1 bytes"),
                             ((ints, "0", 8), TypeError, "triple"),
                             ((ints, 0), TypeError, "pair")]:
        with pytest.raises(error, match=says):
            lines(b"", ((0, b"\n"),), shape, (bad,), ())
