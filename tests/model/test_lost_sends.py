"""A trace of a crashed run always opens (issue 15): a consume whose send is
missing because its rank was killed before shipping it is kept as a message
from a *lost send*; the dead rank is marked with what it lost; only a trace
broken beyond that is refused.

The oracle is exhaustive: every sample trace, every rank killed at every point
(its events from ``k`` on removed, ``final`` included), must load, with exactly
the consumed sends at or after ``k`` as lost sends, and the analyses must run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mpvis.analysis.cones import cone_of
from mpvis.analysis.pipeline import Analyses
from mpvis.tracefile.reader import TraceFileError, load_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
FILES = sorted(SAMPLES.rglob("*.jsonl"))


def _read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = path.read_text().splitlines()
    return json.loads(lines[0]), [json.loads(ln) for ln in lines[1:]]


def _write(path: Path, head: dict[str, Any], recs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in [head, *recs]))
    return path


def _killed(recs: list[dict[str, Any]], rank: int, k: int) -> list[dict[str, Any]]:
    """The records of a run whose ``rank`` died after recording ``k`` events."""
    return [x for x in recs if not (x["rank"] == rank and x["seq"] >= k)]


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SAMPLES)) for p in FILES])
def test_every_rank_killed_at_every_point_opens(tmp_path: Path, path: Path) -> None:
    head, recs = _read(path)
    for rank in range(head["nprocs"]):
        for k in range(sum(1 for x in recs if x["rank"] == rank)):
            cut = _killed(recs, rank, k)
            lost = {(rank, x["send"][1]) for x in cut if x["kind"] == "consume"
                    and x.get("send") and x["send"][0] == rank and x["send"][1] >= k}
            a = Analyses.for_header(head)
            load_trace(_write(tmp_path / "cut.jsonl", head, cut), model=a.model)
            m = a.model
            assert set(m.lost_sends) == lost, (rank, k)
            if lost:
                assert m.status(rank) == "dead" and "lost sends" in m.dead[rank]
            a.report()
            for (q, _), g in m.lost_sends.items():
                # the lost send came after every recorded event of its rank
                r, s = int(m.c_rank.data[g]), int(m.c_seq.data[g])
                assert cone_of(m, r, s).frontier[q] == (k - 1 if k else None)


def _without_send(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as a C recorder writes them: consumes carry no ``send``."""
    return [{k: v for k, v in x.items() if k != "send"} for x in recs]


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SAMPLES)) for p in FILES])
def test_every_rank_killed_at_every_point_opens_without_send_fields(tmp_path: Path,
                                                                    path: Path) -> None:
    """The same oracle on C-style traces: a consume whose sender died before the
    send is matched by channel or, if its channel has no send left, kept as a
    message from a lost send of unknown seq; the consumes are those of the sends
    at or after ``k`` in the full trace (which names them)."""
    head, recs = _read(path)
    for rank in range(head["nprocs"]):
        for k in range(sum(1 for x in recs if x["rank"] == rank)):
            full = _killed(recs, rank, k)
            lost = sorted((x["rank"], x["seq"]) for x in full if x["kind"] == "consume"
                          and x.get("send") and x["send"][0] == rank and x["send"][1] >= k)
            a = Analyses.for_header(head)
            load_trace(_write(tmp_path / "cut.jsonl", head, _without_send(full)),
                       model=a.model)
            m = a.model
            got = sorted(m.store.key(g) for g in m.lost_unnumbered)
            assert got == lost and set(m.lost_unnumbered.values()) <= {rank}, (rank, k)
            assert m.lost_sends == {}
            if lost:
                assert m.status(rank) == "dead" and "seq unknown" in m.dead[rank]
            a.report()
            for g in m.lost_unnumbered:
                r, s = m.store.key(g)
                assert cone_of(m, r, s).frontier[rank] == (k - 1 if k else None)


