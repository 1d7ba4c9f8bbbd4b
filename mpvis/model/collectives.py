"""Collective instances and the happened-before edges they add.

The n-th ``coll`` of a rank on a communicator is its part in the
communicator's n-th collective.  The spec's edges (section "Happened-before
and adjacency"): barrier-like operations order every member's ``coll`` before
every member's ``coll_exit``; bcast and scatter order the root's ``coll``
before every ``coll_exit``; reduce and gather order every ``coll`` before the
root's ``coll_exit``.  Other operations add no edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

ALL_TO_ALL: Final = frozenset({
    "barrier", "allreduce", "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
    "scan", "exscan", "reduce_scatter", "reduce_scatter_block",
})
FROM_ROOT: Final = frozenset({"bcast", "scatter", "scatterv"})
TO_ROOT: Final = frozenset({"reduce", "gather", "gatherv"})

Key = tuple[int, int]


@dataclass
class Instance:
    """The n-th collective of one communicator: each member's entry."""

    entries: dict[int, int] = field(default_factory=dict)  # rank -> seq of its coll
    ops: dict[int, str] = field(default_factory=dict)
    roots: dict[int, int] = field(default_factory=dict)


class CollectiveBook:
    """Tracks collective entries per communicator and resolves exit dependencies."""

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        self._count: dict[tuple[int, int], int] = {}  # (comm, rank) -> colls entered
        self._open: dict[tuple[int, int], tuple[int, int, str]] = {}  # -> (instance, seq, op)
        self.instances: dict[tuple[int, int], Instance] = {}
        self.groups: dict[int, tuple[int, ...]] = {0: tuple(range(nprocs))}
        self.seen: dict[int, set[int]] = {}

    def enter(self, rank: int, seq: int, comm: int, op: str, *, root: int | None,
              group: list[int] | None) -> int:
        """Record a ``coll``; returns its instance number."""
        return self.passed(exits=[False], ranks=[rank], seqs=[seq], comms=[comm], ops=[op],
                           roots=[root], groups=[group])[0]

    def passed(self, *, exits: list[bool], ranks: list[int], seqs: list[int],
               comms: list[int], ops: list[str], roots: list[int | None],
               groups: list[list[int] | None]) -> list[int]:
        """Record ``coll`` (``exits[i]`` false) and ``coll_exit`` records in
        this order, each as :meth:`enter` or :meth:`leave` would (an exit's
        ``op``, ``root`` and ``group`` are not read); returns their instance
        numbers.  The caller checked the rules: an exit leaves an open
        collective, an entry is made outside one."""
        count, instances, opened, seen = self._count, self.instances, self._open, self.seen
        out: list[int] = []
        for ex, rank, seq, comm, op, root, group in zip(exits, ranks, seqs, comms, ops, roots,
                                                          groups, strict=True):
            if ex:
                out.append(opened.pop((comm, rank))[0])
                continue
            n = count.get((comm, rank), 0)
            count[(comm, rank)] = n + 1
            inst = instances.get((comm, n))
            if inst is None:
                instances[(comm, n)] = inst = Instance()
            inst.entries[rank] = seq
            inst.ops[rank] = op
            if root is not None:
                inst.roots[rank] = root
            if group is not None and comm not in self.groups:
                self.groups[comm] = tuple(group)
            on = seen.get(comm)
            if on is None:
                seen[comm] = on = set()
            on.add(rank)
            opened[(comm, rank)] = (n, seq, op)
            out.append(n)
        return out

    def open_collective(self, rank: int, comm: int) -> tuple[int, int, str] | None:
        """The collective ``rank`` is inside on ``comm``: (instance, coll seq, op)."""
        return self._open.get((comm, rank))

    def leave(self, rank: int, comm: int) -> int:
        """Record a ``coll_exit``; returns its instance number."""
        n, _, _ = self._open.pop((comm, rank))
        return n

    def members(self, comm: int, final: bool) -> tuple[int, ...] | None:
        """Members of ``comm``: known group, or (at the end) the ranks seen on it."""
        g = self.groups.get(comm)
        if g is None and final:
            return tuple(sorted(self.seen.get(comm, ())))
        return g

    def exit_deps(self, rank: int, comm: int, n: int, op: str, final: bool
                  ) -> list[Key] | None:
        """Entries the exit of ``rank`` from instance ``n`` depends on.

        ``None`` while a needed entry has not arrived (with ``final``, missing
        entries are skipped: the trace ended without them).
        """
        inst = self.instances[(comm, n)]
        if op in ALL_TO_ALL:
            need: tuple[int, ...] | None = self.members(comm, final)
        elif op in FROM_ROOT or op in TO_ROOT:
            root = inst.roots.get(rank, next(iter(inst.roots.values()), None))
            if root is None:
                return []
            need = (root,) if op in FROM_ROOT else (
                self.members(comm, final) if rank == root else ())
        else:
            return []
        if need is None:
            return None
        deps: list[Key] = []
        for q in need:
            s = inst.entries.get(q)
            if s is None:
                if final:
                    continue
                return None
            deps.append((q, s))
        return deps
