"""Every built-in scenario gives a valid, deterministic trace that shows what it promises."""

from __future__ import annotations

from collections import Counter

import pytest

from mpvis.protocol.record_types import Record as Rec
from mpvis.protocol.records import check_header, check_record
from mpvis.sim import api

NAMES = api.scenario_names()


@pytest.fixture(scope="module")
def traces() -> dict[str, tuple[Rec, list[Rec]]]:
    return {name: api.simulate(name, 0) for name in NAMES}


def test_the_required_scenarios_exist() -> None:
    required = {
        "showcase",
        "master_worker",
        "wildcard_race",
        "false_race",
        "ring",
        "nonblocking",
        "p2p_deadlock",
        "collective_mismatch",
        "lock_cycle",
    }
    assert required <= set(NAMES)
    assert NAMES[0] == api.DEFAULT_GUI_SCENARIO == "showcase"
    assert api.DEFAULT_SCENARIO in NAMES
    for name in NAMES:
        assert api.describe(name).startswith(api.get_scenario(name).summary)


def test_unknown_scenario_names_the_known_ones() -> None:
    with pytest.raises(api.UnknownScenarioError) as info:
        api.simulate("nope")
    assert "master_worker" in str(info.value)


@pytest.mark.parametrize("name", NAMES)
def test_records_follow_the_trace_format(
    name: str, traces: dict[str, tuple[Rec, list[Rec]]]
) -> None:
    header, recs = traces[name]
    check_header(header)
    n = header["nprocs"]
    sends = {}
    next_seq = Counter[int]()
    last_t: dict[int, float] = {}
    for rec in recs:
        check_record(rec, n)
        r = rec["rank"]
        assert rec["seq"] == next_seq[r]
        next_seq[r] += 1
        assert rec["t"] >= last_t.get(r, 0.0)
        last_t[r] = rec["t"]
        assert rec["kind"] == "final" or rec["site"].startswith("demo/")
        if rec["kind"] == "send":
            sends[(r, rec["seq"])] = rec
        if rec["kind"] == "consume":
            send = sends[tuple(rec["send"])]  # the send came earlier in time order
            assert (send["dest"], send["tag"], send.get("comm", 0)) == (
                r,
                rec["tag"],
                rec.get("comm", 0),
            )
    assert [rec["t"] for rec in recs] == sorted(rec["t"] for rec in recs)
    finals = {rec["rank"] for rec in recs if rec["kind"] == "final"}
    assert (finals != set(range(n))) == api.get_scenario(name).ends_stuck


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_trace(name: str, traces: dict[str, tuple[Rec, list[Rec]]]) -> None:
    assert api.simulate(name, 0) == traces[name]


def test_another_seed_lets_another_worker_win_the_wildcard_race() -> None:
    winners = set()
    for seed in range(12):
        _, recs = api.simulate("wildcard_race", seed)
        first = next(r for r in recs if r["kind"] == "consume")
        assert first["rank"] == 0
        winners.add(first["src"])
    assert len(winners) >= 2


def test_sizes_and_durations(traces: dict[str, tuple[Rec, list[Rec]]]) -> None:
    header, recs = traces["showcase"]
    assert 20.0 <= recs[-1]["t"] <= 60.0  # seconds of live streaming at speed 1
    assert header["nprocs"] == 8
    header, recs = traces["master_worker"]
    assert header["nprocs"] == 8 and 200 <= len(recs) <= 1000


def test_showcase_shows_every_kind_of_event(traces: dict[str, tuple[Rec, list[Rec]]]) -> None:
    _, recs = traces["showcase"]
    kinds = Counter(r["kind"] for r in recs)
    assert set(kinds) == {
        "send",
        "recv",
        "consume",
        "wait",
        "coll",
        "coll_exit",
        "lock",
        "locked",
        "unlock",
        "state",
        "final",
    }
    assert any(r["kind"] == "recv" and r["src"] == -1 and r["tag"] == -1 for r in recs)
    assert any(r["kind"] == "send" and r["sync"] and r["blocking"] for r in recs)
    assert any(r["kind"] == "send" and r["sync"] and not r["blocking"] for r in recs)
    assert any(r.get("comm") == 1 for r in recs)
    names = {k for r in recs if r["kind"] == "state" for k in r["vars"]}
    assert {"x", "phase"} <= names
