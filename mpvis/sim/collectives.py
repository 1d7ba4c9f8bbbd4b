"""Collective operations of the simulator: when a member may leave, and what it gets.

The rule for leaving is the data dependency of the spec's happened-before
relation (``trace-format.md``, "Happened-before and adjacency"): barrier-like
operations (barrier, allreduce, allgather, alltoall, scan, and any operation
not named below) let a member leave once every member has entered; bcast and
scatter once the root has entered; reduce and gather let a non-root leave at
once and the root once every member has entered.  A simulated trace therefore
never shows a ``coll_exit`` the spec's causal order could not explain.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from typing import Any, Final

#: Operations whose members all wait for the root only.
FROM_ROOT: Final = frozenset({"bcast", "scatter", "scatterv"})
#: Operations whose root waits for every member; the others leave at once.
TO_ROOT: Final = frozenset({"reduce", "gather", "gatherv"})
ROOTED: Final = FROM_ROOT | TO_ROOT

_REDOPS: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "sum": operator.add,
    "prod": operator.mul,
    "max": max,
    "min": min,
}


def dependencies(op: str, rank: int, root: int | None, members: Sequence[int]) -> set[int]:
    """The members whose entry ``rank`` must wait for before it leaves ``op``."""
    if op in FROM_ROOT:
        assert root is not None
        return {root}
    if op in TO_ROOT:
        return set(members) if rank == root else {rank}
    return set(members)


def _combine(redop: str | None, values: Sequence[Any]) -> Any:
    if not values or any(v is None for v in values):
        return None
    return reduce(_REDOPS.get(redop or "sum", operator.add), values)


def _part(value: Any, index: int) -> Any:
    if isinstance(value, list | tuple) and index < len(value):
        return value[index]
    return None


def result(
    op: str,
    rank: int,
    *,
    root: int | None,
    redop: str | None,
    members: Sequence[int],
    values: Mapping[int, Any],
) -> Any:
    """What ``rank`` gets from ``op`` given the members' contributions ``values``.

    Called once :func:`dependencies` are met, so every value it reads is there.
    Reductions apply ``redop`` (``sum`` by default, ``prod``, ``max``, ``min``)
    and give ``None`` when a contribution is ``None``.
    """
    pos = list(members).index(rank)
    if op in ("bcast",):
        return values[root] if root is not None else None
    if op in ("scatter", "scatterv"):
        return _part(values[root], pos) if root is not None else None
    if op in ("reduce", "gather", "gatherv"):
        if rank != root:
            return None
        ordered = [values[m] for m in members]
        return ordered if op != "reduce" else _combine(redop, ordered)
    if op == "allreduce":
        return _combine(redop, [values[m] for m in members])
    if op == "allgather":
        return [values[m] for m in members]
    if op == "alltoall":
        return [_part(values[m], pos) for m in members]
    if op == "scan":
        return _combine(redop, [values[m] for m in members[: pos + 1]])
    return None
