"""Which MPI call each record of a rank belongs to, and when its events may happen.

Section 7 of Schaeli et al. builds the POEG of an MPI program on Siegel and
Avrunin's event model: *send* and *receive* events, "the events from blocking
MPI calls [ordered before] the events of the subsequent call performed by the
program", and the two events of one ``MPI_Sendrecv`` left unordered.  This
module gives each event of a rank an interval of call indices:

* ``post``: the call that started it (a send; the receive that a consume
  completes);
* ``complete``: the call after which it has certainly happened: the same call
  for a blocking send or receive (``MPI_Send``, ``MPI_Recv``, both halves of
  ``MPI_Sendrecv``); for a nonblocking one the call that completed its
  request (the wait or test that recorded the consume; the first ``wait``
  listing an ``MPI_Isend``'s request); :data:`NEVER` if nothing completed it.

Event ``e`` is before event ``f`` of the same rank iff
``complete(e) < post(f)``: that is the section 7 rule (blocking calls order
their events before the next call's; a nonblocking call's event is ordered
only by the call that completes it), and it is transitive (an interval order).

Call indices come from the optional ``call`` field (one value per MPI call on
a rank, on every record that call produced) when every MPI record of the rank
carries it.  Otherwise they are derived from ``seq``: a blocking receive's
``consume`` belongs to its ``recv``; the two halves of a Sendrecv are paired
by ``call`` where only some records carry it (the mpi4py library gives a
Sendrecv's send half a ``call`` and its receive is the next record; a
library may also mark both halves), else by **site and adjacency**: a
blocking ``send`` immediately followed (next ``seq``) by a blocking ``recv``
with the same ``site`` and communicator is one call, which is how the mpi4py
library records ``sendrecv``/``Sendrecv`` (send, recv, consume of one call
site).  Without ``site`` the halves cannot be told
from a ``Send`` then a ``Recv`` and count as two calls (fewer orderings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["MPI_KINDS", "NEVER", "RankCalls", "Span", "rank_calls"]

from mpvis.protocol.record_types import RecordView

#: Record kinds an MPI call produces (``state``, ``final`` and locks are not MPI calls).
MPI_KINDS: Final = frozenset({"send", "recv", "consume", "wait", "coll", "coll_exit"})
#: ``complete`` of an event that no call completed.
NEVER: Final = 1 << 62


@dataclass(frozen=True, slots=True)
class Span:
    """One send or consume event of a rank and its interval of calls."""

    seq: int
    kind: str  # "send" or "consume"
    post: int
    complete: int


@dataclass(frozen=True, slots=True)
class RankCalls:
    """The events of one rank and where its collectives were called."""

    spans: tuple[Span, ...]
    #: seq of each ``coll`` record -> its call index
    colls: dict[int, int]
    #: ``"call"`` when the records' ``call`` fields were used, else ``"site"``
    pairing: str


def _has_calls(records: Sequence[RecordView]) -> bool:
    mpi = [r for r in records if r.get("kind") in MPI_KINDS]
    return bool(mpi) and all(type(r.get("call")) is int for r in mpi)


def _same_call(prev: RecordView, rec: RecordView) -> bool:
    """Is ``rec`` the receive half of a Sendrecv whose send is ``prev``?"""
    call = prev.get("call")
    if prev.get("kind") == "send" and type(call) is int and rec.get("call") in (None, call):
        # the mpi4py library marks only a Sendrecv's send half, its receive being
        # the next record (docs/trace-format.md); others may mark both halves
        return True
    return (prev.get("kind") == "send" and bool(prev.get("blocking"))
            and prev.get("site") is not None and prev.get("site") == rec.get("site")
            and prev.get("comm", 0) == rec.get("comm", 0))


def _derived_indices(records: Sequence[RecordView]) -> list[int]:
    """Call index of each record by site and adjacency (module docstring)."""
    idx = list(range(len(records)))
    for s, rec in enumerate(records):
        kind = rec.get("kind")
        if kind == "recv" and rec.get("blocking") and s > 0 and _same_call(records[s - 1], rec):
            idx[s] = idx[s - 1]
        elif kind == "consume":
            r = rec.get("recv")
            if type(r) is int and 0 <= r < s and records[r].get("blocking"):
                idx[s] = idx[r]
    return idx


def rank_calls(records: Sequence[RecordView]) -> RankCalls:
    """The spans of a rank's events; ``records[s]`` is the rank's event ``seq == s``."""
    use_call = _has_calls(records)
    if use_call:
        idx = [int(r["call"]) if type(r.get("call")) is int else -1 for r in records]
        last = -1
        for s, v in enumerate(idx):  # non-MPI records sit with the call before them
            if v < 0:
                idx[s] = last
            else:
                last = v
    else:
        idx = _derived_indices(records)
    waits: dict[int, list[int]] = {}  # req -> seqs of waits listing it
    for s, rec in enumerate(records):
        if rec.get("kind") == "wait":
            for q in rec.get("reqs") or ():
                waits.setdefault(q, []).append(s)
    spans: list[Span] = []
    colls: dict[int, int] = {}
    for s, rec in enumerate(records):
        kind = rec.get("kind")
        if kind == "send":
            post = idx[s]
            if rec.get("blocking"):
                spans.append(Span(s, "send", post, post))
            else:
                done = next((w for w in waits.get(rec.get("req", -1), ()) if w > s), None)
                spans.append(Span(s, "send", post, NEVER if done is None else idx[done]))
        elif kind == "consume":
            r = rec.get("recv")
            post = idx[r] if type(r) is int and 0 <= r < s else idx[s]
            spans.append(Span(s, "consume", post, idx[s]))
        elif kind == "coll":
            colls[s] = idx[s]
    return RankCalls(tuple(spans), colls, "call" if use_call else "site")
