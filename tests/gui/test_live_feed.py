"""The window and ``mpvis run`` headless take a live run from one feed: same model, same report."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpvis.analysis.report import format_report
from mpvis.collector.headless import HeadlessSession
from mpvis.collector.live_run import LiveRun
from mpvis.gui.app import open_live_window
from mpvis.gui.live import LiveSession
from mpvis.protocol.records import make_header
from tests.collector.streaming import run_with_bad_records, stream_run

pytestmark = [pytest.mark.gui, pytest.mark.timeout(90)]


def _summary(run: LiveRun) -> tuple[object, ...]:
    a = run.analyses
    assert a is not None
    m = a.model
    bad = sorted((b.rank, b.seq, b.by, b.what) for b in run.bad)
    counts = [m.count(r) for r in range(m.nprocs)]
    return bad, counts, dict(m.dead), run.incomplete(), format_report(a.report())


def test_a_bad_record_gives_the_same_report_headless_and_in_the_window(
    qtbot, tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    header = make_header(3)
    session = HeadlessSession(tmp_path / "headless.jsonl").start()
    try:
        stream_run(session.central.address, session.central.token, header,
                   run_with_bad_records())
        assert session.wait_end(20)
    finally:
        session.stop()
    headless = _summary(session.run)

    (tmp_path / "window").mkdir()
    win, live = open_live_window(LiveSession(tmp_path / "window", advertise=False))
    qtbot.addWidget(win)
    try:
        stream_run(live.central.address, live.central.token, header, run_with_bad_records())
        qtbot.waitUntil(lambda: win.live_run is not None and win.live_run.ended is not None,
                        timeout=30000)
    finally:
        live.stop()
    assert win.live_run is not None and win.model is not None and win.model.input_ended
    assert _summary(win.live_run) == headless
    bad, counts, dead, incomplete, _ = headless
    assert [(b[0], b[1]) for b in bad] == [(1, 3), (2, 1)] and counts == [4, 3, 4]
    assert list(dead) == [1]
    assert incomplete is not None and incomplete.startswith(
        "the trace is incomplete: 5 records lost: ")
    assert win.statusBar().currentMessage() == incomplete  # the window says it too
