"""The per-record zero-buffer requirements and re-execution that
:mod:`mpvis.analysis.unsafe_sends` used before it read the model's columns.

Kept here, unchanged, as the reference the columnar pass is compared with
(``test_columnar_pass_equals_the_per_record_pass``): every record of the run as
a dict and one :class:`Requirement` per pair of members of every all-to-all
collective, so it is too big for a million events but simple to read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.unsafe_sends import NEVER, Requirement, ZeroBufferRun
from mpvis.model.collectives import ALL_TO_ALL, FROM_ROOT, TO_ROOT
from mpvis.model.manager import ModelManager
from mpvis.model.record_batch import rank_records

Record = dict[str, Any]


def _buffered(rec: Record) -> bool:
    return rec.get("mode") == "buffered"


def _paired_recv(events: Sequence[Record], s: int) -> int | None:
    """The seq of the receive of the same Sendrecv as blocking send ``s``, if any."""
    call = events[s].get("call")
    if call is None or s + 1 >= len(events):
        return None
    nxt = events[s + 1]
    if nxt["kind"] == "recv" and nxt.get("blocking") and nxt.get("call", call) == call:
        return s + 1
    return None


def _members(events: list[list[Record]], nprocs: int) -> dict[int, tuple[int, ...]]:
    groups: dict[int, tuple[int, ...]] = {0: tuple(range(nprocs))}
    seen: dict[int, set[int]] = {}
    for evs in events:
        for rec in evs:
            if rec["kind"] == "coll":
                comm = rec.get("comm", 0)
                if comm and comm not in groups and rec.get("group") is not None:
                    groups[comm] = tuple(rec["group"])
                seen.setdefault(comm, set()).add(rec["rank"])
    for comm, ranks in seen.items():
        groups.setdefault(comm, tuple(sorted(ranks)))
    return groups


Requirements = dict[tuple[int, int], list[Requirement]]


def requirements(m: ModelManager) -> tuple[list[list[Record]], Requirements]:
    """Every rank's records and the zero-buffer requirements of each event.

    Requirements are keyed by ``(rank, index)``; index ``len(events)`` stands
    for getting past the rank's last event (a trace ending in a blocking send
    is blocked there).
    """
    n = m.nprocs
    events = [rank_records(m, r) for r in range(n)]  # columns read once per rank
    reqs: Requirements = {}

    def add(at: tuple[int, int], req: Requirement) -> None:
        reqs.setdefault(at, []).append(req)

    def posted(rank: int, seq: int, rec: Record) -> tuple[int, int]:
        """The event that must have run for send (rank, seq) to complete: its receive."""
        part = m.partner(rank, seq)
        if part is None:
            return rec["dest"], NEVER
        q, cs = part
        return q, events[q][cs]["recv"]

    groups = _members(events, n)
    entries: dict[tuple[int, int], dict[int, int]] = {}  # (comm, instance) -> rank -> seq
    for r in range(n):
        count: dict[int, int] = {}
        for rec in events[r]:
            if rec["kind"] == "coll":
                comm = rec.get("comm", 0)
                k = count.get(comm, 0)
                count[comm] = k + 1
                entries.setdefault((comm, k), {})[r] = rec["seq"]
    for r in range(n):
        evs = events[r]
        open_sends: dict[int, int] = {}  # req -> seq of the nonblocking send
        count = {}
        for rec in evs:
            s, kind = rec["seq"], rec["kind"]
            site = rec.get("site")
            if kind == "send" and not _buffered(rec):
                if not rec["blocking"]:
                    open_sends[rec["req"]] = s
                    continue
                pair = _paired_recv(evs, s)
                at = s + 1
                if pair is not None:
                    c = m.consume_of(r, pair)
                    at = NEVER if c is None else c + 1
                if at != NEVER:
                    add((r, min(at, len(evs))), Requirement(
                        posted(r, s, rec), (r, s), "send", describe_p2p(rec), site))
            elif kind == "consume":
                part = m.partner(r, s)
                if part is not None:
                    recv = evs[rec["recv"]]
                    add((r, s), Requirement(part, (r, recv["seq"]), "recv",
                                            describe_p2p(recv), recv.get("site")))
            elif kind == "wait":
                for q in rec["reqs"]:
                    ss = open_sends.pop(q, None)
                    if ss is not None:
                        send = evs[ss]
                        add((r, s), Requirement(posted(r, ss, send), (r, ss), "send",
                                                describe_p2p(send), send.get("site")))
            elif kind == "coll":
                comm = rec.get("comm", 0)
                k = count.get(comm, 0)
                count[comm] = k + 1
                _coll_requirements(rec, r, k, members=groups.get(comm, ()),
                                   entered=entries.get((comm, k), {}), add=add, end=len(evs))
    return events, reqs


def _coll_requirements(rec: Record, r: int, k: int, *, members: tuple[int, ...],
                       entered: dict[int, int],
                       add: Callable[[tuple[int, int], Requirement], None], end: int) -> None:
    """The exit of collective ``rec`` (rank ``r``'s ``k``-th on its comm) waits for entries."""
    op, root = rec["op"], rec.get("root")
    if op in ALL_TO_ALL:
        need: tuple[int, ...] = members
    elif op in FROM_ROOT and root is not None:
        need = (root,)
    elif op in TO_ROOT and root is not None and root == r:
        need = members
    else:
        return
    s = rec["seq"]
    at = min(s + 1, end)
    text = f"{op} (its {k + 1}. collective on comm {rec.get('comm', 0)})"
    for q in need:
        if q == r:
            continue
        req = Requirement((q, entered.get(q, NEVER)), (r, s), "collective", text, rec.get("site"))
        add((r, at), req)


def zero_buffer_run(nprocs: int, counts: Sequence[int],
                    reqs: Requirements) -> ZeroBufferRun:
    """Advance every rank as far as the requirements allow (module docstring)."""
    pc = [0] * nprocs
    sleeping: dict[int, list[tuple[int, int]]] = {}  # rank q -> [(waiter, seq of q needed)]
    work = list(range(nprocs))
    while work:
        r = work.pop()
        while pc[r] <= counts[r]:
            unmet = next((x for x in reqs.get((r, pc[r]), ()) if pc[x.need[0]] <= x.need[1]), None)
            if unmet is not None:
                sleeping.setdefault(unmet.need[0], []).append((r, unmet.need[1]))
                break
            pc[r] += 1
        waiters = sleeping.pop(r, None)
        if waiters:
            keep = []
            for w, need in waiters:
                if pc[r] > need:
                    work.append(w)
                else:
                    keep.append((w, need))
            if keep:
                sleeping[r] = keep
    stuck = {
        r: [x for x in reqs.get((r, pc[r]), ()) if pc[x.need[0]] <= x.need[1]]
        for r in range(nprocs) if pc[r] <= counts[r]
    }
    return ZeroBufferRun({r: v for r, v in stuck.items() if v}, pc)
