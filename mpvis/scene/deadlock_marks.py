"""What the diagram draws for a deadlock: its wait-for graph over the events (no Qt).

A :class:`~mpvis.analysis.deadlock_report.Deadlock` names the blocking events
``(rank, seq)`` and the wait-for edges ``src -> dst`` (rank ``src`` waits in
``edge.event`` for rank ``dst``; Roy et al.).  On the diagram an edge is a
segment from the waiting rank's blocking event to where ``dst`` stands: its
own blocking event when it is blocked in this deadlock, otherwise its last
event (it finished, died, or is stuck elsewhere).  Edges on the cycle are
drawn thick red (overlay ``deadlock``), the others dashed orange
(``deadlock-chain``); the blocking events are ringed.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from mpvis.analysis.deadlock_report import Deadlock
from mpvis.scene.overlay import Overlay

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

CYCLE_COLOR = "#d50000"
CHAIN_COLOR = "#ef6c00"
OVERLAY_NAMES = ("deadlock", "deadlock-chain")


def _event(m: ModelManager, rank: int, seq: int | None) -> int | None:
    n = m.count(rank)
    if not n:
        return None
    s = n - 1 if seq is None or seq >= n else seq
    return m.gidx(rank, s)


def deadlock_overlays(m: ModelManager, d: Deadlock) -> dict[str, Overlay]:
    """The overlays of ``d`` by name (see the module docstring); empty ones left out."""
    blocking = {r: s for r, s in d.events}
    for e in d.edges:
        blocking.setdefault(e.src, e.event[1])
    rings = [g for r, s in blocking.items() if (g := _event(m, r, s)) is not None]
    on_cycle = set(pairwise(d.cycle))
    cycle: list[tuple[int, int]] = []
    chain: list[tuple[int, int]] = []
    for e in d.edges:
        a = _event(m, e.src, e.event[1])
        b = _event(m, e.dst, blocking.get(e.dst))
        if a is None or b is None or a == b:
            continue
        (cycle if (e.src, e.dst) in on_cycle else chain).append((a, b))
    out: dict[str, Overlay] = {}
    label = f"{d.kind} deadlock of ranks {', '.join(map(str, d.ranks))}"
    out["deadlock"] = Overlay(
        highlight=np.array(rings, dtype=np.int64),
        segments=np.array(cycle, dtype=np.int64).reshape(-1, 2),
        color=CYCLE_COLOR,
        width=3.0,
        label=label + (" (wait-for cycle)" if cycle else ""),
        z=6,
        arrows=True,
    )
    if chain:
        out["deadlock-chain"] = Overlay(
            segments=np.array(chain, dtype=np.int64).reshape(-1, 2),
            color=CHAIN_COLOR,
            width=2.0,
            dashed=True,
            label="waits for (not on a cycle)",
            z=6,
            arrows=True,
        )
    return out
