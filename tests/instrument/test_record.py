"""Record mode without MPI: Figure 3a's check against a brute-force oracle, the file format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.instrument.record import RaceDetector, RecordHooks
from mpvis.instrument.record_file import RaceEntry, RecordWriter, ReplayRecordError, read_record

ANY = -1


# -- a random message-passing execution, and the oracle ------------------------------------


def _execution(data: st.DataObject, nprocs: int, steps: int) -> list[tuple]:
    """A global order of events: ("send", p, dest, tag) / ("recv", q, (src, tag) pattern, msg).

    Receives take any in-transit message their pattern accepts, and MPI's
    non-overtaking rule (the earliest matching message of a channel first).
    """
    transit: list[tuple[int, int, int, int]] = []  # (src, dest, tag, msg id)
    events: list[tuple] = []
    msg_id = 0
    for _ in range(steps):
        p = data.draw(st.integers(0, nprocs - 1))
        mine = [m for m in transit if m[1] == p]
        if mine and data.draw(st.booleans()):
            m = data.draw(st.sampled_from(mine))
            src_pat = data.draw(st.sampled_from([ANY, m[0]]))
            tag_pat = data.draw(st.sampled_from([ANY, m[2]]))
            # non-overtaking: the first message of the same channel that the pattern accepts
            first = next(
                x
                for x in transit
                if x[1] == p
                and x[0] == m[0]
                and x[2] == m[2]
                and src_pat in (ANY, x[0])
                and tag_pat in (ANY, x[2])
            )
            transit.remove(first)
            events.append(("recv", p, (src_pat, tag_pat), first))
        else:
            dest = data.draw(st.integers(0, nprocs - 1).filter(lambda d, p=p: d != p))
            tag = data.draw(st.integers(0, 1))
            m = (p, dest, tag, msg_id)
            msg_id += 1
            transit.append(m)
            events.append(("send", p, dest, tag, m))
    return events


def _oracle(events: list[tuple], nprocs: int) -> list[tuple[int, int]]:
    """(rank, recv seq) of every delivery that Figure 3a traces, from explicit happened-before.

    PrevRecv is the latest earlier receive that accepts the message and took a
    message from another sender (same-sender messages never race).
    """
    seq = [0] * nprocs
    node_of_msg: dict[int, tuple[int, int]] = {}
    preds: dict[tuple[int, int], set[tuple[int, int]]] = {}
    history: dict[int, list[tuple]] = {}
    traced = []

    def ancestors(node: tuple[int, int]) -> set[tuple[int, int]]:
        seen, todo = set(), [node]
        while todo:
            n = todo.pop()
            for q in preds.get(n, ()):
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        return seen

    for ev in events:
        p = ev[1]
        if ev[0] == "send":
            node = (p, seq[p])
            preds[node] = {(p, seq[p] - 1)} if seq[p] else set()
            node_of_msg[ev[4][3]] = node
            seq[p] += 1
        else:
            pattern, m = ev[2], ev[3]
            recv = (p, seq[p])
            consume = (p, seq[p] + 1)
            preds[recv] = {(p, seq[p] - 1)} if seq[p] else set()
            send_node = node_of_msg[m[3]]
            preds[consume] = {recv, send_node}
            seq[p] += 2
            matching = [
                h
                for h in history.get(p, [])
                if h[2][1] in (ANY, m[0]) and h[2][2] in (ANY, m[2]) and h[3] != m[0]
            ]
            if matching:
                prev_consume = matching[-1][1]
                if prev_consume not in ancestors(send_node):
                    traced.append((p, recv[1]))
            history.setdefault(p, []).append((recv, consume, (0, *pattern), m[0]))
    return traced


def _detect(events: list[tuple], nprocs: int) -> list[tuple[int, int]]:
    detectors = [RaceDetector(r, nprocs) for r in range(nprocs)]
    seq = [0] * nprocs
    stamps: dict[int, list[int]] = {}
    traced = []
    for ev in events:
        p = ev[1]
        if ev[0] == "send":
            stamps[ev[4][3]] = detectors[p].stamp(seq[p])
            seq[p] += 1
        else:
            pattern, m = ev[2], ev[3]
            entry = detectors[p].deliver(
                0, pattern, seq[p], seq[p] + 1, src=m[0], tag=m[2], sender_vt=stamps[m[3]]
            )
            if entry is not None:
                traced.append((p, entry.recv))
            seq[p] += 2
    return traced


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.data(), st.integers(2, 4), st.integers(1, 30))
def test_detector_traces_exactly_what_figure_3a_traces(
    data: st.DataObject, nprocs: int, steps: int
) -> None:
    events = _execution(data, nprocs, steps)
    assert _detect(events, nprocs) == _oracle(events, nprocs)


def test_figure_1_two_wildcard_receives_trace_the_second_message() -> None:
    # P1 and P3 send to P2, which receives twice from anyone: Msg2 races with Msg1.
    d = RaceDetector(1, 3)
    assert d.deliver(0, (ANY, ANY), 0, 1, src=0, tag=0, sender_vt=[0, -1, -1]) is None
    e = d.deliver(0, (ANY, ANY), 2, 3, src=2, tag=0, sender_vt=[-1, -1, 0])
    assert e == RaceEntry(0, 2, 3, 2, 0, 0, (0, 0, 0))


def test_figure_3c_no_race_when_the_previous_receive_happened_before_the_send() -> None:
    d = RaceDetector(1, 3)
    d.deliver(0, (ANY, ANY), 0, 1, src=0, tag=0, sender_vt=[0, -1, -1])
    d.stamp(2)  # P2 tells P3 it got Msg1 ...
    # ... and P3 sends only after receiving that: its timestamp knows P2's event 2.
    assert d.deliver(0, (ANY, ANY), 3, 4, src=2, tag=0, sender_vt=[0, 2, 1]) is None


def test_receive_that_could_not_accept_the_message_is_not_previous() -> None:
    d = RaceDetector(1, 3)
    d.deliver(0, (0, ANY), 0, 1, src=0, tag=0, sender_vt=[0, -1, -1])
    # The earlier receive named rank 0, so rank 2's message could never have gone there.
    assert d.deliver(0, (ANY, ANY), 2, 3, src=2, tag=0, sender_vt=[-1, -1, 0]) is None
    # Other communicators never compete either.
    assert d.deliver(5, (ANY, ANY), 4, 5, src=0, tag=0, sender_vt=[1, -1, -1]) is None


def test_messages_of_one_sender_never_race_but_the_receive_before_them_does() -> None:
    d = RaceDetector(1, 3)
    d.deliver(0, (ANY, ANY), 0, 1, src=2, tag=0, sender_vt=[-1, -1, 0])
    d.deliver(0, (ANY, ANY), 2, 3, src=0, tag=0, sender_vt=[0, -1, -1])
    # Rank 0's second message: the previous receive took rank 0's first (FIFO, no race),
    # but the one before took rank 2's message and did not happen before this send.
    e = d.deliver(0, (ANY, ANY), 4, 5, src=0, tag=0, sender_vt=[1, -1, -1])
    assert e is not None and e.prev == (0, 2, 0)
    # Once this rank's receive of rank 2's message happened before rank 0's send: no race.
    assert d.deliver(0, (ANY, ANY), 6, 7, src=0, tag=0, sender_vt=[2, 1, -1]) is None


def test_record_hooks_write_races_checks_and_end(tmp_path: Path) -> None:
    seq = [0]
    hooks = RecordHooks(tmp_path, 1, 3, lambda: seq[0], check_every=2)
    for recv, src in ((0, 0), (2, 2), (4, 0)):
        hooks.force_source(0, recv, ANY, ANY)
        seq[0] = recv + 2
        vt = [-1, -1, -1]
        vt[src] = recv
        hooks.incoming(0, recv, src, 0, None, vt)
    hooks.outgoing(0, 0, 0, 6)
    hooks.close()
    lines = [json.loads(x) for x in (tmp_path / "rank-1.jsonl").read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["record-header", "race", "check", "race", "end"]
    assert lines[-1] == {"kind": "end", "sends": 1, "consumes": 3, "digest": hooks.digest}
    assert hooks.recorded == 2


def test_record_all_writes_every_delivery(tmp_path: Path) -> None:
    hooks = RecordHooks(tmp_path, 0, 2, lambda: 2, record_all=True)
    hooks.force_source(0, 0, 1, 0)
    hooks.incoming(0, 0, 1, 0, 0, [-1, 0])
    hooks.close()
    lines = (tmp_path / "rank-0.jsonl").read_text().splitlines()
    assert json.loads(lines[1])["prev"] is None


def test_read_record_round_trip_and_errors(tmp_path: Path) -> None:
    for r in range(2):
        w = RecordWriter(tmp_path, r, 2, "races", 256)
        if r == 1:
            w.race(RaceEntry(0, 4, 5, 0, 3, 7, (2, 0, 1)))
            w.any(9, 1)
        w.close(sends=3, consumes=2, digest=42)
    recs = read_record(tmp_path)
    assert recs[1].races == [RaceEntry(0, 4, 5, 0, 3, 7, (2, 0, 1))]
    assert recs[1].anys == {9: 1} and recs[0].complete and recs[0].sends == 3
    (tmp_path / "rank-1.jsonl").write_text('{"kind": "record-header"}\n')
    with pytest.raises(ReplayRecordError, match=r"rank-1\.jsonl:1"):
        read_record(tmp_path)
    (tmp_path / "rank-1.jsonl").unlink()
    with pytest.raises(ReplayRecordError, match="missing"):
        read_record(tmp_path)
