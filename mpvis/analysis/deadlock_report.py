"""A found deadlock, its report entry (`deadlocks` of ``mpvis check --json``) and DOT export.

A :class:`Deadlock` carries the spec's three fields (``kind``, ``ranks``,
``reason``) and what the window draws: the blocking ``events``, the ``edges`` of
the wait-for graph (:class:`~mpvis.analysis.waitfor.WaitEdge`), a ``cycle`` when
there is one, and a label per rank (``nodes``: what the rank is doing, or that
it finished).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from mpvis.analysis.waitfor import WaitEdge

__all__ = ["Deadlock", "classify", "describe_site", "to_dot"]

P2P = "p2p"
COLLECTIVE = "collective"
LOCK = "lock"
MIXED = "mixed"


@dataclass
class Deadlock:
    """One deadlock (or collective/lock usage error that must end in one).

    ``kind``: ``p2p``, ``collective``, ``lock`` or ``mixed``.  ``ranks``: the
    ranks involved, sorted (blocked ranks and the finished or stuck ranks their
    chains end at).  ``reason``: one human-readable paragraph naming the ranks,
    operations and call sites.  ``events``: ``(rank, seq)`` of the blocking or
    offending events.  ``check``: which rule found it (``wait-for``,
    ``collective-order``, ``collective-args``, ``collective-finished``,
    ``lock-cycle``, ``lock-chain``, ``lock-double``, ``unlock-not-held``).
    """

    kind: str
    ranks: list[int]
    reason: str
    check: str
    events: list[tuple[int, int]] = field(default_factory=list)
    edges: list[WaitEdge] = field(default_factory=list)
    cycle: list[int] = field(default_factory=list)
    nodes: dict[int, str] = field(default_factory=dict)

    def to_report(self) -> dict[str, object]:
        """The JSON-ready entry of the ``deadlocks`` list of the check report."""
        out: dict[str, object] = {
            "kind": self.kind,
            "ranks": list(self.ranks),
            "reason": self.reason,
            "check": self.check,
            "events": [list(e) for e in self.events],
        }
        if self.edges:
            out["edges"] = [e.to_report() for e in self.edges]
        if self.cycle:
            out["cycle"] = list(self.cycle)
        return out


def classify(edge_kinds: set[str]) -> str:
    """The deadlock kind from the kinds of the waits involved.

    Point-to-point waits together with lock or collective waits make ``mixed``;
    a lock wait otherwise makes ``lock`` (Roy et al., Sec. IV: lock chains may
    end in collectives); only collectives make ``collective``.
    """
    if P2P in edge_kinds and len(edge_kinds) > 1:
        return MIXED
    if LOCK in edge_kinds:
        return LOCK
    if COLLECTIVE in edge_kinds:
        return COLLECTIVE
    return P2P


def describe_site(site: str | None) -> str:
    """`` at FILE:LINE`` or the empty string."""
    return f" at {site}" if site else ""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(deadlock: Deadlock) -> str:
    """The deadlock's wait-for graph in Graphviz DOT.

    Ranks are boxes labelled with what they wait in (grey when finished or
    stuck elsewhere); an edge ``a -> b`` means rank ``a`` waits for rank ``b``.
    Lock waits go through an ellipse for the lock, as in Roy et al.'s Fig. 4:
    a dashed arrow from the waiting rank to the lock, a solid one from the lock
    to its holder.  Cycle edges are red.
    """
    lines = ["digraph deadlock {", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    on_cycle = set(pairwise(deadlock.cycle))
    blocked = {e.src for e in deadlock.edges} | {r for r, _ in deadlock.events}
    for r in deadlock.ranks:
        label = f"rank {r}"
        if r in deadlock.nodes:
            label += "\n" + deadlock.nodes[r]
        style = "" if r in blocked else ", style=filled, fillcolor=lightgrey"
        lines.append(f"  r{r} [label={_quote(label)}{style}];")
    locks = sorted({e.lock for e in deadlock.edges if e.lock is not None})
    for i, name in enumerate(locks):
        lines.append(f"  l{i} [shape=ellipse, label={_quote('lock ' + name)}];")
    lock_ids = {name: f"l{i}" for i, name in enumerate(locks)}
    held: set[tuple[str, int]] = set()
    for e in deadlock.edges:
        colour = ", color=red" if (e.src, e.dst) in on_cycle else ""
        if e.lock is not None:
            lid = lock_ids[e.lock]
            lines.append(f"  r{e.src} -> {lid} [style=dashed, label=waits{colour}];")
            if (e.lock, e.dst) not in held:
                held.add((e.lock, e.dst))
                lines.append(f"  {lid} -> r{e.dst} [label=held{colour}];")
        else:
            lines.append(f"  r{e.src} -> r{e.dst} [label={_quote(e.kind)}{colour}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
