"""Lock deadlocks (Roy et al., Algorithm A2) and mixed cycles on hand-written traces."""

from __future__ import annotations

import json

from mpvis.analysis.deadlock_monitor import DeadlockMonitor, detect_deadlocks, to_dot


def events(text: str) -> list[dict[str, object]]:
    return [{"comm": 0, **json.loads(line)} for line in text.splitlines() if line.strip()]


def take(rank: int, seq: int, lock: str, site: str = "") -> str:
    extra = f',"site":"{site}"' if site else ""
    return (
        f'{{"rank":{rank},"seq":{seq},"kind":"lock","lock":"{lock}"{extra}}}\n'
        f'{{"rank":{rank},"seq":{seq + 1},"kind":"locked","lock":"{lock}"}}\n'
    )


def test_hold_and_wait_cycle() -> None:
    text = (
        take(0, 0, "A")
        + take(1, 0, "B")
        + '{"rank":0,"seq":2,"kind":"lock","lock":"B","site":"l.py:4"}\n'
        + '{"rank":1,"seq":2,"kind":"lock","lock":"A","site":"l.py:9"}\n'
    )
    [d] = detect_deadlocks(events(text), 2)
    assert d.kind == "lock" and d.ranks == [0, 1] and d.cycle == [0, 1, 0]
    assert "waits for lock 'B' at l.py:4, held by rank 1" in d.reason
    dot = to_dot(d)
    assert 'label="lock A"' in dot and "style=dashed" in dot and "-> r0 [label=held" in dot


def test_chain_ending_at_a_rank_that_finished_holding_the_lock() -> None:
    text = (
        take(2, 0, "A")
        + '{"rank":2,"seq":2,"kind":"final"}\n'
        + take(1, 0, "B")
        + '{"rank":1,"seq":2,"kind":"lock","lock":"A"}\n'
        + '{"rank":0,"seq":0,"kind":"lock","lock":"B","site":"x.py:1"}\n'
    )
    [d] = detect_deadlocks(events(text), 3)
    assert d.kind == "lock" and d.ranks == [0, 1, 2] and d.cycle == []
    assert "rank 2 has finished" in d.reason


def test_chain_ending_at_a_rank_blocked_in_a_collective() -> None:
    text = (
        take(1, 0, "A")
        + '{"rank":1,"seq":2,"kind":"coll","op":"barrier","site":"y.py:7"}\n'
        + '{"rank":0,"seq":0,"kind":"lock","lock":"A","site":"y.py:3"}\n'
    )
    m = DeadlockMonitor(2)
    m.feed(events(text))
    [d] = m.check(final=False)
    assert d.kind == "lock" and d.cycle == [0, 1, 0]
    assert "barrier()" in d.reason and "y.py:3" in d.reason


def test_double_lock_is_found_on_the_request() -> None:
    m = DeadlockMonitor(1)
    m.feed(events(take(0, 0, "A", "d.py:1") + '{"rank":0,"seq":2,"kind":"lock","lock":"A"}'))
    [d] = m.deadlocks
    assert d.kind == "lock" and d.check == "lock-double" and d.ranks == [0]
    m.finish()
    assert len(m.deadlocks) == 1


def test_unlock_not_held() -> None:
    m = DeadlockMonitor(2)
    m.feed(events('{"rank":1,"seq":0,"kind":"unlock","lock":"A","site":"u.py:2"}'))
    [d] = m.deadlocks
    assert d.check == "unlock-not-held" and d.ranks == [1] and "u.py:2" in d.reason


def test_correct_locking_with_contention_is_not_reported() -> None:
    text = (
        take(0, 0, "A")
        + '{"rank":1,"seq":0,"kind":"lock","lock":"A"}\n'
        + '{"rank":0,"seq":2,"kind":"unlock","lock":"A"}\n'
        + '{"rank":1,"seq":1,"kind":"locked","lock":"A"}\n'
        + '{"rank":1,"seq":2,"kind":"unlock","lock":"A"}\n'
        + '{"rank":0,"seq":3,"kind":"final"}\n{"rank":1,"seq":3,"kind":"final"}\n'
    )
    assert detect_deadlocks(events(text), 2) == []


def test_lock_waiter_on_a_running_holder_is_not_reported_live() -> None:
    m = DeadlockMonitor(2)
    m.feed(events(take(0, 0, "A") + '{"rank":1,"seq":0,"kind":"lock","lock":"A"}'))
    assert m.check(final=False) == []


def test_cycle_through_a_receive_and_a_lock_is_mixed() -> None:
    text = (
        take(0, 0, "A")
        + '{"rank":0,"seq":2,"kind":"recv","src":1,"tag":0,"blocking":true}\n'
        + '{"rank":1,"seq":0,"kind":"lock","lock":"A"}\n'
    )
    [d] = detect_deadlocks(events(text), 2)
    assert d.kind == "mixed" and d.cycle == [0, 1, 0]
