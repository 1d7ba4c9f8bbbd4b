"""Stream given records through a real collector into a central process (loopback sockets)."""

from __future__ import annotations

import time
from typing import Any

from mpvis.collector.auth import Address
from mpvis.collector.client import RankClient
from mpvis.collector.collector import Collector
from mpvis.protocol import messages as m

Record = dict[str, Any]


def stream_run(
    address: Address, token: str, header: Record, batches: dict[int, list[list[Record]]],
    *, run_id: str = "feed-run", end: Record | None = None, ends: dict[int, str] | None = None,
) -> Collector:
    """Each rank of ``batches`` sends its batches (one connection per rank, in
    order), then says BYE (``final``, or ``killed`` with the detail in ``ends``);
    the run ends with ``end``.  Returns the collector, stopped."""
    col = Collector(address, token, run_id, header=header).start()
    try:
        assert col.wait_welcome(10), col.refused
        sent = 0
        for rank, recs in batches.items():
            with RankClient(col.address, token, rank) as client:
                for batch in recs:
                    client.send_records(batch)
                    sent += len(batch)
                if ends and rank in ends:
                    client.bye(m.KILLED, ends[rank])
                else:
                    client.bye(m.FINAL)
        deadline = time.monotonic() + 20
        while col.received < sent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert col.finish(end if end is not None else {"exit_code": 0}, timeout=20)
    finally:
        col.stop()
    return col


def send(rank: int, seq: int, dest: int, tag: int = 1) -> Record:
    return {"rank": rank, "seq": seq, "kind": "send", "dest": dest, "tag": tag,
            "blocking": True, "sync": False}


def recv(rank: int, seq: int, src: int, tag: int = 1) -> Record:
    return {"rank": rank, "seq": seq, "kind": "recv", "src": src, "tag": tag, "blocking": True}


def consume(rank: int, seq: int, recv_seq: int, send: tuple[int, int], tag: int = 1) -> Record:
    return {"rank": rank, "seq": seq, "kind": "consume", "recv": recv_seq, "src": send[0],
            "tag": tag, "send": list(send)}


def state(rank: int, seq: int) -> Record:
    return {"rank": rank, "seq": seq, "kind": "state", "vars": {"i": seq}}


def final(rank: int, seq: int) -> Record:
    return {"rank": rank, "seq": seq, "kind": "final"}


def run_with_bad_records() -> dict[int, list[list[Record]]]:
    """Three ranks; in the middle of good records, one the central process refuses
    (rank 2, seq 1: an unknown kind; a good seq 1 follows) and one the model
    refuses (rank 1, seq 3: a consume whose ``recv`` is a state record), after
    which rank 1 sends 3 more records."""
    return {
        0: [[send(0, 0, 1), send(0, 1, 1)], [state(0, 2), final(0, 3)]],
        1: [[recv(1, 0, 0), consume(1, 1, 0, (0, 0)), state(1, 2)],
            [consume(1, 3, 2, (0, 1)), recv(1, 4, 0)], [state(1, 5), final(1, 6)]],
        2: [[state(2, 0), {"rank": 2, "seq": 1, "kind": "nonsense"}, state(2, 1)],
            [state(2, 2), final(2, 3)]],
    }
