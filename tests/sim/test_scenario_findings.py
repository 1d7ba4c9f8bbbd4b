"""Each scenario shows what its description promises, as mpvis's analyses see it."""

from __future__ import annotations

from collections import Counter

import pytest

from mpvis.analysis.deadlock_monitor import DeadlockMonitor
from mpvis.model.manager import ModelManager
from mpvis.sim import api

SEEDS = (0, 1, 2)


def analyse(name: str, seed: int) -> tuple[Counter[tuple[str, str]], list[tuple[str, set[int]]]]:
    """(scope, verdict) counts of the classifier's pairs, and the deadlocks found."""
    header, records = api.simulate(name, seed)
    model = ModelManager(header)
    monitor = DeadlockMonitor(header["nprocs"])
    model.analyzers.append(monitor)
    model.add_batch(records)
    model.finish()
    races = list(model.potential_races())
    for r in records:
        if r["kind"] == "recv" and r["src"] == -1 and r["tag"] == -1:
            races += model.nonadjacent_races(r["rank"], r["seq"])
    verdicts = Counter((race.scope, race.verdict) for race in races)
    return verdicts, [(d.kind, set(d.ranks)) for d in monitor.deadlocks]


@pytest.mark.parametrize("seed", SEEDS)
def test_race_scenarios(seed: int) -> None:
    v, dl = analyse("wildcard_race", seed)
    assert v[("adjacent", "legitimate")] == 2 and not dl
    v, dl = analyse("master_worker", seed)
    assert v[("adjacent", "legitimate")] >= 10 and not dl
    v, dl = analyse("false_race", seed)
    assert v[("adjacent", "false")] >= 1 and v[("adjacent", "spurious")] >= 1
    assert not any(verdict in ("legitimate", "unverified") for _, verdict in v)
    assert not dl


@pytest.mark.parametrize("seed", SEEDS)
def test_showcase_has_every_kind_of_race_and_ends_well(seed: int) -> None:
    v, dl = analyse("showcase", seed)
    assert v[("adjacent", "legitimate")] >= 5
    assert v[("nonadjacent", "legitimate")] >= 1
    assert v[("adjacent", "false")] >= 1
    assert not dl


@pytest.mark.parametrize("seed", SEEDS)
def test_clean_scenarios_have_no_race_and_no_deadlock(seed: int) -> None:
    for name in ("ring", "lock_chain"):
        v, dl = analyse(name, seed)
        assert not v and not dl


@pytest.mark.parametrize("seed", SEEDS)
def test_deadlock_scenarios(seed: int) -> None:
    _, dl = analyse("p2p_deadlock", seed)
    assert any(kind == "p2p" and {0, 1} <= ranks for kind, ranks in dl)
    _, dl = analyse("collective_mismatch", seed)
    assert any(kind == "collective" and ranks == {0, 1, 2, 3} for kind, ranks in dl)
    _, dl = analyse("lock_cycle", seed)
    assert any(kind == "lock" and {0, 1} <= ranks for kind, ranks in dl)
