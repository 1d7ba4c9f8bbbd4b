"""Exact race detection (Cypher and Leu) against a brute-force Theorem 2.2 oracle."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mpvis.analysis.exact_offline import all_conflicts, conflicting_sends
from mpvis.analysis.exact_races import ExactRaceDetector
from mpvis.protocol.record_types import Record
from tests.analysis.exact_oracle import oracle_conflicts
from tests.analysis.exec_generator import generate

SEEDS = 2500


def _detect(records: list[Record], nprocs: int, rng: random.Random) -> ExactRaceDetector:
    det = ExactRaceDetector(nprocs)
    i = 0
    while i < len(records):  # batches of random sizes
        k = rng.randint(1, 6)
        det.feed(records[i : i + k])
        i += k
    det.finish()
    return det


def _key(races: Any) -> set[tuple[int, int, tuple[int, int], tuple[int, int]]]:
    return {(r.rank, r.recv, r.s1, r.s2) for r in races}


@pytest.mark.slow
def test_random_executions_agree_with_the_oracle() -> None:
    racy = 0
    for seed in range(SEEDS):
        rng = random.Random(seed)
        records = generate(
            seed,
            shuffle=seed % 4 != 0,
            max_procs=rng.choice([2, 3, 4, 5]),
            max_messages=rng.choice([6, 12, 18]),
        )
        nprocs = records[0]["nprocs"]
        expected = oracle_conflicts(records)
        racy += bool(expected)
        body = records[1:]
        found = _key(_detect(body, nprocs, rng).races)
        assert bool(found) == bool(expected), f"seed {seed}: race found {found}, oracle {expected}"
        assert found <= expected, f"seed {seed}: not conflicts {found - expected}"
        rng.shuffle(body)  # the off-line pass takes any order
        assert _key(all_conflicts(body, nprocs)) == expected, f"seed {seed}"
    assert SEEDS // 10 < racy < SEEDS - SEEDS // 10  # both kinds of execution were drawn


def _send(rank: int, seq: int, dest: int, tag: int = 0, sync: bool = False) -> Record:
    return {
        "rank": rank,
        "seq": seq,
        "kind": "send",
        "dest": dest,
        "tag": tag,
        "blocking": True,
        "sync": sync,
        "comm": 0,
    }


def _recv(rank: int, seq: int, src: int = -1, tag: int = -1) -> Record:
    return {
        "rank": rank,
        "seq": seq,
        "kind": "recv",
        "src": src,
        "tag": tag,
        "blocking": True,
        "comm": 0,
    }


def _consume(rank: int, seq: int, recv: int, send: tuple[int, int], tag: int = 0) -> Record:
    return {
        "rank": rank,
        "seq": seq,
        "kind": "consume",
        "recv": recv,
        "src": send[0],
        "tag": tag,
        "send": list(send),
        "comm": 0,
    }


SITUATION_16 = [
    _send(0, 0, 1),
    {"rank": 0, "seq": 1, "kind": "final"},
    _send(2, 0, 1),
    {"rank": 2, "seq": 1, "kind": "final"},
    _recv(1, 0),
    _consume(1, 1, 0, (0, 0)),
    _recv(1, 2),
    _consume(1, 3, 2, (2, 0)),
    {"rank": 1, "seq": 4, "kind": "final"},
]


def test_spec_example_reports_the_race_in_the_spec_format() -> None:
    det = ExactRaceDetector(3)
    det.feed(SITUATION_16)
    det.finish()
    assert [r.to_report() for r in det.races] == [
        {
            "method": "exact",
            "rank": 1,
            "recvs": [0],
            "messages": [[0, 0], [2, 0]],
            "verdict": "legitimate",
        }
    ]
    assert _key(all_conflicts(SITUATION_16, 3)) == oracle_conflicts(SITUATION_16)
    assert conflicting_sends(SITUATION_16, 3, 1, 0) == [(2, 0)]
    assert conflicting_sends(SITUATION_16, 3, 1, 2) == []


def _relay(sync: bool) -> list[Record]:
    """0 sends to 1 then tells 2; 2 then sends to 1; 1 receives twice from ANY.

    With a synchronous first send, 0 tells 2 only after the match (rule 3 of
    section 2.5), so 2's message cannot overtake it: no race.  With a buffered
    send it can (Cypher and Leu's point that WS orders more than WB).
    """
    return [
        _send(0, 0, 1, sync=sync),
        _send(0, 1, 2, tag=5),
        _recv(2, 0, src=0, tag=5),
        _consume(2, 1, 0, (0, 1), tag=5),
        _send(2, 2, 1),
        _recv(1, 0),
        _consume(1, 1, 0, (0, 0)),
        _recv(1, 2),
        _consume(1, 3, 2, (2, 2)),
    ]


@pytest.mark.parametrize("sync", [True, False])
def test_synchronous_send_orders_its_match_before_the_next_event(sync: bool) -> None:
    records = _relay(sync)
    det = ExactRaceDetector(3)
    det.feed(records)
    det.finish()
    expected = set() if sync else {(1, 0, (0, 0), (2, 2))}
    assert oracle_conflicts(records) == expected
    assert _key(det.races) == expected
    assert _key(all_conflicts(records, 3)) == expected


def test_late_consume_of_a_nonblocking_receive_is_awaited() -> None:
    """1 posts Irecv(ANY) first but waits for it last; 2's send goes to the blocking recv."""
    records = [
        _send(0, 0, 1),
        _send(2, 0, 1),
        {
            "rank": 1,
            "seq": 0,
            "kind": "recv",
            "src": -1,
            "tag": -1,
            "blocking": False,
            "req": 7,
            "comm": 0,
        },
        _recv(1, 1, src=2),
        _consume(1, 2, 1, (2, 0)),
        _send(1, 3, 0, tag=3),
        _consume(1, 4, 0, (0, 0)),
        {"rank": 1, "seq": 5, "kind": "wait", "reqs": [7]},
    ]
    det = ExactRaceDetector(3)
    det.feed(records)
    det.finish()
    expected = oracle_conflicts(records)
    assert expected == {(1, 0, (0, 0), (2, 0))}
    assert _key(det.races) == expected


def test_race_with_an_unmatched_send_is_reported_at_finish() -> None:
    records = [_send(0, 0, 1), _send(2, 0, 1), _recv(1, 0), _consume(1, 1, 0, (0, 0))]
    det = ExactRaceDetector(3)
    det.feed(records)
    assert det.races == []
    det.finish()
    assert _key(det.races) == {(1, 0, (0, 0), (2, 0))} == oracle_conflicts(records)


def test_race_free_relay_and_barrier_order() -> None:
    """Wildcard receives whose senders are ordered by a message or a barrier do not race."""
    barrier = [
        _send(0, 0, 1),
        {"rank": 0, "seq": 1, "kind": "coll", "op": "barrier", "comm": 0},
        {"rank": 0, "seq": 2, "kind": "coll_exit", "op": "barrier", "comm": 0},
        _recv(1, 0),
        _consume(1, 1, 0, (0, 0)),
        {"rank": 1, "seq": 2, "kind": "coll", "op": "barrier", "comm": 0},
        {"rank": 2, "seq": 0, "kind": "coll", "op": "barrier", "comm": 0},
        {"rank": 2, "seq": 1, "kind": "coll_exit", "op": "barrier", "comm": 0},
        _send(2, 2, 1),
        {"rank": 1, "seq": 3, "kind": "coll_exit", "op": "barrier", "comm": 0},
        _recv(1, 4),
        _consume(1, 5, 4, (2, 2)),
    ]
    for records in (_relay(True), barrier):
        det = ExactRaceDetector(3)
        det.feed(records)
        det.finish()
        assert oracle_conflicts(records) == set()
        assert det.races == []
        assert all_conflicts(records, 3) == []


def test_storage_stays_bounded_on_a_long_wildcard_run() -> None:
    """Section 4.4: a long racy run keeps only recent receives and matches."""
    records: list[Record] = []
    seqs = [0, 0, 0]
    for i in range(3000):
        src = 0 if i % 2 == 0 else 2
        records.append(_send(src, seqs[src], 1, tag=i % 3))
        seqs[src] += 1
        r = seqs[1]
        records += [_recv(1, r), _consume(1, r + 1, r, (src, seqs[src] - 1), tag=i % 3)]
        seqs[1] += 2
    det = ExactRaceDetector(3)
    det.feed(records)
    assert det.held() < 20
    det.finish()
    assert det.races
