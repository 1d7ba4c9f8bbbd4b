"""Regenerate the classifier sample traces in sample_traces/situations/.

    python sample_traces/generate.py

For every situation of Table 1 (MPVisualizer paper, section 3.1) and every
consumption case (RCRC, RCR-, R-RC, R-R-), rank 1 posts two receives with the
situation's arguments; ranks 0 and 2 each send one message to rank 1,
concurrently.  A receive marked ``R-`` is nonblocking and never completed, so
every rank still finishes.  The arguments: pid1 = 0, pid2 = 2, tag1 = 1,
tag2 = 1 (equal tags, the racing case of situations 3 and 11) unless the file
name says ``tagsdiffer``; a wildcard source consumes rank 0's message first
(``pid2`` variant of situation 7: rank 2's).  Besides those, the ring,
master-worker, false-race and spurious-race traces described in README.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
Record = dict[str, Any]


class Trace:
    """Builds a valid trace, one rank's events at a time."""

    def __init__(self, nprocs: int, program: str) -> None:
        self.header = {"kind": "header", "format": "mpvis-trace", "version": 1,
                       "nprocs": nprocs, "program": program}
        self.events: list[Record] = []
        self.seq = [0] * nprocs
        self.req = [0] * nprocs

    def ev(self, rank: int, kind: str, line: int, **f: Any) -> Record:
        rec = {"rank": rank, "seq": self.seq[rank], "kind": kind, "t": 0.001 * len(self.events),
               "site": f"{self.header['program']}:{line}", **f}
        self.seq[rank] += 1
        self.events.append(rec)
        return rec

    def send(self, rank: int, dest: int, tag: int, line: int = 10) -> Record:
        return self.ev(rank, "send", line, dest=dest, tag=tag, blocking=True, sync=False)

    def recv(self, rank: int, src: int, tag: int, msg: Record | None, line: int) -> Record:
        """A blocking receive that consumes ``msg``, or a never-completed irecv if None."""
        if msg is None:
            self.req[rank] += 1
            return self.ev(rank, "recv", line, src=src, tag=tag, blocking=False,
                           req=self.req[rank])
        r = self.ev(rank, "recv", line, src=src, tag=tag, blocking=True)
        self.ev(rank, "consume", line, recv=r["seq"], src=msg["rank"], tag=msg["tag"],
                send=[msg["rank"], msg["seq"]])
        return r

    def final(self, *ranks: int) -> None:
        for r in ranks:
            self.ev(r, "final", 99)

    def write(self, path: Path) -> None:
        with open(path, "w") as fh:
            for rec in [self.header, *self.events]:
                fh.write(json.dumps(rec, separators=(",", ":")) + "\n")


ARGS = {  # situation -> (src1, tag1, src2, tag2), Table 1 with pid1=0, pid2=2, tags 1
    n: (-1 if (n - 1) & 2 else 0, -1 if (n - 1) & 1 else 1,
        -1 if (n - 1) & 8 else 2, -1 if (n - 1) & 4 else 1)
    for n in range(1, 17)
}


def situation_trace(n: int, case: str, *, tag2: int | None = None, pid_variant: bool = False
                    ) -> Trace:
    src1, tag1, src2, t2 = ARGS[n]
    if tag2 is not None:
        t2 = tag2
    tr = Trace(3, f"situation{n:02d}.py")
    first_sender = 2 if pid_variant else 0
    m_tag2 = t2 if t2 != -1 else 1
    m1 = tr.send(first_sender, 1, 1, line=5)
    second_sender = 2 if src2 in (-1, 2) else src2
    if pid_variant:
        second_sender = 2
    m2 = tr.send(second_sender, 1, m_tag2, line=6)
    if src1 not in (-1, m1["rank"]):
        raise ValueError("bad construction")
    tr.recv(1, src1, tag1, m1 if case[1] == "C" else None, line=20)
    tr.recv(1, src2, t2, m2 if case[3] == "C" else None, line=21)
    tr.final(0, 1, 2)
    return tr


def ring(n: int = 4, rounds: int = 3) -> Trace:
    """A token passed around the ring: rank 0 sends first, every other rank receives
    first (so the ring is safe even if sends are not buffered)."""
    tr = Trace(n, "ring.py")
    for _ in range(rounds):
        msg = tr.send(0, 1 % n, 0, line=12)
        for r in range(1, n):
            tr.recv(r, r - 1, 0, msg, line=13)
            msg = tr.send(r, (r + 1) % n, 0, line=12)
        tr.recv(0, n - 1, 0, msg, line=13)
    tr.final(*range(n))
    return tr


def master_worker(workers: int = 5, tasks: int = 12) -> Trace:
    """Rank 0 hands out tasks and collects results with recv(-1,-1)."""
    tr = Trace(workers + 1, "master_worker.py")
    pending = []
    for i in range(tasks):
        w = 1 + i % workers
        task = tr.send(0, w, 1, line=30)
        tr.recv(w, 0, 1, task, line=50)
        pending.append(tr.send(w, 0, 2, line=52))
        if len(pending) == workers or i == tasks - 1:
            for msg in reversed(pending):
                tr.recv(0, -1, -1, msg, line=34)
            pending = []
    for w in range(1, workers + 1):
        stop = tr.send(0, w, 9, line=38)
        tr.recv(w, 0, -1, stop, line=50)
    tr.final(*range(workers + 1))
    return tr


def false_race() -> Trace:
    """Rank 1 consumes rank 0's message, then tells rank 2, who only then sends."""
    tr = Trace(3, "false_race.py")
    m1 = tr.send(0, 1, 1, line=8)
    tr.recv(1, -1, -1, m1, line=15)
    go = tr.send(1, 2, 5, line=16)
    tr.recv(2, 1, 5, go, line=22)
    m2 = tr.send(2, 1, 1, line=23)
    tr.recv(1, -1, -1, m2, line=17)
    tr.final(0, 1, 2)
    return tr


def spurious_race() -> Trace:
    """Both messages come from rank 0: FIFO channels, so no race."""
    tr = Trace(2, "spurious.py")
    a = tr.send(0, 1, 1, line=5)
    b = tr.send(0, 1, 1, line=6)
    tr.recv(1, -1, -1, a, line=10)
    tr.recv(1, -1, -1, b, line=11)
    tr.final(0, 1)
    return tr


def main() -> None:
    out = HERE / "situations"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.jsonl"):
        old.unlink()
    for n in range(1, 17):
        for case in ("RCRC", "RCR-", "R-RC", "R-R-"):
            name = case.replace("-", "_")
            situation_trace(n, case).write(out / f"s{n:02d}_{name}.jsonl")
    for n in (3, 11):
        situation_trace(n, "RCRC", tag2=2).write(out / f"s{n:02d}_RCRC_tagsdiffer.jsonl")
    situation_trace(7, "RCRC", pid_variant=True).write(out / "s07_RCRC_pid2.jsonl")
    situation_trace(7, "RCR-", pid_variant=True).write(out / "s07_RCR__pid2.jsonl")
    ring().write(HERE / "ring.jsonl")
    master_worker().write(HERE / "master_worker.jsonl")
    false_race().write(HERE / "false_race.jsonl")
    spurious_race().write(HERE / "spurious_race.jsonl")


if __name__ == "__main__":
    main()
