"""Point-to-point state for deadlock detection: messages in flight, open requests, wait clauses.

Semantics (MPI, as MPICH runs it):

* a synchronous send (``sync`` true) completes only once a receive matches
  it; a blocking standard send (``sync`` false, not ``mode: "buffered"``)
  whose record is the rank's last, whose message nobody consumed and for
  which the destination has posted no matching receive is blocked in the
  same way (MPI sends large messages by rendezvous: both ranks of a
  send/send cycle hang in ``MPI_Send``), unless its ``size`` is known and
  below :data:`~mpvis.model.entities.EAGER_BYTES` (then it returned at once:
  MPI buffers such messages); a nonblocking standard send never blocks here
  (waits do not name what they wait for until they return);
* a receive completes when a matching message has been sent and not yet
  consumed; otherwise it waits for its source, or, for a wildcard source, for
  any rank of the communicator that could still send (an OR clause);
* posted receives take the messages available to them in posting order, so two
  pending receives do not both count the same message;
* a wait on several requests (waitall) is the AND of its requests' clauses; a
  waitany is their OR.

The spec has no record for entering a wait (``wait`` is written on completion).
A rank whose trace ends, without ``final``, with requests still open is taken
to be blocked in a wait on all of them when the input has ended
(``final=True``).  The optional record ``{"kind": "waiting", "reqs": [...],
"mode": "all" | "any"}`` written on entry to MPI_Wait* makes this exact and
also works live; see docs/deadlocks.md.  With a field ``"probe": {"src", "tag"}``
(and ``comm``) it says the rank is blocked in MPI_Probe, waiting for a message
as a receive with those arguments would.

Only live state is kept: unconsumed messages per destination and channel, and
open requests per rank; both shrink as consumes and waits arrive.  A send or
receive is held as a *handle*: its record (the ``on_*`` updates), or any other
value the caller's ``record_of`` turns into its record later (the ``*_by_value``
updates take the fields as plain values: the deadlock monitor's column path
passes global event indices).  Records are needed only for the wait-for
clauses (:meth:`P2PState.blocking_clauses`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import cast

from mpvis.analysis.deadlock_report import P2P
from mpvis.analysis.waitfor import Clause
from mpvis.model.entities import EAGER_BYTES
from mpvis.protocol.record_types import (
    ConsumeRecord,
    EventRecord,
    RecordView,
    RecvRecord,
    SendRecord,
    WaitRecord,
)

__all__ = ["WAITING", "P2PState", "describe_p2p", "may_block"]

#: Optional record kind: a rank entered MPI_Wait/Waitall (mode "all") or Waitany/Waitsome ("any").
WAITING = "waiting"

Channel = tuple[int, int, int]  # (src, comm, tag) of messages to one destination
#: A request a rank posted: its nonblocking send or receive.
Posted = SendRecord | RecvRecord
#: A send or receive as the state holds it: its record, or a caller's handle
#: that ``record_of`` turns into the record (module docstring).
Ref = object
#: A message in the pool: its send's seq, whether it is synchronous, the send.
Message = tuple[int, bool, Ref]


def _arg(v: int) -> str:
    return "ANY" if v == -1 else str(v)


def describe_p2p(rec: RecordView) -> str:
    """``recv(src=ANY, tag=3)``, ``ssend(dest=1, tag=0)``, ``irecv(...)``, ``issend(...)``."""
    comm = rec.get("comm", 0)
    tail = f", comm={comm}" if comm else ""
    blocking = rec.get("blocking", True)
    if rec["kind"] == "recv":
        name = "recv" if blocking else "irecv"
        return f"{name}(src={_arg(rec['src'])}, tag={_arg(rec['tag'])}{tail})"
    name = ("s" if rec.get("sync") else "") + "send"
    if not blocking:
        name = "i" + name
    return f"{name}(dest={rec['dest']}, tag={rec['tag']}{tail})"


def may_block(send: RecordView) -> bool:
    """Whether a blocking standard send can still be inside ``MPI_Send`` (module docstring)."""
    if send.get("mode") == "buffered":
        return False
    size = send.get("size")
    return not (type(size) is int and size < EAGER_BYTES)


class P2PState:
    """Messages sent and not consumed, and open requests, of every rank."""

    def __init__(self, nprocs: int, record_of: Callable[[Ref], EventRecord] | None = None
                 ) -> None:
        self.nprocs = nprocs
        #: A send's or receive's record from its handle (records are their own handles).
        self.record_of: Callable[[Ref], EventRecord] = record_of or _as_record
        self._pool: list[dict[Channel, deque[Message]]] = [{} for _ in range(nprocs)]
        self._open: list[dict[int, Ref]] = [{} for _ in range(nprocs)]  # by request
        self._open_recv: list[dict[int, Ref]] = [{} for _ in range(nprocs)]  # by seq
        self._sync_pending: set[tuple[int, int]] = set()
        self._std_pending: set[tuple[int, int]] = set()  # blocking standard sends
        self._groups: dict[int, tuple[int, ...]] = {}

    # -- updates, one per record kind -------------------------------------------------

    def on_send(self, rec: SendRecord) -> None:
        """A send: its message is available to the destination until consumed."""
        blocking = rec["blocking"]
        self.send_by_value(rec["rank"], rec["seq"], rec["dest"], rec.get("comm", 0), rec["tag"],
                           req=None if blocking else rec["req"], sync=rec["sync"],
                           buffered=rec.get("mode") == "buffered", ev=rec)

    def send_by_value(self, rank: int, seq: int, dest: int, comm: int, tag: int,
                      *, req: int | None, sync: bool, buffered: bool, ev: Ref) -> None:
        """:meth:`on_send` of send ``ev`` given by its fields (``req`` ``None``:
        a blocking send; ``buffered``: its ``mode`` is ``"buffered"``)."""
        key = (rank, comm, tag)
        pool = self._pool[dest]
        q = pool.get(key)
        if q is None:
            pool[key] = q = deque()
        q.append((seq, sync, ev))
        if req is not None:
            self._open[rank][req] = ev
        if sync:
            self._sync_pending.add((rank, seq))
        elif req is None and not buffered:
            self._std_pending.add((rank, seq))

    def on_recv(self, rec: RecvRecord) -> None:
        """A receive; a nonblocking one opens a request."""
        if not rec["blocking"]:
            self.irecv_by_value(rec["rank"], rec["seq"], rec["req"], rec)

    def irecv_by_value(self, rank: int, seq: int, req: int, ev: Ref) -> None:
        """:meth:`on_recv` of nonblocking receive ``ev`` given by its fields."""
        self._open[rank][req] = ev
        self._open_recv[rank][seq] = ev

    def on_consume(self, rec: ConsumeRecord) -> None:
        """A message is consumed: it leaves the pool; its receive is no longer pending."""
        sent = rec.get("send")
        self.consume_by_value(rec["rank"], rec["recv"], rec["src"], rec.get("comm", 0),
                              rec["tag"], send_seq=None if sent is None else sent[1])

    def consume_by_value(self, rank: int, recv: int, src: int, comm: int, tag: int,
                         *, send_seq: int | None) -> None:
        """:meth:`on_consume` given by the fields: ``recv`` the receive's seq,
        ``send_seq`` the consumed send's (``None``: not known)."""
        self._open_recv[rank].pop(recv, None)
        pool = self._pool[rank]
        key = (src, comm, tag)
        q = pool.get(key)
        if q is None:  # a consume whose comm was not normalised: find the channel
            key = next((k for k in pool if k[0] == src and k[2] == tag), key)
            q = pool.get(key)
        if not q:
            return
        if send_seq is None or q[0][0] == send_seq:
            msg = q.popleft()
        else:
            msg = next((m for m in q if m[0] == send_seq), q[0])
            q.remove(msg)
        if not q:
            del pool[key]
        if msg[1]:
            self._sync_pending.discard((src, msg[0]))
        else:
            self._std_pending.discard((src, msg[0]))

    def receives_consumed(self, rank: int, recv_seqs: Iterable[int]) -> None:
        """Receives of ``rank`` (seqs) were consumed by messages that never
        entered the pool (the monitor's batch path, sent and consumed in one
        batch): what :meth:`on_consume` does for them.  ``recv_seqs`` is read
        only if the rank has nonblocking receives pending."""
        opened = self._open_recv[rank]
        if opened:
            for seq in recv_seqs:
                opened.pop(seq, None)

    def open_keys(self) -> list[tuple[int, int]]:
        """``(rank, request)`` of every open request."""
        return [(r, q) for r, opened in enumerate(self._open) for q in opened]

    def receivers(self) -> list[int]:
        """The ranks with nonblocking receives not yet consumed."""
        return [r for r, opened in enumerate(self._open_recv) if opened]

    def on_wait(self, rec: WaitRecord) -> None:
        """Requests completed: they are closed."""
        self.close_requests(rec["rank"], rec["reqs"])

    def close_requests(self, rank: int, reqs: Iterable[int]) -> None:
        """A wait of ``rank`` completed requests ``reqs``: :meth:`on_wait` by value."""
        opened = self._open[rank]
        if opened:
            for req in reqs:
                opened.pop(req, None)

    def set_group(self, comm: int, group: Sequence[int]) -> None:
        """The world ranks of communicator ``comm`` (from a collective's ``group``)."""
        self._groups[comm] = tuple(group)

    # -- queries for the wait-for graph ----------------------------------------------

    def open_requests(self, rank: int) -> dict[int, Posted]:
        """The rank's requests not yet completed by a ``wait``, by request id."""
        return {q: self._posted(ev) for q, ev in self._open[rank].items()}

    def _posted(self, ev: Ref) -> Posted:
        return cast("Posted", self.record_of(ev))

    def in_flight(self) -> int:
        """How many messages are sent and not yet consumed."""
        return sum(len(q) for pool in self._pool for q in pool.values())

    def blocking_clauses(
        self, rank: int, cur: EventRecord, final: bool, curs: Sequence[EventRecord | None]
    ) -> list[Clause] | None:
        """The clauses of ``rank`` if its state ``cur`` blocks it in p2p, else ``None``.

        ``curs`` holds every rank's last relevant record (a pending blocking
        receive of the destination lets a synchronous send complete).
        """
        if cur["kind"] == "recv" and cur["blocking"]:
            return self._recv_clauses(rank, [cur], cur, "")
        if cur["kind"] == "send" and cur["blocking"] and (cur["sync"] or may_block(cur)):
            c = self._ssend_clause(cur, curs, cur, "")
            return [] if c is None else [c]
        if cur["kind"] == "waiting" and isinstance(cur.get("probe"), dict):
            # blocked in MPI_Probe: waits for a matching message, as a receive would
            probe = cur["probe"]
            pseudo: RecvRecord = {
                "kind": "recv", "rank": rank, "seq": cur["seq"], "blocking": True,
                "src": probe.get("src", -1), "tag": probe.get("tag", -1),
                "comm": cur.get("comm", 0), "site": cur.get("site")}
            return self._recv_clauses(rank, [pseudo], cur, " in MPI_Probe")
        if cur["kind"] == "waiting":
            opened = self._open[rank]
            reqs = [self._posted(opened[q]) for q in cur["reqs"] if q in opened]
            return self._wait_clauses(
                rank, reqs, cur, curs, any_mode=cur.get("mode") == "any", note=""
            )
        if final and self._open[rank]:
            reqs = sorted(map(self._posted, self._open[rank].values()), key=lambda r: r["seq"])
            note = " in a wait (inferred: the trace ends with the request open)"
            clauses = self._wait_clauses(rank, reqs, None, curs, any_mode=False, note=note)
            return clauses or None
        return None

    # -- helpers ---------------------------------------------------------------------

    def _senders(self, rank: int, comm: int) -> tuple[int, ...]:
        group = self._groups.get(comm) if comm else None
        ranks = group if group is not None else range(self.nprocs)
        return tuple(r for r in ranks if r != rank)

    def _recv(self, ev: Ref) -> RecvRecord:
        return cast("RecvRecord", self.record_of(ev))

    def _take(self, rank: int, recv: RecvRecord, taken: dict[Channel, int]) -> bool:
        src, tag, comm = recv["src"], recv["tag"], recv.get("comm", 0)
        pool = self._pool[rank]
        if src != -1 and tag != -1:
            keys: list[Channel] = [(src, comm, tag)]
        else:
            keys = sorted(
                k
                for k in pool
                if k[1] == comm and (src == -1 or k[0] == src) and (tag == -1 or k[2] == tag)
            )
        for key in keys:
            q = pool.get(key)
            if q is not None and len(q) > taken.get(key, 0):
                taken[key] = taken.get(key, 0) + 1
                return True
        return False

    def _recv_clauses(
        self, rank: int, waited: list[RecvRecord], at: EventRecord | None, note: str
    ) -> list[Clause]:
        """Clauses of the ``waited`` receives that no available message satisfies."""
        pending = sorted(
            [*map(self._recv, self._open_recv[rank].values()),
             *(r for r in waited if r["blocking"])],
            key=lambda r: r["seq"],
        )
        waited_seqs = {r["seq"] for r in waited}
        taken: dict[Channel, int] = {}
        clauses = []
        for recv in pending:
            if self._take(rank, recv, taken) or recv["seq"] not in waited_seqs:
                continue
            src = recv["src"]
            if src == -1:
                targets = self._senders(rank, recv.get("comm", 0))
            else:
                targets = () if src == rank else (src,)
            ev = at if at is not None else recv
            clauses.append(
                Clause(targets, P2P, (rank, ev["seq"]), describe_p2p(recv) + note, recv.get("site"))
            )
        return clauses

    def _ssend_clause(
        self, send: SendRecord, curs: Sequence[EventRecord | None], at: EventRecord | None,
        note: str,
    ) -> Clause | None:
        rank, dest = send["rank"], send["dest"]
        key = (rank, send["seq"])
        if key not in self._sync_pending and key not in self._std_pending:
            return None
        comm, tag = send.get("comm", 0), send["tag"]
        posted = [*map(self._recv, self._open_recv[dest].values())]
        dcur = curs[dest]
        if dcur is not None and dcur["kind"] == "recv" and dcur["blocking"]:
            posted.append(dcur)
        for r in posted:
            if r.get("comm", 0) == comm and r["src"] in (-1, rank) and r["tag"] in (-1, tag):
                return None
        ev = at if at is not None else send
        return Clause((dest,), P2P, (rank, ev["seq"]), describe_p2p(send) + note, send.get("site"))

    def _wait_clauses(
        self,
        rank: int,
        reqs: list[Posted],
        at: EventRecord | None,
        curs: Sequence[EventRecord | None],
        *,
        any_mode: bool,
        note: str,
    ) -> list[Clause]:
        recvs = [r for r in reqs if r["kind"] == "recv" and r["seq"] in self._open_recv[rank]]
        clauses = self._recv_clauses(rank, recvs, at, note)
        for r in reqs:
            if r["kind"] == "send" and r["sync"]:
                c = self._ssend_clause(r, curs, at, note)
                if c is not None:
                    clauses.append(c)
        if not any_mode:
            return clauses
        stuck = len(clauses) == len(reqs) and reqs
        if not stuck:
            return []
        targets = tuple(sorted({t for c in clauses for t in c.targets}))
        ops = "waitany over " + ", ".join(c.op for c in clauses)
        ev = (rank, at["seq"]) if at is not None else clauses[0].event
        return [Clause(targets, P2P, ev, ops, at.get("site") if at else None)]


def _as_record(ev: Ref) -> EventRecord:
    """The handle of an operation fed as a record is that record."""
    assert isinstance(ev, dict), "a handle other than a record needs the state's record_of"
    return cast("EventRecord", ev)
