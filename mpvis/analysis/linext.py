"""Counting the linear extensions (orderings) of a finite partial order, exactly.

A partial order over nodes ``0 .. n-1`` is given by ``preds``: ``preds[i]`` is
the bitmask of every node strictly before ``i`` (transitively closed, so
``j < i`` iff bit ``j`` of ``preds[i]`` is set).  Its orderings are its
linear extensions: the total orders of all nodes that keep every ``j < i``.
The POEG analysis (:mod:`mpvis.analysis.poeg`) counts the admissible
deliveries of a run this way (Schaeli et al., section 3: "admissible message
orderings are equivalent to admissible orderings of atomic step executions").

The count never enumerates orderings.  :func:`count_orderings` splits the
order recursively and only counts what is left by dynamic programming:

* **parallel split**: nodes in different connected components of the
  comparability graph are unordered with each other, so the orderings of the
  whole interleave the components' orderings freely:
  ``e(P) = n! / (n_1! ... n_k!) * e(P_1) ... e(P_k)``;
* **series split** (:func:`series_parts`): when the nodes split into
  consecutive blocks where every node of a block is before every node of the
  later blocks, ``e(P) = e(B_1) ... e(B_k)``; this is exactly the paper's
  subgroup partitioning (section 3, Figure 7, see :mod:`mpvis.analysis.poeg_decompose`);
* **downset lattice**: what is left is counted as the number of paths from
  the empty downset to the full one, adding one minimal node at a time, level
  by level with one count per downset (a downset is held as a bitmask; the
  candidate nodes come from a chain cover, so a step costs one test per
  chain).  The work is proportional to the number of downsets, which is
  bounded by the product of the chain lengths; ``limit`` bounds the downsets
  one count may visit (all parts and levels together: 5 to 10 seconds per
  million on a busy 2-core machine) and :class:`CountLimitError` says when it is exceeded.

Counts are Python integers (exact at any size).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

from mpvis.errors import MpvisError

__all__ = [
    "DEFAULT_STATE_LIMIT",
    "CountLimitError",
    "approx",
    "bits",
    "count_orderings",
    "count_subset",
    "series_parts",
    "successors",
]

#: Downsets one count may visit (its dynamic programmes together) before giving up.
DEFAULT_STATE_LIMIT = 2_000_000


class CountLimitError(MpvisError):
    """The exact count needs more downsets than the limit allows."""


def bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``, lowest first."""
    out: list[int] = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def approx(n: int, digits: int = 3) -> str:
    """``n`` in scientific notation with ``digits`` significant digits, for any size
    (floats overflow past about 1.8e308).

    >>> approx(653916), approx(10**400 * 7)
    ('6.54e5', '7.00e400')
    """
    text = str(n)
    if len(text) <= digits:
        return text
    head = round(int(text[: digits + 1]) / 10)  # the first digits, rounded
    exp = len(text) - 1
    if head >= 10**digits:  # 9.99.. rounded up to 10.0
        head //= 10
        exp += 1
    h = str(head)
    return f"{h[0]}.{h[1:]}e{exp}"


def successors(preds: Sequence[int]) -> list[int]:
    """``succs[i]``: the bitmask of every node strictly after ``i``."""
    succs = [0] * len(preds)
    for i, p in enumerate(preds):
        bit = 1 << i
        for j in bits(p):
            succs[j] |= bit
    return succs


def count_orderings(preds: Sequence[int], *, limit: int = DEFAULT_STATE_LIMIT) -> int:
    """The number of linear extensions of the order ``preds`` (module docstring).

    Raises :class:`CountLimitError` when the parts that cannot be split need
    more than ``limit`` downsets in all.

    >>> count_orderings([0, 0, 0b11])   # a, b unordered, both before c
    2
    """
    return count_subset(preds, (1 << len(preds)) - 1, limit=limit)


def count_subset(preds: Sequence[int], subset: int, *, limit: int = DEFAULT_STATE_LIMIT,
                 succs: Sequence[int] | None = None) -> int:
    """The number of linear extensions of the order restricted to ``subset``."""
    return _Counter(preds, succs or successors(preds), limit).count(subset)


def _topological(preds: Sequence[int], subset: int) -> list[int]:
    """The nodes of ``subset`` in a linear extension: by how many of them precede each."""
    nodes = bits(subset)
    nodes.sort(key=lambda i: (preds[i] & subset).bit_count())
    return nodes