def test_unmatched_consume_from_a_finished_rank_is_still_refused(tmp_path: Path) -> None:
    """A consume without ``send`` whose sender ended with ``final`` and sent no
    such message: the trace is broken, not a crash."""
    head, recs = _ring()
    last = max(x["seq"] for x in recs if x["kind"] == "send" and x["rank"] == 1)
    broken = _without_send([dict(x, tag=99) if (x["rank"], x["seq"]) == (1, last) else x
                            for x in recs])
    with pytest.raises(TraceFileError, match="has no send to match"):
        load_trace(_write(tmp_path / "broken.jsonl", head, broken))


def _ring() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return _read(SAMPLES / "ring.jsonl")


def test_crashed_ring_reports_the_dead_rank_and_what_it_lost(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    from mpvis.cli.main import main

    head, recs = _ring()
    path = _write(tmp_path / "crashed.jsonl", head, _killed(recs, 1, 8))
    assert main(["check", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    dead = [r for r in rep["ranks"] if r["status"] == "dead"]
    assert [r["rank"] for r in dead] == [1] and "lost sends, seq 8" in dead[0]["detail"]
    assert rep["deadlocks"] == []


def test_crashed_c_style_ring_opens_and_names_the_lost_send(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15, item 2 for C traces: without ``send`` fields the crashed run
    still opens, and the report says the dead rank lost a send of unknown seq."""
    from mpvis.cli.main import main

    head, recs = _ring()
    path = _write(tmp_path / "crashed.jsonl", head, _without_send(_killed(recs, 1, 8)))
    assert main(["check", str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    dead = [r for r in rep["ranks"] if r["status"] == "dead"]
    assert [r["rank"] for r in dead] == [1]
    assert "1 matched by channel, seq unknown" in dead[0]["detail"]


def test_consume_of_a_send_after_final_is_still_refused(tmp_path: Path) -> None:
    head, recs = _ring()
    broken = [dict(x, send=[1, 20]) if x["kind"] == "consume" and x.get("send") == [1, 8]
              else x for x in recs]
    with pytest.raises(TraceFileError, match=r"not in the trace \(rank 1 ended with 'final'"):
        load_trace(_write(tmp_path / "broken.jsonl", head, broken))


def test_consume_naming_a_recorded_non_send_is_still_refused(tmp_path: Path) -> None:
    head, recs = _ring()
    broken = [dict(x, send=[1, 7]) if x["kind"] == "consume" and x.get("send") == [1, 8]
              else x for x in recs]
    with pytest.raises(TraceFileError, match="not a send"):
        load_trace(_write(tmp_path / "broken.jsonl", head, broken))


def test_lost_send_is_drawn_into_its_consume(tmp_path: Path) -> None:
    """The diagram shows the message of a lost send: a line from the dead rank's
    row, after its last recorded event, to the consume."""
    from mpvis.scene.layout import Layout
    from mpvis.scene.messages import lost_send_segments

    head, recs = _ring()
    m = load_trace(_write(tmp_path / "crashed.jsonl", head, _killed(recs, 1, 8)), finish=False)
    lay = Layout(m)
    m.finish()
    lay.update()
    for logical in (False, True):
        seg = lost_send_segments(lay, logical)
        g = m.lost_sends[(1, 8)]
        x, y = lay.x(logical), lay.y
        last = m.by_rank[1][-1]
        assert seg.shape == (1, 4)
        assert seg[0, 1] == lay.rows[1] and seg[0, 0] > x[last]
        assert (seg[0, 2], seg[0, 3]) == (x[g], y[g])


@pytest.mark.parametrize("strip", [False, True], ids=["send-field", "c-style"])
def test_details_of_a_consume_name_its_lost_send(tmp_path: Path, strip: bool) -> None:
    """The details panel says where the consumed message came from."""
    from mpvis.scene.describe import details

    head, recs = _ring()
    cut = _killed(recs, 1, 8)
    m = load_trace(_write(tmp_path / "c.jsonl", head, _without_send(cut) if strip else cut))
    [g] = [*m.lost_sends.values(), *m.lost_unnumbered]
    rows = dict(details(m, m.event(*m.store.key(g))))
    want = "matched by channel, seq unknown" if strip else "seq 8"
    assert rows["message partner"] == (f"a lost send of rank 1 ({want}): "
                                       "the rank died before recording it")
