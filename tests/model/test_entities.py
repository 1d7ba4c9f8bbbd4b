"""The functional model's classes (issue 18): Event, Consume, Message, Process
are thin views reached from the model, and agree with the trace records.

The oracle is the trace file itself: every view's fields are checked against
the record it came from, on every sample trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpvis.model.entities import Consume, Event, Message, Process
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.tracefile.reader import load_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
FILES = sorted(SAMPLES.glob("*.jsonl"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_views_agree_with_the_records(path: Path) -> None:
    recs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    m = load_trace(path)
    by_key = {(r["rank"], r["seq"]): r for r in recs}
    assert len(m.events) == len(recs)
    for e in m.events:
        rec = by_key[e.key]
        assert e == m.event(*e.key) == m.event_at(e.index)
        assert isinstance(e, Consume) == (rec["kind"] == "consume")
        assert (e.kind, e.site, e.comm) == (rec["kind"], rec.get("site"), rec.get("comm", 0))
        p2p = e.kind in ("send", "recv")
        assert e.blocking == (p2p and bool(rec.get("blocking")))
        assert e.sync == (e.kind == "send" and bool(rec.get("sync")))
        assert e.request == (rec.get("req") if p2p else None)
        assert e.size == (rec.get("size") if e.kind == "send" else None)
        if e.kind in ("send", "recv", "consume"):
            assert e.tag == rec["tag"]
            assert e.peer == rec["dest" if e.kind == "send" else "src"]
        else:
            assert e.peer is None and e.tag is None
        assert e.process == m.process(e.rank)
        if e.kind == "recv":
            c = e.consume
            assert c is None or (c.recv == e and c.rank == e.rank)
    sends = {k for k, r in by_key.items() if r["kind"] == "send"}
    assert {msg.send.key for msg in m.messages} == sends
    for msg in m.messages:
        assert m.message(*msg.send.key) == msg == msg.send.message
        c = msg.consume
        if c is not None:
            assert c.message == msg and c.send == msg.send
            assert m.message(*c.key) == msg
            assert by_key[c.key].get("send", list(msg.send.key)) == list(msg.send.key)
    for p in m.processes:
        assert [e.seq for e in p] == list(range(p.event_count))
        assert list(p.events) == [m.event(p.rank, s) for s in range(p.event_count)]


def test_views_are_slotted_and_equal_by_model_and_index() -> None:
    m = load_trace(SAMPLES / "ring.jsonl")
    e = m.event(0, 0)
    for view in (e, m.process(0), m.messages[0]):
        assert not hasattr(view, "__dict__")
    assert e == Event(m, e.index) and hash(e) == hash(Event(m, e.index))
    other = load_trace(SAMPLES / "ring.jsonl")
    assert e != other.event(0, 0)
    assert m.process(1) == Process(m, 1) != Process(other, 1)
    assert m.messages[0] == Message(m, m.messages[0].index)


def test_bad_references_are_clear_errors() -> None:
    m = load_trace(SAMPLES / "ring.jsonl")
    n = m.count(0)
    with pytest.raises(KeyError, match=f"no event 0:{n}"):
        m.event(0, n)
    with pytest.raises(KeyError):
        m.event(m.nprocs, 0)
    with pytest.raises(KeyError):
        m.process(-1)
    with pytest.raises(IndexError):
        m.event_at(m.event_count)
    with pytest.raises(IndexError):
        m.process(0).event(n)
    not_p2p = next(e for e in m.events if e.kind not in ("send", "consume"))
    with pytest.raises(ValueError, match="not a send or a consume"):
        m.message(*not_p2p.key)


def test_a_view_shows_the_model_as_it_grows() -> None:
    """A consume arriving before its send: its message is unknown, then known."""
    m = ModelManager(make_header(2))
    m.add_batch([{"rank": 1, "seq": 0, "kind": "recv", "src": 0, "tag": 5, "blocking": True},
                 {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 5,
                  "send": [0, 0]}])
    c = m.event(1, 1)
    assert isinstance(c, Consume)
    assert c.send is None and c.message is None and m.message(1, 1) is None
    assert m.event(1, 0).consume == c
    m.add_batch([{"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 5, "blocking": True,
                  "sync": False}])
    msg = m.message(1, 1)
    assert msg is not None and msg.send == m.event(0, 0) and msg.consume == c
    assert (msg.src, msg.dest, msg.tag, msg.comm) == (0, 1, 5, 0)
    assert c.send == m.event(0, 0) and c.lamport is not None and c.lamport > 0


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_model_queries_equal_a_filter_over_the_records(path: Path) -> None:
    """``find``, ``unconsumed_messages`` and ``in_lamport_order`` (vectorised in
    the model) against brute-force passes over the records and the views."""
    recs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    m = load_trace(path)

    def peer(r: dict[str, object]) -> object:
        return r.get("dest" if r["kind"] == "send" else "src")

    for kind in ("send", "recv", "consume", "final", "coll"):
        expected = {(r["rank"], r["seq"]) for r in recs if r["kind"] == kind}
        found = m.find(kind)
        assert {e.key for e in found} == expected
        assert [e.index for e in found] == sorted(e.index for e in found)  # arrival order
    any_any = {(r["rank"], r["seq"]) for r in recs
               if r["kind"] == "recv" and peer(r) == -1 and r["tag"] == -1}
    assert {e.key for e in m.find("recv", peer=-1, tag=-1)} == any_any
    for tag in {r["tag"] for r in recs if r["kind"] == "send"}:
        sent = {(r["rank"], r["seq"]) for r in recs if r["kind"] == "send" and r["tag"] == tag}
        assert {e.key for e in m.find("send", tag=tag)} == sent
    assert list(m.unconsumed_messages()) == [msg for msg in m.messages if msg.consume is None]
    order = list(m.in_lamport_order())
    assert sorted(e.index for e in order) == list(range(m.event_count))
    clocks = [(e.lamport, e.rank) for e in order]
    assert clocks == sorted(clocks)
    position = {e.index: i for i, e in enumerate(order)}
    for msg in m.messages:  # a causal order: a message's send before its consume
        c = msg.consume
        assert c is None or position[msg.send.index] < position[c.index]
    for p in m.processes:  # and each rank's events in seq order
        assert [e.seq for e in order if e.rank == p.rank] == list(range(p.event_count))


def test_an_unknown_kind_is_a_clear_error() -> None:
    m = load_trace(SAMPLES / "ring.jsonl")
    with pytest.raises(KeyError, match="no event kind 'sned'"):
        m.find("sned")
