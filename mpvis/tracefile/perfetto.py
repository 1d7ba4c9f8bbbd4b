"""A trace as Chrome trace-event JSON, for ui.perfetto.dev and chrome://tracing.

:func:`chrome_trace` turns a finished model and its report
(:meth:`mpvis.analysis.pipeline.Analyses.report`) into the JSON object of
the Trace Event Format:

* one process (``pid`` 1, named after the program) and one thread track per
  rank (``tid`` = rank, named ``rank R`` and sorted by rank);
* one complete slice (``ph: X``) per record, named after its kind (``send ->
  2 tag 7``); a blocking receive, a collective and a lock request span until
  their consume, exit or acquisition, which nest inside them;
* one flow arrow per message: ``ph: s`` on the send's slice and ``ph: f`` on
  the consume's, both with ``bp: e`` (bound to the enclosing slice), sharing
  the message's ``id``;
* races and deadlocks as marked instant events (``ph: i``, category ``race``
  or ``deadlock``, colour ``bad`` or ``terrible``): a race on its rank at its
  receives, a deadlock on each rank involved at the event it stopped at, and
  once for the whole process.

Times are microseconds: the records' ``t`` from the earliest one when every
record has ``t``, else ten microseconds per Lamport tick (the model's logical
clock, so every arrow points forward).  Within a rank, events closer than one
microsecond are spread one microsecond apart so that slices never overlap.
"""

from __future__ import annotations

from typing import Any

from mpvis.analysis.report import SHOWN_VERDICTS, Report
from mpvis.model.manager import ModelManager

__all__ = ["chrome_trace"]

from mpvis.protocol import records as R
from mpvis.protocol.record_types import EventRecord, Record

_PID = 1
_TICK_US = 10.0
_MIN_US = 1.0
_SPANS = {"recv": "consume", "coll": "coll_exit", "lock": "locked"}


def _label(rec: EventRecord) -> str:
    if rec["kind"] == R.SEND:
        return f"send -> {rec['dest']} tag {rec['tag']}"
    if rec["kind"] == R.RECV:
        src = "ANY" if rec["src"] == -1 else rec["src"]
        tag = "ANY" if rec["tag"] == -1 else rec["tag"]
        return f"recv({src}, {tag})"
    if rec["kind"] == R.CONSUME:
        return f"consume <- {rec['src']} tag {rec['tag']}"
    if rec["kind"] == R.COLL or rec["kind"] == R.COLL_EXIT:
        return f"{rec['kind']} {rec['op']}"
    if rec["kind"] == R.LOCK or rec["kind"] == R.LOCKED or rec["kind"] == R.UNLOCK:
        return f"{rec['kind']} {rec['lock']}"
    return str(rec["kind"])


def _times(m: ModelManager, recs: list[list[EventRecord]]) -> list[list[float]]:
    """Microseconds per event, per rank (see the module docstring)."""
    with_t = all("t" in r for rank in recs for r in rank)
    t0 = min((r["t"] for rank in recs for r in rank), default=0.0) if with_t else 0.0
    out = []
    for rank, rank_recs in enumerate(recs):
        ts: list[float] = []
        for seq, rec in enumerate(rank_recs):
            if with_t:
                t = (float(rec["t"]) - t0) * 1e6
            else:
                lam = m.event(rank, seq).lamport
                t = float(-1 if lam is None else lam) * _TICK_US
            ts.append(max(t, ts[-1] + _MIN_US) if ts else t)
        out.append(ts)
    return out


