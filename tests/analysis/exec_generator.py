"""Random small MPI executions as trace-format records, for property tests.

:func:`generate` simulates random per-rank programs (blocking and nonblocking,
synchronous and buffered sends, receives with wildcard source and tag, several
tags, two communicators, waits on subsets of requests, collectives, internal
``state`` records) under MPI's matching rules:

* messages travel per (sender, receiver) channel in FIFO order (non-overtaking);
* a posted receive takes the earliest delivered, unmatched, compatible message;
  a delivered message goes to the earliest posted, unmatched, compatible receive;
* a synchronous send completes once matched; a buffered one either at once
  (eager) or once matched (rendezvous), chosen per send;
* blocked ranks stay blocked: executions may deadlock, sends may stay unmatched,
  requests may never be waited.

The records are valid trace format: header first, each rank's records in
``seq`` order, a ``consume`` after its ``send``, a ``coll_exit`` after the
entries it depends on.  With ``shuffle`` the ranks' interleaving is re-drawn at
random among the orders that keep those constraints (the causal stream order of
``mpvis.model.stream``), instead of the execution's real-time order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from mpvis.protocol.record_types import Record

BARRIER_LIKE = ("barrier", "allreduce")
FROM_ROOT = ("bcast",)
TO_ROOT = ("reduce",)


@dataclass
class _Msg:
    src: int
    dest: int
    tag: int
    comm: int
    seq: int
    sync: bool
    eager: bool
    delivered: bool = False
    matched: bool = False


@dataclass
class _Post:
    rank: int
    seq: int
    src: int
    tag: int
    comm: int
    msg: _Msg | None = None


@dataclass
class _Rank:
    ops: list[tuple[Any, ...]]
    pc: int = 0
    seq: int = 0
    phase: Any = None  # state of the current op once started
    reqs: dict[int, Any] = field(default_factory=dict)
    next_req: int = 0
    colls: int = 0
    done: bool = False


def _compatible(p: _Post, m: _Msg) -> bool:
    return m.dest == p.rank and m.comm == p.comm and p.src in (-1, m.src) and p.tag in (-1, m.tag)


class _Sim:
    def __init__(self, rng: random.Random, nprocs: int, programs: list[list[tuple[Any, ...]]]):
        self.rng = rng
        self.n = nprocs
        self.ranks = [_Rank(ops) for ops in programs]
        self.out: list[Record] = []
        self.channels: dict[tuple[int, int], list[_Msg]] = {}
        self.delivered: list[list[_Msg]] = [[] for _ in range(nprocs)]
        self.posted: list[list[_Post]] = [[] for _ in range(nprocs)]
        self.entered: dict[int, set[int]] = {}  # collective instance -> ranks entered
        self.deps: dict[int, list[int]] = {}  # record index -> indexes it must follow
        self.send_index: dict[tuple[int, int], int] = {}
        self.entry_index: dict[tuple[int, int], int] = {}  # (instance, rank) -> index

    def emit(self, rank: int, kind: str, **fields: Any) -> int:
        st = self.ranks[rank]
        rec: Record = {"rank": rank, "seq": st.seq, "kind": kind, **fields}
        st.seq += 1
        self.out.append(rec)
        return len(self.out) - 1

    def match(self, post: _Post, msg: _Msg) -> None:
        post.msg = msg
        msg.matched = True
        self.posted[post.rank].remove(post)
        self.delivered[msg.dest].remove(msg)

    def deliver(self, chan: tuple[int, int]) -> None:
        msg = self.channels[chan].pop(0)
        if not self.channels[chan]:
            del self.channels[chan]
        msg.delivered = True
        self.delivered[msg.dest].append(msg)
        for post in self.posted[msg.dest]:
            if _compatible(post, msg):
                self.match(post, msg)
                return

    def post(self, post: _Post) -> None:
        self.posted[post.rank].append(post)
        for msg in self.delivered[post.rank]:
            if _compatible(post, msg):
                self.match(post, msg)
                return

    def consume(self, rank: int, post: _Post) -> None:
        msg = post.msg
        assert msg is not None
        idx = self.emit(
            rank,
            "consume",
            recv=post.seq,
            src=msg.src,
            tag=msg.tag,
            comm=post.comm,
            send=[msg.src, msg.seq],
        )
        self.deps[idx] = [self.send_index[(msg.src, msg.seq)]]

    def complete(self, item: Any) -> bool:
        if isinstance(item, _Msg):
            return item.matched or (item.eager and not item.sync)
        return bool(item.msg is not None)

    def step(self, rank: int) -> bool:
        """Advance ``rank`` by one action; False if it is blocked or finished."""
        st = self.ranks[rank]
        if st.done:
            return False
        if st.pc == len(st.ops):
            self.emit(rank, "final")
            st.done = True
            return True
        op = st.ops[st.pc]
        kind = op[0]
        if kind == "state":
            self.emit(rank, "state", vars={"x": st.pc})
        elif kind == "send":
            _, dest, tag, comm, blocking, sync, eager = op
            if st.phase is None:
                fields: dict[str, Any] = {
                    "dest": dest,
                    "tag": tag,
                    "comm": comm,
                    "blocking": blocking,
                    "sync": sync,
                }
                if not blocking:
                    fields["req"] = st.next_req
                idx = self.emit(rank, "send", **fields)
                msg = _Msg(rank, dest, tag, comm, self.out[idx]["seq"], sync, eager)
                self.send_index[(rank, msg.seq)] = idx
                self.channels.setdefault((rank, dest), []).append(msg)
                if not blocking:
                    st.reqs[st.next_req] = msg
                    st.next_req += 1
                    st.pc += 1
                    return True
                st.phase = msg
                return True
            if not self.complete(st.phase):
                return False
        elif kind == "recv":
            _, src, tag, comm, blocking = op
            if st.phase is None:
                fields = {"src": src, "tag": tag, "comm": comm, "blocking": blocking}
                if not blocking:
                    fields["req"] = st.next_req
                idx = self.emit(rank, "recv", **fields)
                post = _Post(rank, self.out[idx]["seq"], src, tag, comm)
                self.post(post)
                if not blocking:
                    st.reqs[st.next_req] = post
                    st.next_req += 1
                    st.pc += 1
                    return True
                st.phase = post
                return True
            if st.phase.msg is None:
                return False
            self.consume(rank, st.phase)
        elif kind == "wait":
            if st.phase is None:
                if not st.reqs:
                    st.pc += 1
                    return True
                reqs = sorted(st.reqs)
                k = len(reqs) if op[1] else self.rng.randint(1, len(reqs))
                st.phase = sorted(self.rng.sample(reqs, k))
            if not all(self.complete(st.reqs[q]) for q in st.phase):
                return False
            recvs = [st.reqs[q] for q in st.phase if isinstance(st.reqs[q], _Post)]
            self.rng.shuffle(recvs)
            for post in recvs:
                self.consume(rank, post)
            self.emit(rank, "wait", reqs=list(st.phase))
            for q in st.phase:
                del st.reqs[q]
        else:  # collective
            _, name, root = op
            inst = st.colls
            if st.phase is None:
                idx = self.emit(rank, "coll", op=name, root=root, comm=0)
                self.entered.setdefault(inst, set()).add(rank)
                self.entry_index[(inst, rank)] = idx
                st.phase = True
                return True
            entered = self.entered[inst]
            if name in BARRIER_LIKE or (name in TO_ROOT and rank == root):
                need = set(range(self.n))
            elif name in FROM_ROOT:
                need = {root}
            else:
                need = set()
            if not need <= entered:
                return False
            idx = self.emit(rank, "coll_exit", op=name, comm=0)
            self.deps[idx] = [self.entry_index[(inst, q)] for q in need]
            st.colls += 1
        st.phase = None
        st.pc += 1
        return True

    def run(self) -> None:
        while True:
            actions: list[tuple[str, Any]] = [("deliver", c) for c in self.channels]
            actions += [("rank", r) for r in range(self.n)]
            self.rng.shuffle(actions)
            for what, arg in actions:
                if what == "deliver":
                    self.deliver(arg)
                    break
                if self.step(arg):
                    break
            else:
                return


def _random_programs(
    rng: random.Random, nprocs: int, messages: int, colls: list[tuple[Any, ...]], wildcards: float
) -> list[list[tuple[Any, ...]]]:
    """Programs built from intended messages (a send and a receive each), plus noise."""
    ops: list[list[tuple[Any, ...]]] = [[] for _ in range(nprocs)]
    jitter = rng.choice([0.5, 3.0, 100.0])  # how far ops stray from message order
    for i in range(messages):
        src, dest = rng.sample(range(nprocs), 2)
        tag = rng.randrange(3)
        comm = 1 if rng.random() < 0.1 else 0
        if rng.random() < 0.96:
            sync = rng.random() < 0.3
            ops[src].append(
                (
                    i + rng.uniform(0, jitter),
                    "send",
                    dest,
                    tag,
                    comm,
                    rng.random() < 0.5,
                    sync,
                    rng.random() < 0.7,
                )
            )
        if rng.random() < 0.96:
            ops[dest].append(
                (
                    i + rng.uniform(0, jitter),
                    "recv",
                    -1 if rng.random() < wildcards else src,
                    -1 if rng.random() < 0.3 else tag,
                    comm,
                    rng.random() < 0.4,
                )
            )
    programs: list[list[tuple[Any, ...]]] = []
    for keyed in ops:
        keyed.sort(key=lambda op: op[0])
        prog = [op[1:] for op in keyed]
        programs.append(prog)
        for _ in range(rng.randint(0, 3)):
            prog.insert(rng.randint(0, len(prog)), ("wait", False))
        if rng.random() < 0.2:
            prog.insert(rng.randint(0, len(prog)), ("state",))
        spots = sorted(rng.randint(0, len(prog)) for _ in colls)
        for spot, coll in reversed(list(zip(spots, colls, strict=True))):
            prog.insert(spot, coll)  # every rank calls the collectives in one order
        if rng.random() < 0.8:
            prog.append(("wait", True))
    return programs


def _shuffle(rng: random.Random, records: list[Record], deps: dict[int, list[int]]) -> list[Record]:
    """Another interleaving that keeps each rank's order and the listed dependencies."""
    per_rank: dict[int, list[int]] = {}
    for i, rec in enumerate(records):
        per_rank.setdefault(rec["rank"], []).append(i)
    heads = dict.fromkeys(per_rank, 0)
    emitted: set[int] = set()
    out: list[Record] = []
    while heads:
        ready = [
            r for r, h in heads.items() if all(d in emitted for d in deps.get(per_rank[r][h], ()))
        ]
        r = rng.choice(ready)
        i = per_rank[r][heads[r]]
        emitted.add(i)
        out.append(records[i])
        heads[r] += 1
        if heads[r] == len(per_rank[r]):
            del heads[r]
    return out


def generate(
    seed: int, shuffle: bool = True, max_procs: int = 4, max_messages: int = 12
) -> list[Record]:
    """A random execution's records, header first (see the module docstring)."""
    rng = random.Random(seed)
    nprocs = rng.randint(2, max_procs)
    colls: list[tuple[Any, ...]] = []
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        name = rng.choice(BARRIER_LIKE + FROM_ROOT + TO_ROOT)
        colls.append(("coll", name, rng.randrange(nprocs)))
    wildcards = rng.choice([0.3, 0.6, 0.9])
    programs = _random_programs(rng, nprocs, rng.randint(1, max_messages), colls, wildcards)
    sim = _Sim(rng, nprocs, programs)
    sim.run()
    records = sim.out
    if shuffle:
        records = _shuffle(rng, records, sim.deps)
    header: Record = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": nprocs}
    return [header, *records]
