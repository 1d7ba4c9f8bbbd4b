"""The simulated demo as the rest of mpvis uses it.

* :func:`scenario_names`, :func:`describe`: what ``mpvis demo --list`` shows.
* :func:`simulate`: a scenario and a seed give a header and the records, in
  simulated-time order (a pure function: same arguments, same trace).
* :func:`stream_scenario` (from :mod:`mpvis.sim.live`): the same records sent
  live, paced by their simulated times, through the collector path.

The first two live in :mod:`mpvis.sim.catalog`, which :mod:`mpvis.sim.live`
imports (so this module imports both and neither imports it).
"""

from __future__ import annotations

from mpvis.sim.catalog import (
    DEFAULT_GUI_SCENARIO,
    DEFAULT_SCENARIO,
    SimRun,
    UnknownScenarioError,
    describe,
    get_scenario,
    header_for,
    run,
    scenario_names,
    simulate,
)
from mpvis.sim.live import DemoStreamError, StreamOutcome, stream_scenario

__all__ = [
    "DEFAULT_GUI_SCENARIO",
    "DEFAULT_SCENARIO",
    "DemoStreamError",
    "SimRun",
    "StreamOutcome",
    "UnknownScenarioError",
    "describe",
    "get_scenario",
    "header_for",
    "run",
    "scenario_names",
    "simulate",
    "stream_scenario",
]
