"""Types of the model's walk in causal order (``_ccausal.c``; see ``ClockStore.walker``)."""

from array import array
from typing import Any

import numpy.typing as npt

#: (by_rank, merge_at, kind, partner, rank, seq, lamport, done, chunks, shift,
#: merge_seq, merge_row, k_consume, k_coll, k_exit)
WalkContext = tuple[
    list[array[int]], list[array[int]], array[int], array[int], array[int], array[int],
    array[int], list[int], list[npt.NDArray[Any]], int, list[array[int]], list[array[int]],
    int, int, int,
]

def walk(
    ctx: WalkContext,
    r: int,
    a: int,
    lo: int,
    lam: int,
    cause: int,
    cause_x: int,
    cause_lam: int,
    nrows: int,
    limit: int,
    /,
) -> tuple[int, int, int, int, int, list[int]]: ...
