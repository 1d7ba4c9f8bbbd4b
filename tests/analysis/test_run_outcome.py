"""Outcomes of runs and their differences (what ``mpvis explore`` compares)."""

from __future__ import annotations

from collections import Counter

from mpvis.analysis.run_outcome import Outcome, differences, trace_outcome
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from tests.fixtures import model_of


def _model(value: int, dest: int) -> ModelManager:
    return model_of(make_header(3), [
        {"rank": 0, "seq": 0, "kind": "send", "dest": dest, "tag": 4, "blocking": True,
         "sync": False, "size": 8},
        {"rank": 0, "seq": 1, "kind": "state", "vars": {"x": value, "phase": "end"}},
        {"rank": 0, "seq": 2, "kind": "final"},
        {"rank": dest, "seq": 0, "kind": "recv", "src": -1, "tag": -1, "blocking": True},
        {"rank": dest, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 4,
         "send": [0, 0]},
        {"rank": dest, "seq": 2, "kind": "final"},
    ])


def test_trace_outcome_collects_messages_state_and_finished_ranks() -> None:
    o = trace_outcome(_model(3, 1), 0, {0: "hi\n"})
    assert o.messages == Counter({(0, 1, 4, 0, 8): 1})
    assert o.state == {0: {"x": 3, "phase": "end"}}
    assert o.finished == frozenset({0, 1})


def test_same_outcome_has_no_difference() -> None:
    a = trace_outcome(_model(3, 1), 0, {0: "hi\n"})
    assert differences(a, trace_outcome(_model(3, 1), 0, {0: "hi\n"})) == []


def test_each_kind_of_difference_is_named() -> None:
    ref = trace_outcome(_model(3, 1), 0, {0: "sum 6\n"})
    other = trace_outcome(_model(4, 2), 1, {0: "sum 7\n"})
    what = differences(ref, other)
    assert what[0] == "exit status 1 instead of 0"
    assert what[1] == "rank 0 printed 'sum 7' instead of 'sum 6'"
    assert what[2] == ("different messages sent (new: 1x 0->2 tag 4 (8 B); "
                       "missing: 1x 0->1 tag 4 (8 B))")
    assert what[3] == "rank 0 ended with x=4 (recorded 3)"
    assert len(what) == 5 and what[4] == "ranks [1] did not finish"


def test_a_run_stopped_by_its_time_bound_is_said_so_alone() -> None:
    ref = trace_outcome(_model(3, 1), 0, {0: "sum 6\n"})
    (what,) = differences(ref, Outcome(None, {}, nprocs=3))
    assert what.startswith("the run did not end within its time bound")
