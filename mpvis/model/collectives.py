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

import numpy as np
import numpy.typing as npt

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

    def passed_batch(self, *, exits: npt.NDArray[np.bool_], ranks: npt.NDArray[np.int64],
                     seqs: npt.NDArray[np.int64], comms: npt.NDArray[np.int64], ops: list[str],
                     roots: list[int | None]) -> npt.NDArray[np.int64]:
        """:meth:`passed` of a batch checked by
        :class:`~mpvis.model.rule_plans.CollPlan` (per rank and communicator,
        entries and exits alternate from the open state; no entry carries a
        ``group``), with whole-array operations: one Python step per rank and
        communicator and per instance, not per record.  Same state, same
        insertion orders."""
        n = len(ranks)
        inst = np.empty(n, dtype=np.int64)
        if n == 0:
            return inst
        order = np.lexsort((np.arange(n), ranks, comms))
        c_o, r_o, x_o = comms[order], ranks[order], exits[order]
        first = np.r_[True, (c_o[1:] != c_o[:-1]) | (r_o[1:] != r_o[:-1])]
        starts = np.flatnonzero(first)
        grp = np.cumsum(first) - 1
        ent = (~x_o).astype(np.int64)
        before = np.cumsum(ent) - ent
        before = before - before[starts][grp]  # the group's entries before each record
        keys = list(zip(c_o[starts].tolist(), r_o[starts].tolist(), strict=True))
        count, opened = self._count, self._open
        base = np.array([count.get(k, 0) for k in keys], dtype=np.int64)
        was = np.array([o[0] if (o := opened.get(k)) is not None else -1 for k in keys],
                       dtype=np.int64)
        inst_o = base[grp] + before - x_o.astype(np.int64)  # an exit leaves the entry before it,
        leaves_open = x_o & (before == 0)  # or the collective open before the batch
        inst_o[leaves_open] = was[grp[leaves_open]]
        inst[order] = inst_o
        n_ent = np.add.reduceat(ent, starts)
        last = np.r_[starts[1:], len(order)] - 1
        seq_l, inst_l = seqs.tolist(), inst.tolist()
        for g, (key, k, li, x) in enumerate(zip(keys, n_ent.tolist(), order[last].tolist(),
                                                x_o[last].tolist(), strict=True)):
            if k:
                count[key] = int(base[g]) + k
            if x:
                opened.pop(key, None)
            else:
                opened[key] = (inst_l[li], seq_l[li], ops[li])
        # the instances' entries, each instance created at its first entry
        e_at = np.flatnonzero(~exits)
        if len(e_at):
            ce, ie = comms[e_at], inst[e_at]
            o2 = np.lexsort((e_at, ie, ce))
            cut = np.flatnonzero(np.r_[True, (ce[o2][1:] != ce[o2][:-1])
                                       | (ie[o2][1:] != ie[o2][:-1])])
            ends = np.r_[cut[1:], len(o2)]
            rank_l = ranks.tolist()
            for a in np.argsort(e_at[o2[cut]], kind="stable").tolist():
                at = e_at[o2[cut[a]:ends[a]]].tolist()
                key2 = (int(ce[o2[cut[a]]]), int(ie[o2[cut[a]]]))
                instance = self.instances.get(key2)
                if instance is None:
                    self.instances[key2] = instance = Instance()
                rk = [rank_l[i] for i in at]
                instance.entries.update(zip(rk, [seq_l[i] for i in at], strict=True))
                instance.ops.update(zip(rk, [ops[i] for i in at], strict=True))
                instance.roots.update((rank_l[i], roots[i]) for i in at if roots[i] is not None)
            for c in np.unique(ce).tolist():
                self.seen.setdefault(c, set()).update(ranks[e_at[ce == c]].tolist())
        return inst

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
