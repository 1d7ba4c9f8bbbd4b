"""Every conflicting (match, send) pair of a whole trace (Cypher and Leu, Theorem 2.2).

The off-line counterpart of :class:`mpvis.analysis.exact_races.ExactRaceDetector`
(for ``mpvis check --all-conflicts`` and the window's ghost lines).  Events and
matches are mapped as in :mod:`mpvis.analysis.exact_events`; the graph of R_h
(section 2.5) is built explicitly with rule 4 reduced to the pairs that matter
(R_m((s1, r1), (s2, r2)) where r2 was posted before r1's consume: otherwise the
path through r1's consume and r2 already orders them, as in Theorem 4.1).
Instead of Type B clocks (section 3.2) a reverse topological pass computes, for
every node x and rank q, ``first[x, q]``: the least seq of a rank-q event that
x happened before.  A send s2 of rank q is then ordered after a match m iff
``s2.seq >= first[m, q]``, and the conflicts of a wildcard-source match are one
vectorised numpy mask over the sends to its rank.  Time is linear in events
plus reduced edges (plus one mask per wildcard match); memory is a
(nodes x nprocs) int32 array.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from mpvis.analysis.exact_events import ANY, COMM_KINDS, ExactRace, exit_sources, resolve_sends

__all__ = ["all_conflicts", "conflicting_sends"]

from mpvis.protocol.record_types import Record

Key = tuple[int, int]
_INF = np.iinfo(np.int32).max


class _Graph:
    """The R_h graph of a whole trace and its first-descendant table."""

    def __init__(self, records: Iterable[Record], nprocs: int) -> None:
        recs = [
            dict(r) if r.get("kind") == "consume" and r.get("send") is None else r
            for r in records
            if r.get("kind") in COMM_KINDS and 0 <= r.get("rank", -1) < nprocs
        ]
        recs.sort(key=lambda r: (r["rank"], r["seq"]))
        resolve_sends(recs)
        self.nprocs = nprocs
        self.recs = recs
        n = len(recs)
        self.succ: list[list[int]] = [[] for _ in range(n)]
        sends: dict[Key, int] = {}
        recvs: dict[Key, int] = {}
        prior: dict[int, list[int]] = {}
        sync_done: dict[int, int] = {}  # sync send -> the event after its WS
        entries: dict[tuple[int, int], dict[int, int]] = {}
        exits: list[tuple[tuple[int, int], int]] = []
        consumes: list[int] = []
        prev_rank = -1
        opened: list[int] = []
        reqs: dict[int, int] = {}
        ncoll: dict[int, int] = {}
        waiting: int | None = None
        for i, rec in enumerate(recs):
            rank = rec["rank"]
            if rank != prev_rank:
                prev_rank, opened, reqs, ncoll, waiting = rank, [], {}, {}, None
            else:
                self.succ[i - 1].append(i)  # rule 1
                if waiting is not None:
                    sync_done[waiting] = i
                    waiting = None
            kind = rec["kind"]
            if kind == "send":
                sends[(rank, rec["seq"])] = i
                if not rec.get("blocking", True):
                    reqs[rec["req"]] = i
                elif rec.get("sync", False):
                    waiting = i
            elif kind == "recv":
                recvs[(rank, rec["seq"])] = i
                prior[i] = list(opened)
                opened.append(i)
            elif kind == "consume":
                consumes.append(i)
                r = recvs.get((rank, rec["recv"]))
                if r in opened:
                    opened.remove(r)
            elif kind == "wait":
                for q in rec.get("reqs", ()):
                    s = reqs.pop(q, None)
                    if s is not None and recs[s].get("sync", False):
                        sync_done[s] = i
            elif kind == "coll":
                comm = rec.get("comm", 0)
                k = ncoll.get(comm, 0)
                ncoll[comm] = k + 1
                entries.setdefault((comm, k), {})[rank] = i
            else:
                comm = rec.get("comm", 0)
                exits.append(((comm, ncoll.get(comm, 0) - 1), i))
        for inst, i in exits:  # the spec's collective edges
            members = entries.get(inst)
            if not members:
                continue
            first = recs[next(iter(members.values()))]
            for q in exit_sources(first.get("op", ""), recs[i]["rank"], first.get("root"), members):
                if q in members:
                    self.succ[members[q]].append(i)
        # Matches: node n + k.  Rules 2 and 3.
        self.msend: list[int] = []
        self.mrecv: list[int] = []
        match_of: dict[int, int] = {}
        for c in consumes:
            rec = recs[c]
            send = rec.get("send")
            s = sends.get((send[0], send[1])) if send is not None else None
            r = recvs.get((rec["rank"], rec["recv"]))
            if s is None or r is None or recs[s]["dest"] != rec["rank"] or s in match_of:
                continue
            m = n + len(self.msend)
            self.succ.append([c])
            self.succ[s].append(m)
            self.succ[r].append(m)
            if s in sync_done:
                self.succ[m].append(sync_done[s])
            match_of[s] = m
            match_of[r] = m
            self.msend.append(s)
            self.mrecv.append(r)
        # Rule 4, reduced to receives open when the later one was posted.
        for k, r2 in enumerate(self.mrecv):
            s2 = recs[self.msend[k]]
            for p in prior[r2]:
                m1 = match_of.get(p)
                if m1 is not None and self._related(m1 - n, k, s2):
                    self.succ[m1].append(n + k)
        self.match_of = match_of
        self.first = self._first_descendants()

    def _related(self, k1: int, k2: int, s2: Record) -> bool:
        recs = self.recs
        s1, r1, r2 = recs[self.msend[k1]], recs[self.mrecv[k1]], recs[self.mrecv[k2]]
        if r1.get("comm", 0) != r2.get("comm", 0):
            return False
        if r1["src"] in (ANY, s2["rank"]) and r1["tag"] in (ANY, s2["tag"]):
            return True
        return s1["rank"] == s2["rank"] and s1["seq"] < s2["seq"] and r2["tag"] in (ANY, s1["tag"])

    def _first_descendants(self) -> np.ndarray[Any, np.dtype[np.int32]]:
        """``first[x, q]``: least seq of a rank-q event that node x happened before."""
        succ = self.succ
        total = len(succ)
        indeg = [0] * total
        for out in succ:
            for v in out:
                indeg[v] += 1
        order = [v for v in range(total) if indeg[v] == 0]
        for v in order:  # Kahn: ``order`` grows while it is walked
            for w in succ[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    order.append(w)
        first = np.full((total, self.nprocs), _INF, dtype=np.int32)
        n = len(self.recs)
        recs = self.recs
        minimum = np.minimum
        for v in reversed(order):  # a cycle (inconsistent input) leaves its nodes at INF
            out = succ[v]
            if out:
                row = first[v]
                for w in out:
                    minimum(row, first[w], out=row)
                    if w < n:
                        rec = recs[w]
                        q = rec["rank"]
                        row[q] = min(row[q], rec["seq"])
        return first

    def conflicts_of(self, k: int) -> list[ExactRace]:
        """The sends that conflict with match number ``k`` (empty unless its source is ANY)."""
        recs = self.recs
        r1 = recs[self.mrecv[k]]
        if r1["src"] != ANY:
            return []
        s1 = recs[self.msend[k]]
        rank, comm, tag = r1["rank"], r1.get("comm", 0), r1["tag"]
        cand = self._sends_to(rank)
        src, seq, stag, scomm, matched = cand
        mask = (scomm == comm) & (src != s1["rank"]) & (matched > r1["seq"])
        if tag != ANY:
            mask &= stag == tag
        mask &= seq < self.first[len(recs) + k][src]
        return [
            ExactRace(rank, r1["seq"], (s1["rank"], s1["seq"]), (int(a), int(b)))
            for a, b in zip(src[mask], seq[mask], strict=True)
        ]

    def _sends_to(self, rank: int) -> tuple[np.ndarray[Any, Any], ...]:
        cache: dict[int, tuple[np.ndarray[Any, Any], ...]] = self.__dict__.setdefault("_cache", {})
        if rank not in cache:
            rows = []
            for i, rec in enumerate(self.recs):
                if rec["kind"] == "send" and rec["dest"] == rank:
                    m = self.match_of.get(i)
                    matched = self.recs[self.mrecv[m - len(self.recs)]]["seq"] if m else _INF
                    rows.append((rec["rank"], rec["seq"], rec["tag"], rec.get("comm", 0), matched))
            arr = np.array(rows, dtype=np.int64).reshape(-1, 5)
            cache[rank] = tuple(arr[:, j] for j in range(5))
        return cache[rank]


def all_conflicts(records: Iterable[Record], nprocs: int) -> list[ExactRace]:
    """Every match and send that conflict, sorted (``mpvis check --all-conflicts``).

    ``records`` are trace-format records in any order consistent per rank (the
    header and non-event records are ignored); consumes without ``send`` are
    matched by the non-overtaking rule.  The execution has a race iff the list
    is not empty (Theorem 2.2).
    """
    graph = _Graph(records, nprocs)
    out: list[ExactRace] = []
    for k in range(len(graph.mrecv)):
        out.extend(graph.conflicts_of(k))
    out.sort()
    return out


def conflicting_sends(
    records: Iterable[Record], nprocs: int, rank: int, recv_seq: int
) -> list[Key]:
    """The sends ``(rank, seq)`` that conflict with the match of receive ``recv_seq`` of ``rank``.

    Empty when that receive is unmatched or its source is not a wildcard.
    """
    graph = _Graph(records, nprocs)
    for k, r in enumerate(graph.mrecv):
        rec = graph.recs[r]
        if rec["rank"] == rank and rec["seq"] == recv_seq:
            return sorted(race.s2 for race in graph.conflicts_of(k))
    return []
