"""What a built-in demo scenario is: an SPMD program plus how to run it.

Every scenario module of :mod:`mpvis.sim.scenarios` defines one
:class:`Scenario`.  ``program`` is called once per rank with that rank's
:class:`~mpvis.sim.ops.Ctx` (like an MPI program, it branches on
``ctx.rank``); :func:`mpvis.sim.api.simulate` runs it in
:class:`~mpvis.sim.engine.Simulator`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mpvis.sim.ops import Ctx, Program


@dataclass(frozen=True)
class Scenario:
    """A named simulated program.

    ``summary`` is the one line ``mpvis demo --list`` prints; ``shows`` says
    what a user should look for in the window (races, deadlocks, ...).
    ``ends_stuck`` is true for the scenarios whose bug leaves ranks blocked.
    """

    name: str
    summary: str
    shows: str
    nprocs: int
    program: Callable[[Ctx], Program]
    comms: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    latency: tuple[float, float] = (0.02, 0.12)
    overhead: float = 0.004
    ends_stuck: bool = False