def chrome_trace(m: ModelManager, report: Report, header: Record) -> dict[str, Any]:
    """The Trace Event Format object (``{"traceEvents": [...], ...}``) of a finished model."""
    recs = [[m.record(r, s) for s in range(m.count(r))] for r in range(m.nprocs)]
    times = _times(m, recs)
    program = str(header.get("program") or "mpvis trace")
    ev: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "name": "process_name", "args": {"name": program}}]
    for r in range(m.nprocs):
        ev.append({"ph": "M", "pid": _PID, "tid": r, "name": "thread_name",
                   "args": {"name": f"rank {r}"}})
        ev.append({"ph": "M", "pid": _PID, "tid": r, "name": "thread_sort_index",
                   "args": {"sort_index": r}})
    for r, rank_recs in enumerate(recs):
        ev.extend(_slices(r, rank_recs, times[r]))
    ev.extend(_flows(m, recs, times))
    ev.extend(_races(report, times))
    ev.extend(_deadlocks(report, times))
    return {"traceEvents": ev, "displayTimeUnit": "ms",
            "otherData": {"source": "mpvis", "program": program, "nprocs": m.nprocs}}


def _slices(rank: int, recs: list[EventRecord], ts: list[float]) -> list[dict[str, Any]]:
    out = []
    n = len(recs)
    for seq, rec in enumerate(recs):
        end = ts[seq + 1] if seq + 1 < n else ts[seq] + _MIN_US
        dur = min(_MIN_US, end - ts[seq])
        closer = _SPANS.get(rec["kind"])
        if closer is not None and seq + 1 < n and recs[seq + 1]["kind"] == closer:
            after = ts[seq + 2] if seq + 2 < n else ts[seq + 1] + _MIN_US
            dur = ts[seq + 1] - ts[seq] + min(_MIN_US, after - ts[seq + 1])
        args = {k: v for k, v in rec.items() if k not in ("rank", "kind")}
        out.append({"ph": "X", "pid": _PID, "tid": rank, "ts": ts[seq], "dur": dur,
                    "name": _label(rec), "cat": rec["kind"], "args": args})
    return out


def _flows(m: ModelManager, recs: list[list[EventRecord]], times: list[list[float]]
           ) -> list[dict[str, Any]]:
    out = []
    for r, rank_recs in enumerate(recs):
        for seq, rec in enumerate(rank_recs):
            if rec["kind"] != R.CONSUME:
                continue
            send = m.partner(r, seq)
            if send is None:
                continue
            fid = m.gidx(*send)
            common = {"pid": _PID, "name": "message", "cat": "message", "id": fid, "bp": "e"}
            out.append({**common, "ph": "s", "tid": send[0], "ts": times[send[0]][send[1]]})
            out.append({**common, "ph": "f", "tid": r, "ts": times[r][seq]})
    return out


def _races(report: Report, times: list[list[float]]) -> list[dict[str, Any]]:
    out = []
    for e in report["races"]:
        if e["verdict"] not in SHOWN_VERDICTS:
            continue
        rank, recvs = e["rank"], e["recvs"]
        what = (f"situation {e['situation']}" if e["method"] == "classifier"
                else e["method"])
        out.append({"ph": "i", "s": "t", "pid": _PID, "tid": rank,
                    "ts": times[rank][recvs[-1]], "cat": "race", "cname": "bad",
                    "name": f"race: recv {', '.join(map(str, recvs))} ({what}, {e['verdict']})",
                    "args": {k: v for k, v in e.items() if k != "rank"}})
    return out


def _deadlocks(report: Report, times: list[list[float]]) -> list[dict[str, Any]]:
    out = []
    stops = {r["rank"]: r.get("at") for r in report.get("ranks", [])}
    for d in report["deadlocks"]:
        name = f"deadlock ({d['kind']}): ranks {', '.join(map(str, d['ranks']))}"
        last = 0.0
        for rank in d["ranks"]:
            at = stops.get(rank)
            ts = times[rank][at] if at is not None else (times[rank] or [0.0])[-1]
            last = max(last, ts)
            out.append({"ph": "i", "s": "t", "pid": _PID, "tid": rank, "ts": ts,
                        "cat": "deadlock", "cname": "terrible", "name": name,
                        "args": {"reason": d["reason"]}})
        out.append({"ph": "i", "s": "p", "pid": _PID, "tid": d["ranks"][0], "ts": last,
                    "cat": "deadlock", "cname": "terrible", "name": name,
                    "args": {"reason": d["reason"], "ranks": d["ranks"]}})
    return out
