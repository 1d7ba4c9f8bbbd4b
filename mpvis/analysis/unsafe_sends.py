"""Unsafe sends: deadlocks the run avoided only because MPI buffered its sends.

A standard-mode send may complete as soon as its data is copied (MPICH sends
small messages eagerly) or only once the matching receive is posted; the MPI
standard allows both, so a program whose completion relies on buffering is
erroneous ("unsafe", MPI 4.1, Sec. 3.5).  This module decides it from the
recorded execution: it re-executes every rank's recorded operations, with the
recorded matching, under *zero buffering*:

* a blocking send (standard, synchronous or ready; not ``mode: "buffered"``)
  completes only once the receive that consumed its message has been posted
  (its ``recv`` event executed); the rank's next event waits for that;
* the send half of a Sendrecv (a blocking send carrying ``call`` followed by
  the blocking receive of the same call) completes with the receive: the
  event after the receive's consume waits for it;
* a wait (or successful test) naming a nonblocking send's request waits for
  that send's receive to be posted;
* a consume waits for its send to be posted;
* a collective's exit waits for the entries the spec's happened-before edges
  name (every member for barrier-like operations, the root for bcast/scatter,
  every member at the root of reduce/gather; see :mod:`mpvis.model.collectives`).

Every rule only adds waits to the recorded order, so the recorded matching
stays possible and the re-execution is one execution MPI allows.  Ranks that
get stuck in it wait for each other along AND edges (each rank waits for every
unmet requirement of its next event).  A directed cycle of such waits is a
deadlock if sends are not buffered; it is reported (:func:`potential_deadlocks`)
when at least one of its waits is a send's (a cycle of receives only would have
hung the recorded run too, which :mod:`mpvis.analysis.deadlock_monitor` proves)
and when the recorded run was not itself blocked at every one of its events.
A blocking send that nothing ever receives blocks forever without buffering;
waits through it are reported as a lost message
(:mod:`mpvis.analysis.lost_messages`), not as a deadlock.

The pass is linear in the number of events: each rank advances while its next
event's requirements are met and sleeps on the first unmet one otherwise.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mpvis.analysis.deadlock_p2p import describe_p2p
from mpvis.analysis.deadlock_report import describe_site
from mpvis.analysis.waitfor import WaitEdge, weak_components
from mpvis.model.collectives import ALL_TO_ALL, FROM_ROOT, TO_ROOT
from mpvis.model.manager import ModelManager
from mpvis.model.record_batch import rank_records
from mpvis.model.stream import Record

__all__ = [
    "Requirement",
    "ZeroBufferRun",
    "potential_deadlocks",
    "requirements",
    "send_cycles",
    "zero_buffer_run",
]

#: A ``seq`` no rank ever reaches: a requirement that can never be met.
NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class Requirement:
    """Event ``need`` (rank, seq) must have executed before the event it is attached to.

    ``cause``: (rank, seq) of the blocking operation (the send, the receive,
    the collective); ``kind``: ``send`` (a send waits for its receive to be
    posted), ``recv`` (a receive waits for its send) or ``collective``;
    ``op``: a description for the reason text; ``site``: the cause's site.
    """

    need: tuple[int, int]
    cause: tuple[int, int]
    kind: str
    op: str
    site: str | None = None


@dataclass
class ZeroBufferRun:
    """Where the zero-buffer re-execution stopped.

    ``stuck``: rank -> the requirements of its next event that were never met
    (empty for ranks that ran to the end of their records).  ``pc``: per rank,
    how many of its events executed (its event count plus one when it got
    past its last event's requirements).
    """

    stuck: dict[int, list[Requirement]]
    pc: list[int]


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


def send_cycles(m: ModelManager) -> tuple[ZeroBufferRun, list[list[WaitEdge]]]:
    """The zero-buffer re-execution and, per weakly connected group of its stuck
    ranks, one wait-for cycle through a send's wait (its edges in order), if any."""
    events, reqs = requirements(m)
    run = zero_buffer_run(m.nprocs, [len(e) for e in events], reqs)
    edges = [WaitEdge(r, x.need[0], x.kind, x.cause, x.op, x.site)
             for r, xs in sorted(run.stuck.items()) for x in xs]
    cycles = []
    for group in weak_components(sorted(run.stuck), edges):
        members = set(group)
        cyc = _cycle_through_send([e for e in edges if e.src in members])
        if cyc:
            cycles.append(cyc)
    return run, cycles


def _cycle_through_send(edges: list[WaitEdge]) -> list[WaitEdge]:
    """A directed cycle whose first edge is a send's wait, or ``[]`` (breadth-first)."""
    succ: dict[int, list[WaitEdge]] = {}
    for e in edges:
        succ.setdefault(e.src, []).append(e)
    for first in edges:
        if first.kind != "send":
            continue
        back: dict[int, WaitEdge | None] = {first.dst: None}
        queue = deque([first.dst])
        while queue:
            u = queue.popleft()
            if u == first.src:
                path: list[WaitEdge] = []
                step = back[u]
                while step is not None:
                    path.append(step)
                    step = back[step.src]
                return [first, *reversed(path)]
            for e in succ.get(u, ()):
                if e.dst not in back:
                    back[e.dst] = e
                    queue.append(e.dst)
    return []


def potential_deadlocks(m: ModelManager) -> list[dict[str, object]]:
    """Deadlocks of the run if sends were not buffered, as ``deadlocks`` report entries.

    Each entry: ``kind: "p2p"``, ``potential: true``, ``check: "zero-buffer"``,
    ``ranks`` (the cycle's ranks), ``cycle`` (``[r0, r1, ..., r0]``),
    ``events`` (``[rank, seq]`` of the blocking operations on the cycle),
    ``sends`` (``"rank:seq"`` of the sends on the cycle) and ``reason``.
    Cycles at which the recorded run itself ended blocked are left to the
    deadlock monitor (they are proven deadlocks), and cycles through a send
    nobody received to :mod:`~mpvis.analysis.lost_messages` (the lost
    message is the cause).
    """
    _, cycles = send_cycles(m)
    counts = [m.count(r) for r in range(m.nprocs)]
    return [_entry(used) for used in cycles
            if not all(_blocked_at(m, counts, e.event) for e in used)
            and not any(e.kind == "send" and m.partner(*e.event) is None for e in used)]


def _blocked_at(m: ModelManager, counts: Sequence[int], ev: tuple[int, int]) -> bool:
    """Whether the recorded run ended with rank ``ev[0]`` blocked in event ``ev``."""
    r, s = ev
    if m.finished[r]:
        return False
    last = counts[r] - 1
    return s == last or (s == last - 1 and m.record(r, last)["kind"] == "recv")


def _entry(used: list[WaitEdge]) -> dict[str, object]:
    cycle = [e.src for e in used]
    k = cycle.index(min(cycle))
    used = used[k:] + used[:k]
    cycle = [*cycle[k:], *cycle[:k], cycle[k]]
    phrases = []
    for e in used:
        where = describe_site(e.site)
        if e.kind == "send":
            phrases.append(f"rank {e.src} blocks in {e.op}{where} until rank {e.dst} "
                           "posts the matching receive")
        elif e.kind == "recv":
            phrases.append(f"rank {e.src} waits in {e.op}{where} for rank {e.dst}'s send")
        else:
            phrases.append(f"rank {e.src} waits in {e.op}{where} for rank {e.dst} to enter it")
    sends = [f"{e.event[0]}:{e.event[1]}" for e in used if e.kind == "send"]
    reason = ("Deadlock if sends are not buffered: " + "; ".join(phrases)
              + ". Wait-for cycle: " + " -> ".join(map(str, cycle))
              + ". The run finished only because MPI buffered "
              + ("the send" if len(sends) == 1 else "the sends") + " " + ", ".join(sends)
              + " (use MPI_Sendrecv, nonblocking calls, or reorder them).")
    return {
        "kind": "p2p",
        "potential": True,
        "check": "zero-buffer",
        "ranks": sorted(set(cycle)),
        "cycle": cycle,
        "events": [list(e.event) for e in used],
        "sends": sends,
        "reason": reason,
    }
