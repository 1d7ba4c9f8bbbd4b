"""Brute-force oracle for the zero-buffer re-execution of :mod:`mpvis.analysis.unsafe_sends`.

Written from the raw records alone (no model, no requirement table): a global
state is how many events each rank has executed; from every state every
enabled event is tried (all interleavings, breadth first) and the states where
nothing is enabled are collected.  Whether an event is enabled is decided by
looking the conditions up in the records each time:

* after a blocking, non-buffered send (not the send half of a Sendrecv), the
  rank's next step needs the receive that consumed the message to be posted;
  after a Sendrecv's consume, the same for its send half;
* a consume needs its send (``send`` field) to have run;
* a wait needs the receive of each nonblocking send it completes to be posted;
* a collective's exit needs the spec's entries (every member, the root, or
  every member at the root).

The stuck ranks' unmet conditions give wait-for edges ``(src, dst, kind)``.
"""

from __future__ import annotations

from collections import deque

from mpvis.protocol.record_types import Record as Rec

Edge = tuple[int, int, str]

ALL = {"barrier", "allreduce", "allgather", "alltoall", "scan", "exscan"}
FROM_ROOT = {"bcast", "scatter"}
TO_ROOT = {"reduce", "gather"}


class Oracle:
    def __init__(self, records: list[Rec]) -> None:
        self.n = records[0]["nprocs"]
        self.ev: list[list[Rec]] = [[] for _ in range(self.n)]
        for rec in records[1:]:
            self.ev[rec["rank"]].append(rec)
        for evs in self.ev:
            evs.sort(key=lambda r: r["seq"])

    # -- conditions, looked up in the records -------------------------------------------

    def _receiver_posted(self, r: int, s: int, pc: tuple[int, ...]) -> tuple[bool, int]:
        dest = self.ev[r][s]["dest"]
        for q in range(self.n):
            for rec in self.ev[q]:
                if rec["kind"] == "consume" and rec.get("send") == [r, s]:
                    return pc[q] > rec["recv"], q
        return False, dest

    def _is_pair(self, r: int, s: int) -> bool:
        evs = self.ev[r]
        return ("call" in evs[s] and s + 1 < len(evs) and evs[s + 1]["kind"] == "recv"
                and evs[s + 1]["blocking"] and evs[s + 1].get("call", evs[s]["call"])
                == evs[s]["call"])

    def _blocking_send(self, r: int, s: int) -> bool:
        rec = self.ev[r][s]
        return rec["kind"] == "send" and rec["blocking"] and rec.get("mode") != "buffered"

    def unmet(self, r: int, k: int, pc: tuple[int, ...]) -> list[Edge]:
        """Conditions of rank ``r``'s step ``k`` (``k`` = its event count: past its end)."""
        evs = self.ev[r]
        out: list[Edge] = []

        def need(ok: bool, who: int, kind: str) -> None:
            if not ok:
                out.append((r, who, kind))

        if k > 0 and self._blocking_send(r, k - 1) and not self._is_pair(r, k - 1):
            need(*self._receiver_posted(r, k - 1, pc), "send")
        if (k >= 3 and evs[k - 1]["kind"] == "consume" and evs[k - 1]["recv"] == k - 2
                and self._blocking_send(r, k - 3) and self._is_pair(r, k - 3)):
            need(*self._receiver_posted(r, k - 3, pc), "send")
        if k == len(evs):  # past the end: a trace ending in a collective is inside it
            if evs and evs[-1]["kind"] == "coll":
                out.extend(self._coll(r, k - 1, pc))
            return out
        rec = evs[k]
        if rec["kind"] == "consume" and rec.get("send") is not None:
            q, qs = rec["send"]
            need(pc[q] > qs, q, "recv")
        elif rec["kind"] == "wait":
            for req in rec["reqs"]:
                j = max(i for i in range(k) if evs[i].get("req") == req
                        and evs[i]["kind"] in ("send", "recv"))
                if evs[j]["kind"] == "send" and evs[j].get("mode") != "buffered":
                    need(*self._receiver_posted(r, j, pc), "send")
        elif k > 0 and evs[k - 1]["kind"] == "coll" and rec["kind"] == "coll_exit":
            out.extend(self._coll(r, k - 1, pc))
        return out

    def _coll(self, r: int, j: int, pc: tuple[int, ...]) -> list[Edge]:
        entry = self.ev[r][j]
        comm = entry.get("comm", 0)
        nth = sum(1 for e in self.ev[r][:j] if e["kind"] == "coll" and e.get("comm", 0) == comm)
        op, root = entry["op"], entry.get("root")
        if op in ALL:
            who = list(range(self.n))
        elif op in FROM_ROOT:
            who = [root]
        elif op in TO_ROOT and root == r:
            who = list(range(self.n))
        else:
            who = []
        out = []
        for q in who:
            if q == r:
                continue
            colls = [e for e in self.ev[q] if e["kind"] == "coll" and e.get("comm", 0) == comm]
            if nth >= len(colls) or pc[q] <= colls[nth]["seq"]:
                out.append((r, q, "collective"))
        return out

    # -- exhaustive search ---------------------------------------------------------------

    def terminal_states(self) -> set[tuple[int, ...]]:
        """Every state of the search from which no rank can step."""
        start = (0,) * self.n
        seen = {start}
        queue = deque([start])
        ends: set[tuple[int, ...]] = set()
        while queue:
            pc = queue.popleft()
            moved = False
            for r in range(self.n):
                if pc[r] <= len(self.ev[r]) and not self.unmet(r, pc[r], pc):
                    moved = True
                    nxt = (*pc[:r], pc[r] + 1, *pc[r + 1 :])
                    if nxt not in seen:
                        seen.add(nxt)
                        queue.append(nxt)
            if not moved:
                ends.add(pc)
        return ends

    def edges(self, pc: tuple[int, ...]) -> list[Edge]:
        return [e for r in range(self.n) if pc[r] <= len(self.ev[r])
                for e in self.unmet(r, pc[r], pc)]


def has_send_cycle(edges: list[Edge]) -> bool:
    """Whether some directed cycle uses a send edge (depth-first reachability)."""
    succ: dict[int, set[int]] = {}
    for a, b, _ in edges:
        succ.setdefault(a, set()).add(b)
    for a, b, kind in edges:
        if kind != "send":
            continue
        stack, seen = [b], {b}
        while stack:
            u = stack.pop()
            if u == a:
                return True
            for v in succ.get(u, ()):
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
    return False
