"""``mpvis replay --order``: several racing receives of one rank forced at once (no MPI)."""

from __future__ import annotations

import pytest

from mpvis.instrument.record_file import ReplayRecordError
from mpvis.instrument.replay import (
    CHANNEL,
    USER,
    ReplayHooks,
    find_order,
    parse_anys,
    parse_order,
    plan_for,
)
from tests.instrument.test_replay_plan import _records


def test_parse_order() -> None:
    assert parse_order("0:3=3:2,9=1:2") == (0, [(3, 3, 2), (9, 1, 2)])
    for bad in ("0:3", "x:3=1:2", "0:3=1", "0:3=1:2,3=2:2", "3=1:2"):
        with pytest.raises(ValueError, match="order"):
            parse_order(bad)


def test_order_forces_each_receive_and_routes_each_message() -> None:
    recs = _records()  # rank 0 took [1, 2] at 3, [3, 2] at 6, [2, 2] at 9
    order = find_order(recs, *parse_order("0:9=1:2,3=2:2,6=3:2"))
    assert (order.recv, order.src, order.send, order.was) == (3, 2, 2, (1, 2))
    assert order.last == 9
    plan = plan_for(recs, 0, order)
    assert plan.forced == {3: (2, 2, 2), 6: (3, 2, 2), 9: (1, -1, 2)}
    assert plan.unpinned == set()
    # every message of the order travels on the replay channel, at its sender
    assert plan_for(recs, 1, order).routed_sends == {2: (0, -1)}
    assert plan_for(recs, 2, order).routed_sends == {2: (0, 2)}
    hooks = ReplayHooks(plan)
    assert [hooks.route_recv(y, True) for y in (3, 6, 9)] == [CHANNEL] * 3
    assert hooks.route_recv(4, True) == USER
    hooks.incoming(0, 3, 2, 2, None, [2, 0])
    assert not hooks.free  # pinned until the order's last receive
    hooks.incoming(0, 6, 3, 2, None, [2, 0])
    hooks.incoming(0, 9, 1, 2, None, [2, 0])
    assert hooks.free and hooks.forced_ok == 3 and hooks.divergence is None


def test_order_that_could_not_be_forced_is_a_divergence() -> None:
    recs = _records()
    hooks = ReplayHooks(plan_for(recs, 0, find_order(recs, 0, [(3, 2, 2), (6, 1, 2)])))
    hooks.route_recv(3, True)
    hooks.incoming(0, 3, 1, 2, None, [2, 0])
    assert hooks.divergence == "receive 0:3 took message [1, 2] instead of the recorded [2, 2]"


def test_order_names_only_racing_receives() -> None:
    with pytest.raises(ReplayRecordError, match="racing receives of rank 0: 3, 6, 9"):
        find_order(_records(), 0, [(4, 1, 2)])
    with pytest.raises(ReplayRecordError, match="rank 7"):
        find_order(_records(), 7, [(3, 1, 2)])


def test_anys_make_recorded_waitany_calls_return_other_requests() -> None:
    recs = _records()
    recs[0].anys = {12: 0, 15: 1}
    assert parse_anys("0:12=1,15=0") == (0, {12: 1, 15: 0})
    for bad in ("0:12", "0:12=1,12=0", "x:1=2"):
        with pytest.raises(ValueError, match="completion order"):
            parse_anys(bad)
    plan = plan_for(recs, 0, None, (0, {12: 1, 15: 0}))
    assert plan.anys == {12: 1, 15: 0} and plan.any_changes == {12: 1, 15: 0}
    assert plan_for(recs, 1, None, (0, {12: 1})).any_changes == {}  # another rank's
    hooks = ReplayHooks(plan)
    assert hooks.flipping and not hooks.reordered
    assert hooks.recorded_any(12) == 1
    assert hooks.reordered  # no chain check from here on: the consumes come in another order
    with pytest.raises(ReplayRecordError, match="not a recorded Waitany of rank 0"):
        plan_for(recs, 0, None, (0, {13: 0}))
