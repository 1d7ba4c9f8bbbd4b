"""Point-to-point deadlocks on hand-written traces in the spec format."""

from __future__ import annotations

import json

from mpvis.analysis.deadlock_monitor import DeadlockMonitor, detect_deadlocks, to_dot
from mpvis.analysis.deadlock_report import Deadlock


def trace(text: str) -> tuple[int, list[dict[str, object]]]:
    """Header's nprocs and the events of a JSONL trace, ``comm`` defaulted to 0."""
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return lines[0]["nprocs"], [{"comm": 0, **rec} for rec in lines[1:]]


def detect(text: str) -> list[Deadlock]:
    nprocs, events = trace(text)
    return detect_deadlocks(events, nprocs)


H2 = '{"kind":"header","format":"mpvis-trace","version":1,"nprocs":2}\n'
H3 = '{"kind":"header","format":"mpvis-trace","version":1,"nprocs":3}\n'

RECV_RECV = (
    H2
    + """
{"rank":0,"seq":0,"kind":"recv","src":1,"tag":0,"blocking":true,"site":"cyc.py:4"}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":0,"blocking":true,"site":"cyc.py:7"}
"""
)


def test_receive_receive_cycle_is_a_p2p_deadlock_naming_ranks_and_sites() -> None:
    [d] = detect(RECV_RECV)
    assert d.kind == "p2p"
    assert d.ranks == [0, 1]
    assert d.cycle == [0, 1, 0]
    assert "cyc.py:4" in d.reason and "cyc.py:7" in d.reason
    assert "recv(src=1, tag=0)" in d.reason
    rep = d.to_report()
    assert rep["kind"] == "p2p" and rep["ranks"] == [0, 1] and rep["events"] == [[0, 0], [1, 0]]
    assert {(e["from"], e["to"]) for e in rep["edges"]} == {(0, 1), (1, 0)}  # type: ignore[union-attr]
    json.dumps(rep)


def test_dot_export_draws_the_cycle() -> None:
    [d] = detect(RECV_RECV)
    dot = to_dot(d)
    assert dot.startswith("digraph")
    assert "r0 -> r1" in dot and "r1 -> r0" in dot and "color=red" in dot


def test_three_rank_cycle() -> None:
    [d] = detect(
        H3
        + """
{"rank":0,"seq":0,"kind":"recv","src":2,"tag":1,"blocking":true}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":1,"blocking":true}
{"rank":2,"seq":0,"kind":"recv","src":1,"tag":1,"blocking":true}
"""
    )
    assert d.kind == "p2p" and d.ranks == [0, 1, 2]
    assert d.cycle == [0, 2, 1, 0]


def test_wildcard_receive_with_all_senders_finished() -> None:
    [d] = detect(
        H3
        + """
{"rank":0,"seq":0,"kind":"send","dest":1,"tag":0,"blocking":true,"sync":false}
{"rank":0,"seq":1,"kind":"final"}
{"rank":2,"seq":0,"kind":"final"}
{"rank":1,"seq":0,"kind":"recv","src":-1,"tag":-1,"blocking":true}
{"rank":1,"seq":1,"kind":"consume","recv":0,"src":0,"tag":0,"send":[0,0]}
{"rank":1,"seq":2,"kind":"recv","src":-1,"tag":-1,"blocking":true,"site":"m.py:9"}
"""
    )
    assert d.kind == "p2p" and d.ranks == [0, 1, 2]
    assert d.cycle == []
    assert "recv(src=ANY, tag=ANY) at m.py:9" in d.reason
    assert "0 (finished)" in d.reason and "2 (finished)" in d.reason


def test_waitall_on_a_never_matched_irecv() -> None:
    [d] = detect(
        H3
        + """
{"rank":1,"seq":0,"kind":"final"}
{"rank":2,"seq":0,"kind":"send","dest":0,"tag":5,"blocking":true,"sync":false}
{"rank":2,"seq":1,"kind":"final"}
{"rank":0,"seq":0,"kind":"recv","src":1,"tag":5,"blocking":false,"req":1,"site":"w.py:3"}
{"rank":0,"seq":1,"kind":"recv","src":2,"tag":5,"blocking":false,"req":2,"site":"w.py:4"}
"""
    )
    assert d.kind == "p2p" and d.ranks == [0, 1]
    assert "irecv(src=1, tag=5)" in d.reason and "w.py:3" in d.reason
    assert "w.py:4" not in d.reason  # that request can complete


def test_waiting_record_makes_a_live_waitall_exact() -> None:
    nprocs, events = trace(
        H2
        + """
{"rank":0,"seq":0,"kind":"recv","src":1,"tag":5,"blocking":false,"req":1}
{"rank":0,"seq":1,"kind":"waiting","reqs":[1],"mode":"all"}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":5,"blocking":true}
"""
    )
    m = DeadlockMonitor(nprocs)
    m.feed(events)
    [d] = m.check(final=False)
    assert d.cycle == [0, 1, 0]


def test_ssend_with_no_receiver() -> None:
    [d] = detect(
        H2
        + """
{"rank":0,"seq":0,"kind":"send","dest":1,"tag":3,"blocking":true,"sync":true,"site":"s.py:2"}
{"rank":1,"seq":0,"kind":"send","dest":0,"tag":3,"blocking":true,"sync":true,"site":"s.py:5"}
"""
    )
    assert d.kind == "p2p" and d.cycle == [0, 1, 0]
    assert "ssend(dest=1, tag=3) at s.py:2" in d.reason