def series_parts(preds: Sequence[int], subset: int) -> list[int]:
    """The finest series split of ``subset``: masks ``B_1, ..., B_k`` in order.

    Every node of ``B_i`` is before every node of ``B_j`` for ``i < j``, and no
    block can be split further that way (each block is ordinally
    indecomposable).  A block boundary after the first ``m`` nodes of a linear
    extension is valid iff those ``m`` nodes are predecessors of every later
    node; since every linear extension puts such a prefix first, one
    extension finds every boundary.
    """
    order = _topological(preds, subset)
    n = len(order)
    suffix_and = [0] * (n + 1)
    suffix_and[n] = subset
    for k in range(n - 1, -1, -1):
        suffix_and[k] = suffix_and[k + 1] & preds[order[k]]
    parts: list[int] = []
    prefix = 0
    block = 0
    for k, node in enumerate(order):
        prefix |= 1 << node
        block |= 1 << node
        if k + 1 < n and prefix & suffix_and[k + 1] == prefix:
            parts.append(block)
            block = 0
    if block:
        parts.append(block)
    return parts


class _Counter:
    def __init__(self, preds: Sequence[int], succs: Sequence[int], limit: int) -> None:
        self.preds = preds
        self.succs = succs
        self.limit = limit
        self.visited = 0

    def count(self, subset: int) -> int:
        if subset & (subset - 1) == 0:  # zero or one node
            return 1
        comps = self._components(subset)
        if len(comps) > 1:
            total = 1
            placed = 0
            for c in comps:
                size = c.bit_count()
                placed += size
                total *= comb(placed, size) * self.count(c)
            return total
        parts = series_parts(self.preds, subset)
        if len(parts) > 1:
            total = 1
            for p in parts:
                total *= self.count(p)
            return total
        return self._downsets(subset)

    def _components(self, subset: int) -> list[int]:
        """Connected components of the comparability graph restricted to ``subset``."""
        comps: list[int] = []
        left = subset
        while left:
            low = left & -left
            comp = low
            frontier = low
            while frontier:
                reach = 0
                for i in bits(frontier):
                    reach |= self.preds[i] | self.succs[i]
                frontier = reach & subset & ~comp
                comp |= frontier
            comps.append(comp)
            left &= ~comp
        return comps

    def _chains(self, subset: int) -> list[list[int]]:
        """A chain cover of ``subset`` (greedy, in a linear extension's order)."""
        chains: list[list[int]] = []
        for node in _topological(self.preds, subset):
            p = self.preds[node]
            best = -1
            best_depth = -1
            for ci, ch in enumerate(chains):
                tail = ch[-1]
                depth = self.preds[tail].bit_count()
                if p >> tail & 1 and depth > best_depth:  # the latest tail below node
                    best, best_depth = ci, depth
            if best < 0:
                chains.append([node])
            else:
                chains[best].append(node)
        return chains

    def _downsets(self, subset: int) -> int:
        """Paths through the lattice of downsets of ``subset`` (module docstring)."""
        chains = self._chains(subset)
        preds = [[self.preds[v] & subset for v in ch] for ch in chains]
        bits = [[1 << v for v in ch] for ch in chains]
        lengths = [len(ch) for ch in chains]
        k = len(chains)
        # a downset: its mask -> (its position in each chain, paths reaching it)
        level: dict[int, tuple[tuple[int, ...], int]] = {0: ((0,) * k, 1)}
        for _ in range(subset.bit_count()):
            nxt: dict[int, tuple[tuple[int, ...], int]] = {}
            for mask, (pos, paths) in level.items():
                for c in range(k):
                    i = pos[c]
                    if i == lengths[c]:
                        continue
                    need = preds[c][i]
                    if need & mask != need:
                        continue
                    m2 = mask | bits[c][i]
                    got = nxt.get(m2)
                    if got is None:
                        p2 = (*pos[:c], i + 1, *pos[c + 1:])
                        nxt[m2] = (p2, paths)
                    else:
                        nxt[m2] = (got[0], got[1] + paths)
            self.visited += len(nxt)
            if self.visited > self.limit:
                raise CountLimitError(
                    f"counting exactly needs more than {self.limit:,} downsets "
                    f"({subset.bit_count()} events that cannot be split further)"
                )
            level = nxt
        ((_, total),) = level.values()
        return total
