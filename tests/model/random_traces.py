"""Small random executions that respect MPI's matching rules, as trace records.

A random global schedule: at each step one rank posts a send (blocking or
not, to a random rank with a random tag), a receive (specific or wildcard)
that consumes the earliest eligible in-flight message (non-overtaking per
channel), a nonblocking receive completed later by a wait, a state record,
or all ranks enter a barrier or a bcast.  The records come out in a causal
order; :func:`interleave` shuffles ranks' records into another arrival order.
"""

from __future__ import annotations

import random
from typing import Any

from mpvis.model.errors import ModelInputError
from mpvis.model.manager import ModelManager
from mpvis.protocol.record_types import Record


def random_execution(seed: int, nprocs: int = 3, steps: int = 14) -> tuple[Record, list[Record]]:
    rng = random.Random(seed)
    seq = [0] * nprocs
    out: list[Record] = []
    inflight: list[tuple[int, int, int, int]] = []  # (src, seq, dest, tag) in send order
    reqs = [0] * nprocs
    open_irecv: dict[int, list[tuple[int, int]]] = {r: [] for r in range(nprocs)}  # (req, seq)

    def ev(rank: int, kind: str, **f: Any) -> Record:
        rec = {"rank": rank, "seq": seq[rank], "kind": kind, **f}
        seq[rank] += 1
        out.append(rec)
        return rec

    def eligible(rank: int, src: int, tag: int) -> tuple[int, int, int, int] | None:
        for m in inflight:
            if m[2] == rank and src in (-1, m[0]) and tag in (-1, m[3]):
                return m
        return None

    for _ in range(steps):
        r = rng.randrange(nprocs)
        action = rng.random()
        if action < 0.4:
            dest = rng.choice([q for q in range(nprocs) if q != r] or [r])
            tag = rng.randrange(2)
            blocking = rng.random() < 0.7
            f: dict[str, Any] = {"dest": dest, "tag": tag, "blocking": blocking, "sync": False}
            if not blocking:
                reqs[r] += 1
                f["req"] = reqs[r]
            s = ev(r, "send", **f)
            inflight.append((r, s["seq"], dest, tag))
            if not blocking:
                ev(r, "wait", reqs=[f["req"]])
        elif action < 0.75:
            src = rng.choice([-1, -1, *range(nprocs)])
            tag = rng.choice([-1, 0, 1])
            m = eligible(r, src, tag)
            if m is None:
                continue
            inflight.remove(m)
            if rng.random() < 0.7:
                rv = ev(r, "recv", src=src, tag=tag, blocking=True)
                ev(r, "consume", recv=rv["seq"], src=m[0], tag=m[3], send=[m[0], m[1]])
            else:
                reqs[r] += 1
                rv = ev(r, "recv", src=src, tag=tag, blocking=False, req=reqs[r])
                if rng.random() < 0.5:
                    ev(r, "state", vars={"x": rng.randrange(5)})
                ev(r, "consume", recv=rv["seq"], src=m[0], tag=m[3], send=[m[0], m[1]])
                ev(r, "wait", reqs=[reqs[r]])
        elif action < 0.85:
            op, root = rng.choice([("barrier", None), ("bcast", rng.randrange(nprocs)),
                                   ("reduce", rng.randrange(nprocs))])
            extra = {} if root is None else {"root": root}
            order = list(range(nprocs))
            rng.shuffle(order)
            for q in order:
                ev(q, "coll", op=op, **extra)
            rng.shuffle(order)
            for q in order:
                ev(q, "coll_exit", op=op)
        else:
            ev(r, "state", vars={"x": rng.randrange(5), "phase": rng.choice(["a", "b"])})
    del open_irecv
    for q in range(nprocs):
        if rng.random() < 0.8:
            ev(q, "final")
    header = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": nprocs}
    return header, out


def interleave(recs: list[Record], rng: random.Random) -> list[Record]:
    """The same records, each rank's in order, ranks interleaved at random."""
    per_rank: dict[int, list[Record]] = {}
    for r in recs:
        per_rank.setdefault(r["rank"], []).append(r)
    queues = {k: list(reversed(v)) for k, v in per_rank.items()}
    out = []
    while queues:
        k = rng.choice(sorted(queues))
        out.append(queues[k].pop())
        if not queues[k]:
            del queues[k]
    return out


def feed_in_cuts(m: ModelManager, records: list[Record], cuts: list[int]
                 ) -> list[tuple[str, int | None]]:
    """Add ``records`` to ``m`` in batches of the lengths ``cuts``, then finish it; a
    batch that breaks a rule goes on after its bad record.  The errors, each with
    its index in its batch (``None``: at the finish)."""
    errors: list[tuple[str, int | None]] = []
    i = 0
    for k in cuts:
        chunk = records[i:i + k]
        i += k
        while chunk:
            try:
                m.add_batch(chunk)
                chunk = []
            except ModelInputError as exc:
                errors.append((str(exc), exc.index))
                chunk = chunk[(exc.index or 0) + 1:]
    try:
        m.finish()
    except ModelInputError as exc:
        errors.append((str(exc), None))
    return errors


def model_outcome(m: ModelManager) -> tuple[Any, ...]:
    """What a model made of its records: the clocks of its released events, its
    potential races and every rank's status (to compare two ways of feeding it)."""
    clocks = [m.vector_clock(r, s) for r in range(m.nprocs) for s in range(m.count(r))
              if s < m.done[r]]
    races = [r.to_report() for r in m.potential_races()]
    return clocks, races, [m.status(r) for r in range(m.nprocs)]