def test_standard_sends_are_buffered_and_do_not_deadlock() -> None:
    assert not detect(
        H2
        + """
{"rank":0,"seq":0,"kind":"send","dest":1,"tag":3,"blocking":true,"sync":false}
{"rank":1,"seq":0,"kind":"send","dest":0,"tag":3,"blocking":true,"sync":false}
{"rank":0,"seq":1,"kind":"recv","src":1,"tag":3,"blocking":true}
{"rank":0,"seq":2,"kind":"consume","recv":1,"src":1,"tag":3,"send":[1,0]}
{"rank":0,"seq":3,"kind":"final"}
{"rank":1,"seq":1,"kind":"recv","src":0,"tag":3,"blocking":true}
{"rank":1,"seq":2,"kind":"consume","recv":1,"src":0,"tag":3,"send":[0,0]}
{"rank":1,"seq":3,"kind":"final"}
"""
    )


def test_message_in_flight_means_the_receive_is_not_stuck() -> None:
    assert not detect(
        H2
        + """
{"rank":0,"seq":0,"kind":"send","dest":1,"tag":3,"blocking":true,"sync":false}
{"rank":0,"seq":1,"kind":"final"}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":3,"blocking":true}
"""
    )


def test_ssend_whose_receiver_posted_a_matching_receive_is_not_stuck() -> None:
    assert not detect(
        H2
        + """
{"rank":1,"seq":0,"kind":"recv","src":-1,"tag":-1,"blocking":true}
{"rank":0,"seq":0,"kind":"send","dest":1,"tag":3,"blocking":true,"sync":true}
"""
    )


def test_two_receives_do_not_share_one_message() -> None:
    [d] = detect(
        H2
        + """
{"rank":0,"seq":0,"kind":"send","dest":1,"tag":3,"blocking":true,"sync":false}
{"rank":0,"seq":1,"kind":"final"}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":3,"blocking":false,"req":7}
{"rank":1,"seq":1,"kind":"recv","src":-1,"tag":3,"blocking":true,"site":"two.py:8"}
"""
    )
    assert d.ranks == [0, 1] and "two.py:8" in d.reason


def test_ring_completes_without_report() -> None:
    lines = [H3.strip()]
    for r in range(3):
        lines += [
            json.dumps(
                {
                    "rank": r,
                    "seq": 0,
                    "kind": "send",
                    "dest": (r + 1) % 3,
                    "tag": 0,
                    "blocking": True,
                    "sync": False,
                }
            ),
        ]
    for r in range(3):
        left = (r - 1) % 3
        lines += [
            json.dumps(
                {"rank": r, "seq": 1, "kind": "recv", "src": left, "tag": 0, "blocking": True}
            ),
            json.dumps(
                {
                    "rank": r,
                    "seq": 2,
                    "kind": "consume",
                    "recv": 1,
                    "src": left,
                    "tag": 0,
                    "send": [left, 0],
                }
            ),
            json.dumps({"rank": r, "seq": 3, "kind": "final"}),
        ]
    assert not detect("\n".join(lines))


def test_master_worker_completes_without_report() -> None:
    lines = [H3.strip()]
    seq0 = 0
    for w in (1, 2):
        lines.append(
            json.dumps(
                {
                    "rank": w,
                    "seq": 0,
                    "kind": "send",
                    "dest": 0,
                    "tag": 1,
                    "blocking": True,
                    "sync": False,
                }
            )
        )
        lines.append(json.dumps({"rank": w, "seq": 1, "kind": "final"}))
    for w in (2, 1):
        lines.append(
            json.dumps(
                {"rank": 0, "seq": seq0, "kind": "recv", "src": -1, "tag": -1, "blocking": True}
            )
        )
        lines.append(
            json.dumps(
                {
                    "rank": 0,
                    "seq": seq0 + 1,
                    "kind": "consume",
                    "recv": seq0,
                    "src": w,
                    "tag": 1,
                    "send": [w, 0],
                }
            )
        )
        seq0 += 2
    lines.append(json.dumps({"rank": 0, "seq": seq0, "kind": "final"}))
    assert not detect("\n".join(lines))


def test_rank_still_running_in_live_mode_is_not_a_deadlock() -> None:
    nprocs, events = trace(
        H3
        + """
{"rank":0,"seq":0,"kind":"recv","src":1,"tag":0,"blocking":true}
{"rank":1,"seq":0,"kind":"recv","src":2,"tag":0,"blocking":true}
{"rank":2,"seq":0,"kind":"state","vars":{"phase":"compute"}}
"""
    )
    m = DeadlockMonitor(nprocs)
    m.feed(events)
    assert m.check(final=False) == []


def test_chain_to_a_cycle_is_reported_with_it_and_live_check_is_repeatable() -> None:
    nprocs, events = trace(
        H3
        + """
{"rank":0,"seq":0,"kind":"recv","src":1,"tag":0,"blocking":true}
{"rank":1,"seq":0,"kind":"recv","src":0,"tag":0,"blocking":true}
{"rank":2,"seq":0,"kind":"recv","src":1,"tag":0,"blocking":true}
"""
    )
    m = DeadlockMonitor(nprocs)
    m.feed(events)
    [d] = m.check(final=False)
    assert d.ranks == [0, 1, 2] and d.cycle == [0, 1, 0]
    assert len(m.check(final=False)) == 1
