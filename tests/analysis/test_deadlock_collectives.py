"""Collective deadlocks (Roy et al., Sec. III cases 1-3) on hand-written traces."""

from __future__ import annotations

import json

from mpvis.analysis.deadlock_monitor import DeadlockMonitor, detect_deadlocks


def events(text: str) -> list[dict[str, object]]:
    return [{"comm": 0, **json.loads(line)} for line in text.splitlines() if line.strip()]


def fed(nprocs: int, text: str) -> DeadlockMonitor:
    """A monitor fed the records, not finished: what it proves while records arrive."""
    m = DeadlockMonitor(nprocs)
    m.feed(events(text))
    return m


def test_order_mismatch_is_found_as_soon_as_both_records_arrive() -> None:
    m = fed(
        3,
        """
{"rank":0,"seq":0,"kind":"coll","op":"barrier","site":"a.py:3"}
{"rank":1,"seq":0,"kind":"coll","op":"bcast","root":0,"count":1,"dtype":"int","site":"a.py:5"}
""",
    )
    [d] = m.deadlocks
    assert d.kind == "collective" and d.check == "collective-order"
    assert d.ranks == [0, 1]
    assert "barrier()" in d.reason and "bcast(root=0" in d.reason
    assert "a.py:3" in d.reason and "a.py:5" in d.reason
    assert "1st collective" in d.reason


def test_later_arrivals_join_the_same_mismatch_report() -> None:
    m = fed(
        3,
        """
{"rank":0,"seq":0,"kind":"coll","op":"barrier"}
{"rank":1,"seq":0,"kind":"coll","op":"bcast","root":0}
{"rank":2,"seq":0,"kind":"coll","op":"barrier"}
""",
    )
    [d] = m.deadlocks
    assert d.ranks == [0, 1, 2]
    m.finish()
    assert len(m.deadlocks) == 1  # the blocked ranks are not reported twice


def test_order_mismatch_at_the_second_collective() -> None:
    m = fed(
        2,
        """
{"rank":0,"seq":0,"kind":"coll","op":"barrier"}
{"rank":1,"seq":0,"kind":"coll","op":"barrier"}
{"rank":0,"seq":1,"kind":"coll_exit","op":"barrier"}
{"rank":1,"seq":1,"kind":"coll_exit","op":"barrier"}
{"rank":0,"seq":2,"kind":"coll","op":"reduce","root":0,"redop":"sum"}
{"rank":1,"seq":2,"kind":"coll","op":"allreduce","redop":"sum"}
""",
    )
    [d] = m.deadlocks
    assert d.check == "collective-order" and "2nd collective" in d.reason


def test_root_mismatch() -> None:
    m = fed(
        2,
        """
{"rank":0,"seq":0,"kind":"coll","op":"bcast","root":0,"count":4,"dtype":"int"}
{"rank":1,"seq":0,"kind":"coll","op":"bcast","root":1,"count":4,"dtype":"int"}
""",
    )
    [d] = m.deadlocks
    assert d.check == "collective-args" and "different root" in d.reason


def test_count_and_op_mismatch() -> None:
    m = fed(
        2,
        """
{"rank":0,"seq":0,"kind":"coll","op":"allreduce","count":1,"redop":"sum"}
{"rank":1,"seq":0,"kind":"coll","op":"allreduce","count":2,"redop":"max"}
""",
    )
    [d] = m.deadlocks
    assert "different count/redop" in d.reason


def test_argument_absent_on_one_side_is_not_compared() -> None:
    m = fed(
        2,
        """
{"rank":0,"seq":0,"kind":"coll","op":"bcast","root":0,"count":4}
{"rank":1,"seq":0,"kind":"coll","op":"bcast","root":0}
""",
    )
    assert m.deadlocks == []


def test_rank_finishing_while_others_wait_in_a_barrier() -> None:
    m = fed(
        3,
        """
{"rank":0,"seq":0,"kind":"coll","op":"barrier","site":"b.py:9"}
{"rank":1,"seq":0,"kind":"coll","op":"barrier","site":"b.py:9"}
{"rank":2,"seq":0,"kind":"final"}
""",
    )
    [d] = m.deadlocks
    assert d.check == "collective-finished" and d.ranks == [0, 1, 2]
    assert "rank 2 has finished after only 0" in d.reason and "b.py:9" in d.reason


def test_entering_a_collective_a_finished_rank_never_reached() -> None:
    m = fed(
        2,
        """
{"rank":1,"seq":0,"kind":"final"}
{"rank":0,"seq":0,"kind":"coll","op":"barrier"}
""",
    )
    [d] = m.deadlocks
    assert d.check == "collective-finished" and d.ranks == [0, 1]


def test_correct_collectives_are_not_reported_even_when_the_root_leaves_early() -> None:
    text = """
{"rank":0,"seq":0,"kind":"coll","op":"bcast","root":0,"count":1,"dtype":"int"}
{"rank":0,"seq":1,"kind":"coll_exit","op":"bcast"}
{"rank":0,"seq":2,"kind":"final"}
{"rank":1,"seq":0,"kind":"coll","op":"bcast","root":0,"count":1,"dtype":"int"}
{"rank":1,"seq":1,"kind":"coll_exit","op":"bcast"}
{"rank":1,"seq":2,"kind":"final"}
"""
    assert detect_deadlocks(events(text), 2) == []


def test_subcommunicator_uses_its_group() -> None:
    text = """
{"rank":1,"seq":0,"kind":"final"}
{"rank":0,"seq":0,"kind":"coll","op":"barrier","comm":5,"group":[0,2]}
{"rank":2,"seq":0,"kind":"coll","op":"barrier","comm":5,"group":[0,2]}
{"rank":0,"seq":1,"kind":"coll_exit","op":"barrier","comm":5}
{"rank":2,"seq":1,"kind":"coll_exit","op":"barrier","comm":5}
{"rank":0,"seq":2,"kind":"coll","op":"barrier","comm":5,"group":[0,2]}
"""
    m = fed(3, text)
    assert m.deadlocks == []  # rank 1 is no member of comm 5
    m.feed(events('{"rank":2,"seq":2,"kind":"final"}'))
    [d] = m.deadlocks
    assert d.check == "collective-finished" and d.ranks == [0, 2]
    assert "after only 1 collective(s) on comm 5" in d.reason


def test_collective_that_a_blocked_rank_can_never_reach() -> None:
    m = fed(
        2,
        """
{"rank":0,"seq":0,"kind":"coll","op":"barrier","site":"c.py:1"}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":0,"blocking":true,"site":"c.py:2"}
""",
    )
    assert m.deadlocks == []
    [d] = m.check(final=False)
    assert d.kind == "mixed" and d.cycle == [0, 1, 0]
    assert "barrier() (its 1st collective on comm 0) at c.py:1 for rank 1 to reach it" in d.reason


def test_chain_into_a_collective_mismatch() -> None:
    m = fed(
        3,
        """
{"rank":0,"seq":0,"kind":"coll","op":"barrier"}
{"rank":1,"seq":0,"kind":"coll","op":"bcast","root":0}
{"rank":2,"seq":0,"kind":"recv","src":1,"tag":0,"blocking":true}
""",
    )
    mismatch, chain = m.check(final=True)
    assert mismatch.check == "collective-order"
    assert chain.ranks == [1, 2] and "stuck in a reported deadlock" in chain.reason
