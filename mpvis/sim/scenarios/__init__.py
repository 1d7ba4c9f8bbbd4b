"""The built-in scenarios of ``mpvis demo``, one module per simulated program.

Each module defines ``SCENARIO``; :data:`SCENARIOS` lists them in the order
``mpvis demo --list`` shows.  The modules are written like small MPI programs
so that the ``site`` of every record (``demo/<module>.py:<line>``) points at
readable source.
"""

from __future__ import annotations

from mpvis.sim.scenario import Scenario
from mpvis.sim.scenarios import (
    collective_mismatch,
    false_race,
    lock_chain,
    lock_cycle,
    master_worker,
    nonblocking,
    p2p_deadlock,
    ring,
    showcase,
    wildcard_race,
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        showcase.SCENARIO,
        master_worker.SCENARIO,
        wildcard_race.SCENARIO,
        false_race.SCENARIO,
        ring.SCENARIO,
        nonblocking.SCENARIO,
        p2p_deadlock.SCENARIO,
        collective_mismatch.SCENARIO,
        lock_cycle.SCENARIO,
        lock_chain.SCENARIO,
    )
}
