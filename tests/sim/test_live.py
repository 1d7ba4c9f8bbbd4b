"""End to end: the demo streams through a real collector into a real central process."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mpvis.collector.central import CentralProcess
from mpvis.sim import api
from mpvis.sim.live import DemoStreamError, stream_scenario

TOKEN = "demo-test-token"
WAIT = 30.0


class Central:
    """A loopback central process recording one run into ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ended = threading.Event()
        self.info: dict[str, Any] = {}
        self.cp = CentralProcess(token=TOKEN, journal_path=path, on_run_end=self._end).start()

    def _end(self, info: dict[str, Any]) -> None:
        self.info = info
        self.ended.set()

    def journal(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        lines = self.path.read_text().splitlines()
        return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def multiset(records: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(r, sort_keys=True) for r in records)


@pytest.fixture
def central(tmp_path: Path) -> Any:
    c = Central(tmp_path / "run.jsonl")
    yield c
    c.cp.stop()


@pytest.mark.parametrize("name", ["master_worker", "p2p_deadlock"])
def test_journal_equals_the_simulation(central: Central, name: str) -> None:
    out = stream_scenario(name, central.cp.address, TOKEN, seed=2, speed=0)
    assert central.ended.wait(WAIT)
    header, records = api.simulate(name, 2)
    jheader, journal = central.journal()
    assert multiset(journal) == multiset(records)
    assert jheader["nprocs"] == header["nprocs"] and jheader["demo"] == name
    assert out.records == len(records) and out.acknowledged and not out.interrupted
    statuses = {r["rank"]: r["status"] for r in central.info["ranks"]}
    finals = {r["rank"] for r in records if r["kind"] == "final"}
    assert {r for r, s in statuses.items() if s == "final"} == finals
    assert {r for r, s in statuses.items() if s != "final"} == set(out.stuck)
    assert all(statuses[r] == "killed" for r in out.stuck)


def test_stop_event_interrupts_the_stream(central: Central) -> None:
    stop = threading.Event()
    stop.set()
    out = stream_scenario("showcase", central.cp.address, TOKEN, 0, 1.0, stop)
    assert out.interrupted and out.records == 0
    assert central.ended.wait(WAIT)
    assert central.info["interrupted"] is True


def test_blocked_ranks_stay_connected_until_stopped(central: Central) -> None:
    stop = threading.Event()
    done: list[Any] = []
    t = threading.Thread(
        target=lambda: done.append(
            stream_scenario("lock_cycle", central.cp.address, TOKEN, 0, 0, stop, hold_stuck=True)
        )
    )
    t.start()
    _, expected = api.simulate("lock_cycle", 0)
    wanted = multiset(expected)
    for _ in range(600):  # until every record is journaled (poll, no timing assertion)
        if central.path.exists() and multiset(central.journal()[1]) == wanted:
            break
        stop.wait(0.05)
    assert t.is_alive() and not central.ended.is_set()
    stop.set()
    t.join(WAIT)
    assert done and done[0].stuck.keys() == {0, 1, 2}
    assert central.ended.wait(WAIT)


def test_a_wrong_token_is_refused(central: Central) -> None:
    with pytest.raises(DemoStreamError, match="wrong token"):
        stream_scenario("ring", central.cp.address, "not-the-token", speed=0)
