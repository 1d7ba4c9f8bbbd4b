"""The live feed over real loopback sockets: typed messages in order, one policy for bad records."""

from __future__ import annotations

import queue
from pathlib import Path

import pytest

from mpvis.cli.run import _incomplete
from mpvis.collector.feed import (
    LISTED_BAD_RECORDS,
    REFUSED_BY_CENTRAL,
    BadRecord,
    FeedMessage,
    LiveFeed,
    RankJoined,
    RankLeft,
    RecordsArrived,
    RecordsLost,
    RunEnded,
    RunStarted,
)
from mpvis.collector.headless import HeadlessSession
from mpvis.collector.live_run import LiveRun, RankDied
from mpvis.protocol.records import make_header

from .streaming import final, run_with_bad_records, state, stream_run

pytestmark = pytest.mark.timeout(60)


def collect(feed: LiveFeed) -> queue.SimpleQueue[FeedMessage]:
    q: queue.SimpleQueue[FeedMessage] = queue.SimpleQueue()
    feed.subscribe(q.put)
    return q


def drain_until_end(q: queue.SimpleQueue[FeedMessage]) -> list[FeedMessage]:
    out: list[FeedMessage] = []
    while not (out and isinstance(out[-1], RunEnded)):
        out.append(q.get(timeout=20))
    return out


def test_messages_arrive_typed_and_in_order(tmp_path: Path) -> None:
    feed = LiveFeed(journal_dir=tmp_path).start()
    q = collect(feed)
    try:
        batches = {r: [[state(r, s) for s in range(k, k + 5)] for k in range(0, 20, 5)]
                   + [[final(r, 20)]] for r in range(3)}
        stream_run(feed.central.address, feed.central.token, make_header(3), batches)
        msgs = drain_until_end(q)
    finally:
        feed.stop()
    assert isinstance(msgs[0], RunStarted) and msgs[0].header["nprocs"] == 3
    assert msgs[0].journal.is_file()
    seen: dict[int, list[int]] = {}
    for msg in msgs[1:-1]:
        if isinstance(msg, RankJoined):
            assert msg.rank not in seen  # joined once, before its first record
            seen[msg.rank] = []
        elif isinstance(msg, RecordsArrived):
            for rec in msg.records:
                seen[rec["rank"]].append(rec["seq"])
        elif isinstance(msg, RankLeft):
            assert seen[msg.rank][-1] == 20 and msg.status == "final" and not msg.died
    assert seen == {r: list(range(21)) for r in range(3)}
    end = msgs[-1]
    assert isinstance(end, RunEnded)
    assert end.records == 63 and end.rejected == 0 and end.journal == msgs[0].journal
    assert [(e.rank, e.status) for e in end.ranks] == [(r, "final") for r in range(3)]


def test_a_bad_record_is_reported_where_it_is_and_every_good_record_kept(
    tmp_path: Path,
) -> None:
    session = HeadlessSession(tmp_path / "t.jsonl").start()
    try:
        collector = stream_run(session.central.address, session.central.token, make_header(3),
                               run_with_bad_records())
        assert session.wait_end(20)
    finally:
        session.stop()
    run = session.run
    bad = sorted(run.bad, key=lambda b: (b.rank or 0, b.seq or 0))
    assert [(b.rank, b.seq, b.by) for b in bad] == [
        (1, 3, "the model"), (2, 1, "the central process")]
    assert "is not a recv event" in bad[0].what and "nonsense" in bad[1].what
    assert str(bad[0]).startswith("bad record (rank 1, seq 3) refused by the model: ")
    model = session.analyses.model if session.analyses else None
    assert model is not None
    # every good record is in: rank 1 up to its bad record, the other ranks whole
    assert [model.count(r) for r in range(3)] == [4, 3, 4]
    assert model.status(1) == "dead" and "bad record at seq 3" in model.dead[1]
    text = run.incomplete()
    assert text == (
        "the trace is incomplete: 5 records lost: 1 records refused by the central process "
        "(malformed or out of sequence, see the log above); 1 records refused by the model "
        "(see above); 3 records after its bad record at seq 3 (rank 1)")
    assert _incomplete(session, collector) == text  # so `mpvis run` exits 4 with it
    report, _ = session.report()
    assert "rank 1" in report and "dead" in report


def test_a_flood_of_bad_records_is_listed_twenty_times_and_counted_in_full(
    tmp_path: Path,
) -> None:
    feed = LiveFeed(journal_dir=tmp_path).start()
    q = collect(feed)
    try:
        # rank 0 skips seq 1: each of its 50 later records leaves a gap
        batches = {0: [[state(0, 0)], [state(0, s) for s in range(2, 52)]],
                   1: [[state(1, 0), final(1, 1)]]}
        stream_run(feed.central.address, feed.central.token, make_header(2), batches)
        msgs = drain_until_end(q)
    finally:
        feed.stop()
    bad = [x for x in msgs if isinstance(x, BadRecord)]
    assert len(bad) == LISTED_BAD_RECORDS and all(b.rank == 0 for b in bad)
    assert [b.seq for b in bad] == list(range(2, 2 + LISTED_BAD_RECORDS))
    run = LiveRun()
    for msg in msgs:
        run.take(msg)
    end = msgs[-1]
    assert isinstance(end, RunEnded) and end.rejected == 50
    assert [x for x in msgs if isinstance(x, RecordsLost)] == [
        RecordsLost(50, REFUSED_BY_CENTRAL)]  # said once, in full, before the end
    text = run.incomplete()
    assert text is not None and text.startswith("the trace is incomplete: 50 records lost: ")


def test_a_rank_that_leaves_without_final_dies_unless_the_user_stopped_it(
    tmp_path: Path,
) -> None:
    for interrupted in (False, True):
        journals = tmp_path / str(interrupted)
        journals.mkdir()
        feed = LiveFeed(journal_dir=journals).start()
        q = collect(feed)
        try:
            batches = {0: [[state(0, 0), final(0, 1)]], 1: [[state(1, 0), state(1, 1)]]}
            stream_run(feed.central.address, feed.central.token, make_header(2), batches,
                       ends={1: "Traceback...\nZeroDivisionError: boom"},
                       end={"exit_code": 1, "interrupted": interrupted})
            msgs = drain_until_end(q)
        finally:
            feed.stop()
        run = LiveRun()
        notices = [n for msg in msgs for n in run.take(msg)]
        assert run.analyses is not None
        # a running rank that left without final is dead either way (the end
        # only spares ranks the user stopped that were not marked yet)
        assert notices == [RankDied(1, "killed: ZeroDivisionError: boom")]
        assert run.analyses.model.dead == {1: "killed: ZeroDivisionError: boom"}
        assert run.incomplete() is None
