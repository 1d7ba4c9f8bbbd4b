"""Ranks hung in blocking standard sends (rendezvous): a proven point-to-point deadlock."""

from __future__ import annotations

from typing import Any

from mpvis.analysis.deadlock_monitor import DeadlockMonitor, detect_deadlocks
from mpvis.protocol.record_types import Record as Rec


def send(rank: int, seq: int, dest: int, **kw: Any) -> Rec:
    return {"rank": rank, "seq": seq, "kind": "send", "dest": dest, "tag": 0, "blocking": True,
            "sync": False, "comm": 0, **kw}


def test_send_send_cycle_hung_is_a_deadlock() -> None:
    (d,) = detect_deadlocks([send(0, 0, 1, site="a.c:5"), send(1, 0, 0)], 2)
    assert d.kind == "p2p" and d.ranks == [0, 1] and d.cycle == [0, 1, 0]
    assert "send(dest=1, tag=0) at a.c:5" in d.reason
    assert sorted(d.events) == [(0, 0), (1, 0)]


def test_live_check_proves_it_too() -> None:
    mon = DeadlockMonitor(3)
    mon.feed([send(0, 0, 1, size=1 << 20), send(1, 0, 2, size=1 << 20),
              send(2, 0, 0, size=1 << 20)])
    (d,) = mon.check(final=False)
    assert d.ranks == [0, 1, 2] and "Wait-for cycle: 0 -> 1 -> 2 -> 0" in d.reason


def test_small_or_buffered_sends_returned() -> None:
    assert detect_deadlocks([send(0, 0, 1, size=8), send(1, 0, 0, size=8)], 2) == []
    assert detect_deadlocks([send(0, 0, 1, mode="buffered"), send(1, 0, 0, mode="buffered")],
                            2) == []


def test_send_whose_receive_is_posted_is_not_blocked() -> None:
    recv = {"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 0, "blocking": True, "comm": 0}
    assert detect_deadlocks([send(0, 0, 1), recv], 2) == []


def test_consumed_send_is_not_blocked() -> None:
    recs = [send(0, 0, 1),
            {"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 0, "blocking": True, "comm": 0},
            {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 0, "send": [0, 0],
             "comm": 0},
            {"rank": 1, "seq": 2, "kind": "recv", "src": 0, "tag": 1, "blocking": True, "comm": 0}]
    # rank 0 returned from its send and went on (it is running, not blocked)
    assert detect_deadlocks(recs, 2) == []
