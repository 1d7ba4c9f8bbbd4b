"""Type A vector clocks packed into one Python int (Cypher and Leu, section 3.1).

Component ``j`` of a clock (how many events of rank ``j`` must have begun) lives
in bits ``[32 j, 32 j + 31)``; bit ``32 j + 31`` is a guard bit that is always
zero.  Ints are immutable, so a clock is stored by reference (no copies), and
the component-wise maximum ``sup`` is a handful of big-int operations (SWAR: a
guarded subtraction finds, per field, which operand is larger), several times
faster than a Python loop and as fast as ``numpy.maximum`` on 64 ranks.
Components must stay below ``2**31``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["FIELD", "MASK", "component", "make_sup", "pack"]

FIELD: Final = 32
MASK: Final = (1 << (FIELD - 1)) - 1


def pack(values: Sequence[int]) -> int:
    """The packed clock with the given components."""
    out = 0
    for j, v in enumerate(values):
        out |= v << (FIELD * j)
    return out


def component(clock: int, rank: int) -> int:
    """Component ``rank`` of a packed clock."""
    return (clock >> (FIELD * rank)) & MASK


def make_sup(nprocs: int) -> Callable[[int, int], int]:
    """The component-wise maximum of two packed clocks of ``nprocs`` components."""
    guard = 0
    for j in range(nprocs):
        guard |= 1 << (FIELD * j + FIELD - 1)
    low = guard - (guard >> (FIELD - 1))  # the 31 value bits of every field

    def sup(a: int, b: int) -> int:
        ge = ((a | guard) - b) & guard  # guard bit set where a >= b
        if ge == guard:
            return a
        keep = ge - (ge >> (FIELD - 1))  # value bits of the fields where a >= b
        return (a & keep) | (b & (low ^ keep))

    return sup
