"""The AND-OR wait-for graph of blocked ranks, its reduction, cycles and DOT export.

A blocked rank waits on a conjunction of *clauses*; a clause is a disjunction of
ranks (any one of them acting releases it).  A blocking receive from a named
source is a one-rank clause, a wildcard receive is a clause over every rank that
could still send, a waitall is the conjunction of its requests' clauses, a
collective is one clause per member that has not reached it, a lock request is
one clause naming the holder (Roy et al., Sec. IV: the hold-and-wait graph of
Fig. 4 and 5, extended with the AND-OR model of Hilbrich et al. that they cite).

:func:`reduce_graph` computes which blocked ranks can still be released, given
the ranks that are free to act: the classic graph reduction, linear in the
number of (clause, target) pairs.  The ranks it leaves are deadlocked; the
unsatisfied clauses give the edges of the graph that the report shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Clause", "WaitEdge", "find_cycle", "reduce_graph", "weak_components"]


@dataclass(frozen=True, slots=True)
class Clause:
    """One disjunction a blocked rank waits on.

    ``targets``: ranks any one of which can release it (empty: nobody can).
    ``kind``: ``p2p``, ``collective`` or ``lock``.  ``event``: ``(rank, seq)``
    of the blocking event.  ``op``: a short description of the operation,
    ``site``: its call site or ``None``.  ``lock``: the lock's name for lock
    waits.
    """

    targets: tuple[int, ...]
    kind: str
    event: tuple[int, int]
    op: str
    site: str | None = None
    lock: str | None = None


@dataclass(frozen=True, slots=True)
class WaitEdge:
    """``src`` waits for ``dst`` (an unsatisfied clause names ``dst``)."""

    src: int
    dst: int
    kind: str
    event: tuple[int, int]
    op: str
    site: str | None = None
    lock: str | None = None

    def to_report(self) -> dict[str, object]:
        """The edge as a JSON-ready dict."""
        out: dict[str, object] = {
            "from": self.src,
            "to": self.dst,
            "kind": self.kind,
            "event": list(self.event),
            "op": self.op,
        }
        if self.site is not None:
            out["site"] = self.site
        if self.lock is not None:
            out["lock"] = self.lock
        return out


def reduce_graph(blocked: Mapping[int, list[Clause]], free: Iterable[int]) -> set[int]:
    """Release every blocked rank whose clauses can all be satisfied.

    ``blocked`` maps a rank to the clauses it waits on (already satisfied clauses
    left out).  ``free`` are the ranks able to act.  A clause is satisfied as
    soon as one of its targets is free or released; a rank is released when all
    its clauses are.  Returns the released ranks (a subset of ``blocked``).
    """
    remaining: dict[int, int] = {}
    watchers: dict[int, list[tuple[int, int]]] = {}
    work: deque[int] = deque(free)
    released: set[int] = set()
    done: set[tuple[int, int]] = set()
    for rank, clauses in blocked.items():
        remaining[rank] = len(clauses)
        if not clauses:
            released.add(rank)
            work.append(rank)
        for i, clause in enumerate(clauses):
            for t in clause.targets:
                watchers.setdefault(t, []).append((rank, i))
    seen: set[int] = set()
    while work:
        t = work.popleft()
        if t in seen:
            continue
        seen.add(t)
        for rank, i in watchers.get(t, ()):
            if rank in released or (rank, i) in done:
                continue
            done.add((rank, i))
            remaining[rank] -= 1
            if remaining[rank] == 0:
                released.add(rank)
                work.append(rank)
    return released


def weak_components(nodes: Iterable[int], edges: Iterable[WaitEdge]) -> list[list[int]]:
    """The weakly connected components of ``nodes`` under ``edges``, each sorted."""
    parent: dict[int, int] = {n: n for n in nodes}

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in edges:
        parent.setdefault(e.src, e.src)
        parent.setdefault(e.dst, e.dst)
        a, b = root(e.src), root(e.dst)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for n in parent:
        groups.setdefault(root(n), []).append(n)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


def find_cycle(edges: Iterable[WaitEdge]) -> list[int]:
    """A directed cycle of the graph as ``[r0, r1, ..., r0]``, or ``[]`` if acyclic.

    Iterative depth-first search; the cycle returned starts at its smallest rank.
    """
    succ: dict[int, list[int]] = {}
    for e in edges:
        succ.setdefault(e.src, [])
        if e.dst not in succ[e.src]:
            succ[e.src].append(e.dst)
    colour: dict[int, int] = {}
    for start in sorted(succ):
        if colour.get(start):
            continue
        path: list[int] = [start]
        iters = [iter(succ.get(start, ()))]
        colour[start] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                iters.pop()
            elif colour.get(nxt) == 1:
                cyc = path[path.index(nxt) :]
                k = cyc.index(min(cyc))
                cyc = cyc[k:] + cyc[:k]
                return [*cyc, cyc[0]]
            elif not colour.get(nxt):
                colour[nxt] = 1
                path.append(nxt)
                iters.append(iter(succ.get(nxt, ())))
    return []
