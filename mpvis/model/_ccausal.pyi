"""Types of the model's walk in causal order and its compact clock rows
(``_ccausal.c``; see ``ClockStore`` in ``clocks.py``)."""

from array import array
from collections.abc import Callable
from typing import Any

import numpy.typing as npt

#: (chunks, shift, merge_seq, merge_row, deltas, every, record_max): a ClockStore's rows.
RowsContext = tuple[
    list[npt.NDArray[Any]], int, list[array[int]], list[array[int]], array[int], int, int,
]
#: (by_rank, merge_at, kind, partner, rank, seq, lamport, done, ahead, rows,
#: k_consume, k_coll, k_exit, lam_last, waiters, sink, out, grow, decide, entered,
#: coll_at, coll_iid, inst_need, inst_count, inst_joined, inst_wait)
AdvanceContext = tuple[
    list[array[int]], list[array[int]], array[int], array[int], array[int], array[int],
    array[int], list[int], array[int], RowsContext, int, int, int, array[int],
    list[dict[int, set[int]]], set[int], array[int] | None, Callable[[int], int],
    Callable[[int, int, int, bool, int, list[int]], tuple[int, int, int, int, int]],
    Callable[[int, list[int]], None],
    list[array[int]], list[array[int]], array[int], array[int], array[int],
    list[set[int] | None],
]

def advance(ctx: AdvanceContext, work: set[int], force: int, nrows: int, limit: int, /) -> int: ...
def clock_row(rows: RowsContext, q: int, s: int, out: npt.NDArray[Any], /) -> None: ...
def component(rows: RowsContext, q: int, s: int, j: int, /) -> int: ...
def components(
    rows: RowsContext, q: npt.NDArray[Any], s: npt.NDArray[Any], j: npt.NDArray[Any],
    out: npt.NDArray[Any], /
) -> None: ...
def rows(rows: RowsContext, q: int, start: int, out: npt.NDArray[Any], /) -> None: ...
def join(
    rows: RowsContext, ranks: array[int], seqs: array[int], out: npt.NDArray[Any], /
) -> None: ...
