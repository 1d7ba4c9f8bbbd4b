"""A seeded discrete-event simulator of message-passing programs.

Every simulated process is a generator of operations (:mod:`mpvis.sim.ops`).
:class:`Simulator` runs them with the semantics of MPI that the analyses of
mpvis rely on, and writes the trace records of ``trace-format.md``:

* **Matching.**  Each rank keeps a queue of posted receives (posting order) and
  a queue of arrived, unmatched messages (arrival order).  An arriving message
  goes to the first posted receive it matches; a newly posted receive takes the
  first arrived message it matches.  Sources and tags may be ``-1``.
* **Non-overtaking.**  Messages of one channel (sender, receiver, communicator,
  tag) arrive in send order: an arrival is never earlier than the previous
  arrival on its channel, and simultaneous events run in scheduling order.
* **Send modes.**  A standard send completes at once (buffered); a synchronous
  send (``ssend``, ``issend``) completes once a receive matched its message,
  plus one network latency for the acknowledgement.  Nonblocking operations
  return requests that complete at ``wait``; the ``consume`` records of the
  completed receives are written just before the ``wait`` record.
* **Collectives.**  The k-th collective of each member of a communicator is
  one instance; members leave by :func:`mpvis.sim.collectives.dependencies`.
  A member that enters with another operation or other single-valued
  arguments (``root``, ``count``, ``dtype``, ``redop``) poisons the instance:
  whoever has not left yet stays blocked forever, as a real mismatch hangs.
* **Locks.**  Exclusive, granted in request order.
* **Termination.**  A process that returns writes ``final``.  When no event is
  left, the processes still blocked end without ``final`` (the spec's sign of
  a blocked rank) and :attr:`Simulator.stuck` says where each one waits.

Random message latencies (and the scenarios' random compute times) come from
generators seeded by ``seed``: one seed always gives the same trace, and
another seed may let a wildcard receive take another message, which is what
makes the races of a scenario real.  Times ``t`` are simulated seconds from 0.
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpvis.errors import MpvisError
from mpvis.protocol.record_types import Record
from mpvis.sim import collectives
from mpvis.sim.ops import (
    ANY,
    Coll,
    Compute,
    Ctx,
    Lock,
    Msg,
    Program,
    Recv,
    Request,
    Send,
    State,
    Unlock,
    Wait,
)

ProgramFactory = Callable[[Ctx], Program]


class SimulationError(MpvisError, RuntimeError):
    """A simulated program misused the API (bad rank, unknown request, ...)."""


@dataclass
class _Message:
    src: int
    dest: int
    tag: int
    comm: int
    send_seq: int
    data: Any
    on_match: Callable[[], None] | None = None


@dataclass
class _Req:
    rid: int
    done: bool = False
    msg: _Message | None = None
    recv_seq: int | None = None
    is_recv: bool = False


@dataclass
class _Posted:
    seq: int
    src: int
    tag: int
    comm: int
    site: str
    req: _Req | None

    def matches(self, m: _Message) -> bool:
        return self.comm == m.comm and self.src in (ANY, m.src) and self.tag in (ANY, m.tag)


@dataclass
class _Proc:
    rank: int
    gen: Program
    seq: int = 0
    finished: bool = False
    blocked: str = "running"
    next_req: int = 0
    reqs: dict[int, _Req] = field(default_factory=dict)
    posted: list[_Posted] = field(default_factory=list)
    unexpected: list[_Message] = field(default_factory=list)
    waiting: tuple[tuple[_Req, ...], str] | None = None
    coll_count: dict[int, int] = field(default_factory=dict)


@dataclass
class _CollInstance:
    comm: int
    signature: tuple[Any, ...]
    members: tuple[int, ...]
    values: dict[int, Any] = field(default_factory=dict)
    waiting: list[tuple[_Proc, str]] = field(default_factory=list)
    poisoned: bool = False


@dataclass
class _LockState:
    holder: _Proc | None = None
    queue: list[tuple[_Proc, str]] = field(default_factory=list)


def _site_of(gen: Program) -> str:
    """``demo/<file>:<line>`` of the ``yield`` the generator is suspended at."""
    g: Any = gen
    while inspect.isgenerator(getattr(g, "gi_yieldfrom", None)):
        g = g.gi_yieldfrom
    frame = g.gi_frame
    if frame is None:
        return "demo/?"
    return f"demo/{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"


class Simulator:
    """One run of ``program`` on ``nprocs`` simulated ranks.

    ``comms`` maps extra communicator numbers to their member ranks (world
    ranks; communicator ``0`` is always every rank).  ``latency`` bounds the
    uniformly drawn network latency of a message, ``overhead`` is the time an
    MPI call takes.  :meth:`run` returns the records in simulated-time order
    (ranks interleaved, each rank's in ``seq`` order).
    """

    def __init__(
        self,
        program: ProgramFactory,
        nprocs: int,
        seed: int = 0,
        *,
        comms: Mapping[int, Sequence[int]] | None = None,
        latency: tuple[float, float] = (0.01, 0.05),
        overhead: float = 0.002,
        max_records: int = 500_000,
    ) -> None:
        self.nprocs = nprocs
        self.comms: dict[int, tuple[int, ...]] = {0: tuple(range(nprocs))}
        for c, members in (comms or {}).items():
            self.comms[c] = tuple(members)
        self.latency = latency
        self.overhead = overhead
        self.max_records = max_records
        self.now = 0.0
        self.records: list[Record] = []
        #: Rank -> where it waits, for the ranks that ended without ``final``.
        self.stuck: dict[int, str] = {}
        self._net = random.Random(f"{seed}/net")
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._tick = itertools.count()
        self._channel_last: dict[tuple[int, int, int, int], float] = {}
        self._colls: dict[tuple[int, int], _CollInstance] = {}
        self._locks: dict[str, _LockState] = {}
        self._procs = [
            _Proc(r, program(Ctx(r, nprocs, random.Random(f"{seed}/{r}")))) for r in range(nprocs)
        ]

    # -- scheduling ---------------------------------------------------------

    def _after(self, delay: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (self.now + delay, next(self._tick), fn))

    def _resume_later(self, p: _Proc, delay: float, value: Any = None) -> None:
        self._after(delay, lambda: self._resume(p, value))

    def _hop(self) -> float:
        lo, hi = self.latency
        return self._net.uniform(lo, hi)

    def run(self) -> list[Record]:
        """Run to the end (every process returned or blocked); return the records."""
        for p in self._procs:
            self._resume_later(p, 0.0)
        while self._heap:
            self.now, _, fn = heapq.heappop(self._heap)
            fn()
        self.stuck = {p.rank: p.blocked for p in self._procs if not p.finished}
        return self.records

    # -- records ------------------------------------------------------------

    def _emit(self, p: _Proc, kind: str, site: str | None, **fields: Any) -> int:
        if len(self.records) >= self.max_records:
            raise SimulationError(f"more than {self.max_records} records: a runaway program?")
        rec: Record = {"rank": p.rank, "seq": p.seq, "kind": kind}
        rec.update(fields)
        if rec.get("comm") == 0:
            del rec["comm"]
        rec["t"] = round(self.now, 6)
        if site is not None:
            rec["site"] = site
        self.records.append(rec)
        p.seq += 1
        return p.seq - 1

    # -- running a process --------------------------------------------------

    def _resume(self, p: _Proc, value: Any) -> None:
        try:
            op = p.gen.send(value)
        except StopIteration:
            p.finished = True
            p.blocked = "finished"
            self._emit(p, "final", None)
            return
        site = _site_of(p.gen)
        p.blocked = f"running at {site}"
        if isinstance(op, Send):
            self._send(p, op, site)
        elif isinstance(op, Recv):
            self._recv(p, op, site)
        elif isinstance(op, Wait):
            self._wait(p, op, site)
        elif isinstance(op, Coll):
            self._coll(p, op, site)
        elif isinstance(op, Lock):
            self._lock(p, op, site)
        elif isinstance(op, Unlock):
            self._unlock(p, op, site)
        elif isinstance(op, State):
            self._emit(p, "state", site, vars=dict(op.vars))
            self._resume_later(p, 0.0)
        elif isinstance(op, Compute):
            self._resume_later(p, max(0.0, op.seconds))
        else:
            raise SimulationError(f"rank {p.rank} yielded {op!r}, not an operation ({site})")

    def _check_peer(self, p: _Proc, peer: int, comm: int, what: str, site: str) -> None:
        members = self.comms.get(comm)
        if members is None:
            raise SimulationError(f"rank {p.rank}: unknown communicator {comm} ({site})")
        if p.rank not in members or (peer != ANY and peer not in members):
            raise SimulationError(f"rank {p.rank}: {what} {peer} not in communicator {comm}")

    def _new_req(self, p: _Proc, is_recv: bool) -> _Req:
        req = _Req(p.next_req, is_recv=is_recv)
        p.next_req += 1
        p.reqs[req.rid] = req
        return req

    # -- point to point -----------------------------------------------------

    def _send(self, p: _Proc, op: Send, site: str) -> None:
        self._check_peer(p, op.dest, op.comm, "destination", site)
        if op.dest == ANY or op.tag < 0:
            raise SimulationError(f"rank {p.rank}: a send needs a real destination and tag")
        req = None if op.blocking else self._new_req(p, is_recv=False)
        fields: dict[str, Any] = {
            "dest": op.dest,
            "tag": op.tag,
            "blocking": op.blocking,
            "sync": op.sync,
        }
        if req is not None:
            fields["req"] = req.rid
        if op.size is not None:
            fields["size"] = op.size
        seq = self._emit(p, "send", site, comm=op.comm, **fields)
        msg = _Message(p.rank, op.dest, op.tag, op.comm, seq, op.data)
        if op.sync:
            msg.on_match = self._sync_completion(p, req)
        elif req is not None:
            req.done = True
        channel = (p.rank, op.dest, op.comm, op.tag)
        arrival = max(self.now + self._hop(), self._channel_last.get(channel, 0.0))
        self._channel_last[channel] = arrival
        self._after(arrival - self.now, lambda: self._deliver(msg))
        if op.blocking and op.sync:
            p.blocked = f"in ssend to rank {op.dest} at {site}"
        elif op.blocking:
            self._resume_later(p, self.overhead)
        else:
            assert req is not None
            self._resume_later(p, self.overhead, Request(req.rid))

    def _sync_completion(self, p: _Proc, req: _Req | None) -> Callable[[], None]:
        def matched() -> None:
            if req is None:
                self._resume_later(p, self._hop())
            else:
                self._after(self._hop(), lambda: self._complete(p, req))

        return matched

    def _recv(self, p: _Proc, op: Recv, site: str) -> None:
        self._check_peer(p, op.src, op.comm, "source", site)
        if op.src < ANY or op.tag < ANY:
            raise SimulationError(f"rank {p.rank}: a receive's source and tag are >= -1")
        req = None if op.blocking else self._new_req(p, is_recv=True)
        fields: dict[str, Any] = {"src": op.src, "tag": op.tag, "blocking": op.blocking}
        if req is not None:
            fields["req"] = req.rid
        seq = self._emit(p, "recv", site, comm=op.comm, **fields)
        posted = _Posted(seq, op.src, op.tag, op.comm, site, req)
        if op.blocking:
            p.blocked = f"in recv(src={op.src}, tag={op.tag}) at {site}"
        for i, m in enumerate(p.unexpected):
            if posted.matches(m):
                del p.unexpected[i]
                self._match(p, posted, m)
                break
        else:
            p.posted.append(posted)
        if req is not None:
            self._resume_later(p, self.overhead, Request(req.rid))

    def _deliver(self, m: _Message) -> None:
        dest = self._procs[m.dest]
        for i, posted in enumerate(dest.posted):
            if posted.matches(m):
                del dest.posted[i]
                self._match(dest, posted, m)
                return
        dest.unexpected.append(m)

    def _match(self, p: _Proc, posted: _Posted, m: _Message) -> None:
        if m.on_match is not None:
            m.on_match()
        if posted.req is None:
            self._after(self.overhead, lambda: self._consume_blocking(p, posted, m))
        else:
            posted.req.msg = m
            posted.req.recv_seq = posted.seq
            self._complete(p, posted.req)

    def _consume_fields(self, recv_seq: int, m: _Message) -> dict[str, Any]:
        return {
            "recv": recv_seq,
            "src": m.src,
            "tag": m.tag,
            "send": [m.src, m.send_seq],
            "comm": m.comm,
        }

    def _consume_blocking(self, p: _Proc, posted: _Posted, m: _Message) -> None:
        self._emit(p, "consume", posted.site, **self._consume_fields(posted.seq, m))
        self._resume(p, Msg(m.src, m.tag, m.data))

    # -- requests -----------------------------------------------------------

    def _complete(self, p: _Proc, req: _Req) -> None:
        req.done = True
        self._try_finish_wait(p)

    def _wait(self, p: _Proc, op: Wait, site: str) -> None:
        reqs = []
        for r in op.requests:
            req = p.reqs.get(r.req) if isinstance(r, Request) else None
            if req is None:
                raise SimulationError(f"rank {p.rank}: wait on unknown request {r!r} ({site})")
            if req in reqs:
                raise SimulationError(f"rank {p.rank}: request {r.req} waited twice ({site})")
            reqs.append(req)
        p.waiting = (tuple(reqs), site)
        p.blocked = f"in wait(reqs={[r.rid for r in reqs]}) at {site}"
        self._try_finish_wait(p)

    def _try_finish_wait(self, p: _Proc) -> None:
        if p.waiting is None or not all(r.done for r in p.waiting[0]):
            return
        reqs, site = p.waiting
        p.waiting = None
        self._after(self.overhead, lambda: self._finish_wait(p, reqs, site))

    def _finish_wait(self, p: _Proc, reqs: tuple[_Req, ...], site: str) -> None:
        results: list[Msg | None] = []
        for req in reqs:
            del p.reqs[req.rid]
            if req.is_recv:
                assert req.msg is not None and req.recv_seq is not None
                m = req.msg
                self._emit(p, "consume", site, **self._consume_fields(req.recv_seq, m))
                results.append(Msg(m.src, m.tag, m.data))
            else:
                results.append(None)
        self._emit(p, "wait", site, reqs=[r.rid for r in reqs])
        self._resume(p, results)

    # -- collectives --------------------------------------------------------

    def _coll(self, p: _Proc, op: Coll, site: str) -> None:
        members = self.comms.get(op.comm)
        if members is None or p.rank not in members:
            raise SimulationError(f"rank {p.rank}: not in communicator {op.comm} ({site})")
        if op.op in collectives.ROOTED and op.root is None:
            raise SimulationError(f"rank {p.rank}: {op.op} needs a root ({site})")
        k = p.coll_count.get(op.comm, 0)
        p.coll_count[op.comm] = k + 1
        signature = (op.op, op.root, op.count, op.dtype, op.redop)
        inst = self._colls.setdefault((op.comm, k), _CollInstance(op.comm, signature, members))
        args: dict[str, object] = {
            n: v
            for n, v in zip(("root", "count", "dtype", "redop"), signature[1:], strict=True)
            if v is not None
        }
        if op.comm != 0 and k == 0:  # as the trace library does: the members, once
            args["group"] = list(members)
        self._emit(p, "coll", site, op=op.op, comm=op.comm, **args)
        p.blocked = f"in {op.op} (collective #{k} on communicator {op.comm}) at {site}"
        if signature != inst.signature:
            inst.poisoned = True
        inst.values[p.rank] = op.value
        inst.waiting.append((p, site))
        self._release_coll(inst)

    def _release_coll(self, inst: _CollInstance) -> None:
        if inst.poisoned:
            return
        op, root, _, _, redop = inst.signature
        still: list[tuple[_Proc, str]] = []
        for p, site in inst.waiting:
            if collectives.dependencies(op, p.rank, root, inst.members) <= inst.values.keys():
                value = collectives.result(
                    op, p.rank, root=root, redop=redop, members=inst.members, values=inst.values
                )
                self._after(self._hop(), self._leaver(p, op, inst.comm, site, value))
            else:
                still.append((p, site))
        inst.waiting = still

    def _leaver(self, p: _Proc, op: str, comm: int, site: str, value: Any) -> Callable[[], None]:
        def leave() -> None:
            self._emit(p, "coll_exit", site, op=op, comm=comm)
            self._resume(p, value)

        return leave

    # -- locks --------------------------------------------------------------

    def _lock(self, p: _Proc, op: Lock, site: str) -> None:
        self._emit(p, "lock", site, lock=op.name)
        st = self._locks.setdefault(op.name, _LockState())
        if st.holder is None:
            st.holder = p
            self._after(self.overhead, self._granter(p, op.name, site))
        else:
            st.queue.append((p, site))
            p.blocked = f"waiting for lock {op.name!r} (held by rank {st.holder.rank}) at {site}"

    def _granter(self, p: _Proc, name: str, site: str) -> Callable[[], None]:
        def grant() -> None:
            self._emit(p, "locked", site, lock=name)
            self._resume(p, None)

        return grant

    def _unlock(self, p: _Proc, op: Unlock, site: str) -> None:
        st = self._locks.get(op.name)
        if st is None or st.holder is not p:
            raise SimulationError(f"rank {p.rank} unlocks {op.name!r} it does not hold ({site})")
        self._emit(p, "unlock", site, lock=op.name)
        st.holder = None
        if st.queue:
            q, qsite = st.queue.pop(0)
            st.holder = q
            self._after(self.overhead, self._granter(q, op.name, qsite))
        self._resume_later(p, self.overhead)


def simulate_program(
    program: ProgramFactory, nprocs: int, seed: int = 0, **options: Any
) -> tuple[list[Record], dict[int, str]]:
    """Run ``program`` on ``nprocs`` ranks; return the records and the stuck ranks."""
    sim = Simulator(program, nprocs, seed, **options)
    records = sim.run()
    return records, sim.stuck
