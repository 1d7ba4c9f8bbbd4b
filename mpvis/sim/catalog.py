"""The built-in scenarios and their simulation (pure functions, no I/O).

* :func:`scenario_names`, :func:`describe`: what ``mpvis demo --list`` shows.
* :func:`run`, :func:`simulate`: a scenario and a seed give a header and the
  records, in simulated-time order (same arguments, same trace).

:mod:`mpvis.sim.api` re-exports these with the live streaming of
:mod:`mpvis.sim.live` (which imports this module, not the API: no cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mpvis.errors import MpvisError
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import make_header
from mpvis.sim.engine import Simulator
from mpvis.sim.scenario import Scenario
from mpvis.sim.scenarios import SCENARIOS

__all__ = [
    "DEFAULT_GUI_SCENARIO",
    "DEFAULT_SCENARIO",
    "SimRun",
    "UnknownScenarioError",
    "describe",
    "get_scenario",
    "header_for",
    "run",
    "scenario_names",
    "simulate",
]

#: What ``mpvis`` with no arguments shows in the window.
DEFAULT_GUI_SCENARIO: Final = "showcase"
#: What ``mpvis demo`` runs when no scenario is named.
DEFAULT_SCENARIO: Final = "master_worker"


class UnknownScenarioError(MpvisError, KeyError):
    """No built-in scenario has this name; ``str()`` lists the known ones."""

    def __str__(self) -> str:
        return f"unknown demo scenario {self.args[0]!r} (known: {', '.join(scenario_names())})"


def scenario_names() -> list[str]:
    """The built-in scenarios, in the order ``mpvis demo --list`` shows them."""
    return list(SCENARIOS)


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``; raises :class:`UnknownScenarioError`."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise UnknownScenarioError(name) from None


def describe(name: str) -> str:
    """A short paragraph: the summary line, then what to look for."""
    s = get_scenario(name)
    ending = "ends with blocked ranks" if s.ends_stuck else "ends normally"
    return f"{s.summary}\n{s.shows} ({s.nprocs} ranks, {ending}.)"


def header_for(name: str, seed: int = 0) -> Record:
    """The trace header of a scenario run (no wall-clock field: deterministic)."""
    s = get_scenario(name)
    return make_header(s.nprocs, program=f"mpvis demo {name} --seed {seed}", demo=name, seed=seed)


@dataclass(frozen=True)
class SimRun:
    """A finished simulation: the trace, and where each blocked rank waits."""

    header: Record
    records: list[Record]
    stuck: dict[int, str]


def run(name: str, seed: int = 0) -> SimRun:
    """Run scenario ``name`` with ``seed`` (see :func:`simulate`)."""
    s = get_scenario(name)
    sim = Simulator(
        s.program, s.nprocs, seed, comms=s.comms, latency=s.latency, overhead=s.overhead
    )
    records = sim.run()
    return SimRun(header_for(name, seed), records, dict(sim.stuck))


def simulate(name: str, seed: int = 0) -> tuple[Record, list[Record]]:
    """Run scenario ``name`` with ``seed``; return ``(header, records)``.

    Records come in simulated-time order, each rank's in ``seq`` order; ranks
    that end blocked have no ``final``.
    """
    result = run(name, seed)
    return result.header, result.records
