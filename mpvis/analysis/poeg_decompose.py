"""Process and subgroup partitioning of a POEG, and the orderings left after each.

Schaeli et al., section 3 ("Partitioning the POEG"; the issue calls these
steps sections 5 and 6 after the paper's published numbering):

* **Process partitioning.**  Swapping deliveries to different processes
  cannot change an outcome when the message set is fixed, so each process is
  tested on its own: its POEG is the whole POEG restricted to its events,
  keeping the causality between them ("removing all the messages delivered to
  other processes, while maintaining the causality", Figure 5, Figure 11a).
  Here that is the transitive closure restricted to the rank's nodes.
* **Subgroup partitioning.**  The paper adds an auxiliary node between every
  two fully interconnected sets and a source and sink, runs a unit flow, and
  cuts at every node whose inflow is 1 (Figure 7): such a node is on every
  path, so everything before it is before everything after it.  That is the
  ordinal-sum (series) decomposition of the rank's order: the finest split
  into consecutive blocks ``B_1 < B_2 < ... < B_k`` where every event of a
  block is before every event of every later block
  (:func:`mpvis.analysis.linext.series_parts`).  Each block's orderings are
  tested on its own, the others staying as recorded (Figure 11b).
  Consecutive blocks that admit a single ordering each are reported as one
  subgroup (nothing to test there).

Counts (section 6.1 sums the work over the parts tested independently):

* ``orderings``: linear extensions of the whole POEG (``None`` when too many
  downsets to count exactly, see :class:`~mpvis.analysis.linext.CountLimitError`);
* ``after_process``: the sum over ranks of their POEG's orderings;
* ``after_subgroups``: the sum over ranks and subgroups of the subgroup's
  orderings.  For Figure 10's program each middle rank has ``2 * maxIter``
  subgroups (its Sendrecv calls) of 2 orderings: ``2 * 2 * maxIter`` (section 7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpvis.analysis.linext import (
    DEFAULT_STATE_LIMIT,
    CountLimitError,
    bits,
    count_subset,
    series_parts,
    successors,
)
from mpvis.analysis.poeg import Poeg

__all__ = ["Decomposition", "RankPart", "Subgroup", "decompose", "rank_order"]


@dataclass(frozen=True)
class Subgroup:
    """Consecutive events of one rank tested together (module docstring)."""

    events: tuple[int, ...]  # seqs, in seq order
    nodes: tuple[int, ...]  # the POEG's nodes of those events
    orderings: int

    def to_json(self) -> dict[str, Any]:
        return {"events": list(self.events), "orderings": self.orderings}


@dataclass(frozen=True)
class RankPart:
    """One process's POEG after process partitioning, and its subgroups."""

    rank: int
    nodes: tuple[int, ...]
    orderings: int
    subgroups: tuple[Subgroup, ...]
    #: how the rank's records were grouped into MPI calls: ``"call"`` (their
    #: ``call`` fields) or ``"site"`` (site and adjacency), see :class:`Poeg`
    pairing: str = "call"

    @property
    def after_subgroups(self) -> int:
        return sum(g.orderings for g in self.subgroups)

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "events": len(self.nodes), "orderings": self.orderings,
                "after_subgroups": self.after_subgroups, "pairing": self.pairing,
                "subgroups": [g.to_json() for g in self.subgroups]}


@dataclass(frozen=True)
class Decomposition:
    """The counts of a POEG before and after each partitioning."""

    orderings: int | None
    ranks: tuple[RankPart, ...]
    #: why ``orderings`` is ``None``
    note: str | None = None

    @property
    def after_process(self) -> int:
        return sum(p.orderings for p in self.ranks)

    @property
    def after_subgroups(self) -> int:
        return sum(p.after_subgroups for p in self.ranks)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "orderings": self.orderings,
            "ranks": [p.to_json() for p in self.ranks],
            "after_process": self.after_process,
            "after_subgroups": self.after_subgroups,
        }
        if self.note:
            out["note"] = self.note
        return out


def rank_order(poeg: Poeg, rank: int) -> tuple[list[int], list[int]]:
    """The rank's nodes and its POEG as predecessor masks over their positions."""
    nodes = poeg.rank_nodes(rank)
    pos = {v: i for i, v in enumerate(nodes)}
    mine = 0
    for v in nodes:
        mine |= 1 << v
    preds: list[int] = []
    for v in nodes:
        mask = 0
        for u in bits(poeg.preds[v] & mine):
            mask |= 1 << pos[u]
        preds.append(mask)
    return nodes, preds


def _subgroups(poeg: Poeg, nodes: list[int], preds: list[int], limit: int
               ) -> tuple[int, list[Subgroup]]:
    succs = successors(preds)
    full = (1 << len(nodes)) - 1
    blocks = [(b, count_subset(preds, b, limit=limit, succs=succs))
              for b in series_parts(preds, full)] if nodes else []
    merged: list[tuple[int, int]] = []
    for mask, n in blocks:
        if merged and n == 1 and merged[-1][1] == 1:
            merged[-1] = (merged[-1][0] | mask, 1)
        else:
            merged.append((mask, n))
    total = 1
    groups: list[Subgroup] = []
    for mask, n in merged:
        total *= n
        members = [nodes[i] for i in range(len(nodes)) if mask >> i & 1]
        groups.append(Subgroup(tuple(poeg.nodes[v][1] for v in members), tuple(members), n))
    return total, groups


def decompose(poeg: Poeg, *, limit: int = DEFAULT_STATE_LIMIT) -> Decomposition:
    """Counts before and after process and subgroup partitioning (module docstring).

    Per-rank counts are always exact (they raise :class:`CountLimitError` only
    if one rank's subgroup alone exceeds ``limit``); the whole POEG's count
    is ``None`` with a ``note`` when it needs more than ``limit`` downsets.
    """
    parts: list[RankPart] = []
    for r in range(poeg.nprocs):
        nodes, preds = rank_order(poeg, r)
        total, groups = _subgroups(poeg, nodes, preds, limit)
        parts.append(RankPart(r, tuple(nodes), total, tuple(groups), poeg.pairing[r]))
    note = None
    whole: int | None
    try:
        whole = count_subset(poeg.preds, (1 << len(poeg.nodes)) - 1, limit=limit)
    except CountLimitError as exc:
        whole, note = None, f"the whole POEG was not counted: {exc}"
    return Decomposition(whole, tuple(parts), note)
