"""Request lifecycle: requests still allocated when their rank called MPI_Finalize.

A nonblocking request must be completed (wait, successful test) or freed
before ``MPI_Finalize``; a persistent request must be freed, and one never
started is a sign of a forgotten ``MPI_Start``.  Two sources, per rank that
finished normally (a crashed rank's requests are the crash's consequence):

* the ``requests`` list of the rank's ``final`` record, when the trace
  library wrote one (each ``{"req", "call", "site", "state", "started"}``,
  ``state`` ``active``: posted or started and never completed nor freed;
  ``inactive``: a persistent request never freed): taken as it is;
* otherwise the trace itself: a nonblocking send or receive whose ``req`` no
  later ``wait`` of the rank named is still active at ``final``.  (A request
  freed with ``MPI_Request_free`` leaves no record; the trace libraries that
  allow it write ``requests``.)

Each leaked request is one ``request_leak`` entry of the report's ``errors``
(:func:`request_leaks`).
"""

from __future__ import annotations

from typing import Any

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.deadlock_report import describe_site
from mpvis.model.event_arrays import rank_arrays
from mpvis.model.manager import ModelManager
from mpvis.model.record_batch import rebuild_records
from mpvis.protocol import records as R

__all__ = ["request_leaks"]

_SEND, _RECV, _WAIT = R.KIND_CODE[R.SEND], R.KIND_CODE[R.RECV], R.KIND_CODE[R.WAIT]


def _posting(m: ModelManager, rank: int, req: int) -> int | None:
    """The seq of the rank's last send or receive that opened request ``req``."""
    for seq in range(m.count(rank) - 1, -1, -1):
        rec = m.record(rank, seq)
        if rec["kind"] in ("send", "recv") and rec.get("req") == req:
            return seq
    return None


def _open_requests(m: ModelManager, rank: int) -> list[dict[str, Any]]:
    """Requests the rank's records leave open, as ``final.requests`` entries."""
    live: dict[int, dict[str, Any]] = {}
    # Only nonblocking sends and receives and waits matter: the rank's events,
    # possibly millions, are filtered as arrays before any record is rebuilt.
    events = rank_arrays(m.store, rank)
    codes = events.kind
    p2p = (codes == _SEND) | (codes == _RECV)
    keep = (p2p & ~events.blocking) | (codes == _WAIT)
    for rec in rebuild_records(m, events.indices[keep]):
        seq = rec["seq"]
        kind = rec["kind"]
        if kind in ("send", "recv") and not rec["blocking"]:
            live[rec["req"]] = {"req": rec["req"], "call": describe_p2p(rec),
                                "site": rec.get("site"), "state": "active", "started": True,
                                "seq": seq}
        elif kind == "wait":
            for q in rec["reqs"]:
                live.pop(q, None)
    return list(live.values())


def _reason(rank: int, entry: dict[str, Any]) -> str:
    call = entry.get("call") or "a request"
    where = describe_site(entry.get("site"))
    if entry.get("state") == "inactive":
        what = ("was never started nor freed" if not entry.get("started", True)
                else "was never freed")
        return f"Request leak: rank {rank}'s persistent request {call}{where} {what}."
    return (f"Request leak: rank {rank}'s request {call}{where} was never completed "
            "(wait/test) nor freed before MPI_Finalize.")


def request_leaks(m: ModelManager) -> list[dict[str, object]]:
    """``request_leak`` error entries of every rank that finished normally.

    Each: ``kind``, ``ranks`` (``[rank]``), ``events`` (``["rank:seq"]`` of the
    posting event when known), ``req``, ``call``, ``state``, ``started``,
    ``site`` and ``reason``.
    """
    out: list[dict[str, object]] = []
    for rank in range(m.nprocs):
        if not m.finished[rank] or rank in m.dead:
            continue
        final = m.record(rank, m.count(rank) - 1)
        listed = final.get("requests")
        entries = listed if isinstance(listed, list) else _open_requests(m, rank)
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            seq = entry.get("seq")
            req = entry.get("req")
            if seq is None and isinstance(req, int) and entry.get("state") != "inactive":
                seq = _posting(m, rank, req)
            out.append({
                "kind": "request_leak",
                "ranks": [rank],
                "events": [] if seq is None else [f"{rank}:{seq}"],
                "req": req,
                "call": entry.get("call"),
                "state": entry.get("state", "active"),
                "started": entry.get("started", True),
                "site": entry.get("site"),
                "reason": _reason(rank, entry),
            })
    return out
