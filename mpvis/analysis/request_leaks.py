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

import numpy as np
import numpy.typing as npt

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.deadlock_report import describe_site
from mpvis.model.event_arrays import RunArrays, rank_arrays, rank_chunks
from mpvis.model.manager import ModelManager
from mpvis.model.record_batch import rebuild_records
from mpvis.protocol import records as R

__all__ = ["request_leaks"]

_SEND, _RECV, _WAIT = R.KIND_CODE[R.SEND], R.KIND_CODE[R.RECV], R.KIND_CODE[R.WAIT]
#: Events read at a time (whole ranks): a chunk's arrays, not the run's.
CHUNK_EVENTS = 1 << 17


def _posting(m: ModelManager, rank: int, req: int) -> int | None:
    """The seq of the rank's last send or receive that opened request ``req``."""
    events = rank_arrays(m.store, rank)
    codes = events.kind
    if req >= 0:  # the column's -1 is "no req": only a real one is looked up there
        hits = np.flatnonzero(((codes == _SEND) | (codes == _RECV)) & (events.field("req") == req))
        return int(hits[-1]) if len(hits) else None
    for seq in range(m.count(rank) - 1, -1, -1):
        rec = m.record(rank, seq)
        if rec["kind"] in ("send", "recv") and rec.get("req") == req:
            return seq
    return None


def _open_requests(m: ModelManager, ranks: list[int], chunk_events: int
                   ) -> dict[int, list[dict[str, Any]]]:
    """Requests the records of each of ``ranks`` leave open, as ``final.requests``
    entries, in the order a walk of the rank's events would list them: a
    nonblocking send or receive opens its ``req`` (a later one of the same
    ``req`` replaces the entry, keeping its place), a ``wait`` naming it
    closes it.  On arrays: a request is open when a posting of it comes after
    the last wait naming it; its entry is its last posting, its place its
    first posting after that wait.  Only the open ones are rebuilt as records.
    A few ranks at a time (:func:`~mpvis.model.event_arrays.rank_chunks`, about
    ``chunk_events`` events).
    """
    out: dict[int, list[dict[str, Any]]] = {r: [] for r in ranks}
    if not ranks:
        return out
    wanted = np.zeros(m.nprocs, dtype=bool)
    wanted[ranks] = True
    for ev in rank_chunks(m.store, chunk_events):  # ranks are independent: a few at a time
        if wanted[ev.lo:ev.lo + len(ev.counts)].any():
            _open_in(m, ev, wanted, out)
    return out


def _open_in(m: ModelManager, ev: RunArrays, wanted: npt.NDArray[np.bool_],
             out: dict[int, list[dict[str, Any]]]) -> None:
    """:func:`_open_requests` of the ``wanted`` ranks among those of ``ev``."""
    codes = ev.kind
    mine = np.repeat(wanted[ev.lo:ev.lo + len(ev.counts)], ev.counts)
    posts = np.flatnonzero(mine & ((codes == _SEND) | (codes == _RECV)) & ~ev.blocking)
    waits = np.flatnonzero(mine & (codes == _WAIT))
    del mine, codes
    lengths, named = ev.requests(waits)
    # (rank, req, position, is a wait) of every posting and every wait naming a request
    pos = np.concatenate([posts, np.repeat(waits, lengths)])
    req = np.concatenate([ev.field("req", posts).astype(np.int64), named])
    is_wait = np.arange(len(pos)) >= len(posts)
    order = np.lexsort((pos, req, ev.rank[pos]))  # positions are rank-major
    pos, req, is_wait = pos[order], req[order], is_wait[order]
    new_key = np.ones(len(pos), dtype=bool)
    new_key[1:] = (req[1:] != req[:-1]) | (ev.rank[pos[1:]] != ev.rank[pos[:-1]])
    key = np.cumsum(new_key) - 1
    # per request, the index of its last wait (-1: none): postings after it are open
    last_wait = np.full(int(key[-1]) + 1 if len(key) else 0, -1, dtype=np.int64)
    np.maximum.at(last_wait, key[is_wait], np.flatnonzero(is_wait))
    open_ = ~is_wait & (np.arange(len(pos)) > last_wait[key])
    keys = key[open_]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    last = np.ones(len(keys), dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    place, entry = pos[open_][first], pos[open_][last]
    entry = entry[np.argsort(place, kind="stable")]
    for p, rec in zip(entry.tolist(), rebuild_records(m, ev.indices[entry]), strict=True):
        out[int(ev.rank[p])].append({
            "req": rec["req"], "call": describe_p2p(rec), "site": rec.get("site"),
            "state": "active", "started": True, "seq": rec["seq"]})


def _reason(rank: int, entry: dict[str, Any]) -> str:
    call = entry.get("call") or "a request"
    where = describe_site(entry.get("site"))
    if entry.get("state") == "inactive":
        what = ("was never started nor freed" if not entry.get("started", True)
                else "was never freed")
        return f"Request leak: rank {rank}'s persistent request {call}{where} {what}."
    return (f"Request leak: rank {rank}'s request {call}{where} was never completed "
            "(wait/test) nor freed before MPI_Finalize.")


def request_leaks(m: ModelManager, *, chunk_events: int = CHUNK_EVENTS
                  ) -> list[dict[str, object]]:
    """``request_leak`` error entries of every rank that finished normally.

    Each: ``kind``, ``ranks`` (``[rank]``), ``events`` (``["rank:seq"]`` of the
    posting event when known), ``req``, ``call``, ``state``, ``started``,
    ``site`` and ``reason``.  The run's events are read about ``chunk_events``
    at a time (whole ranks).
    """
    listed: dict[int, object] = {}
    for rank in range(m.nprocs):
        if m.finished[rank] and rank not in m.dead:
            listed[rank] = m.record(rank, m.count(rank) - 1).get("requests")
    found = _open_requests(m, [r for r, x in listed.items() if not isinstance(x, list)],
                           chunk_events)
    out: list[dict[str, object]] = []
    for rank, given in listed.items():
        entries = given if isinstance(given, list) else found[rank]
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
