"""Types of the model's walk in causal order (``_ccausal.c``; see ``clocks.py``)."""

from array import array
from typing import Any

import numpy.typing as npt

def walk(
    r: int,
    a: int,
    lo: int,
    lam: int,
    cause: int,
    cause_x: int,
    cause_lam: int,
    events: array[int],
    merge_at: array[int],
    kind: array[int],
    partner: array[int],
    rank: array[int],
    seq: array[int],
    lamport: array[int],
    done: list[int],
    chunks: list[npt.NDArray[Any]],
    nrows: int,
    limit: int,
    shift: int,
    merge_seq: list[array[int]],
    merge_row: list[array[int]],
    k_consume: int,
    k_coll: int,
    k_exit: int,
    /,
) -> tuple[int, int, int, int, int, list[int]]: ...
