"""The ``call`` field of the mpi4py trace library, on real ``mpiexec`` runs.

Every record an MPI call produces carries the call's number (a per-rank
counter from 0; docs/trace-format.md): both halves of a Sendrecv and its
consume, a blocking receive and its consume, a collective's ``coll`` and
``coll_exit``, a completion's consumes and its ``wait``, the postings of one
``Startall``.  The checks below derive what must share a call from the
records themselves (receive -> consume -> wait links), independently of how
the recorder numbers them; and the orderings of a traced run pair a
Sendrecv's halves by these numbers.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from mpvis.protocol.record_types import Record
from tests.fixtures import model_of
from tests.instrument.test_trace_mpi import EXAMPLES, run_inline, run_traced, validate

pytestmark = pytest.mark.mpi

CALLS = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI

    import mpvis.instrument as mpvis

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    buf = np.zeros(2)
    world.send(("obj", rank), dest=right, tag=1)                  # blocking object calls
    world.recv(source=left, tag=1)
    world.Sendrecv(np.full(2, rank, dtype=float), dest=right, sendtag=2,
                   recvbuf=buf, source=left, recvtag=2)             # a Sendrecv
    world.sendrecv(rank, dest=left, sendtag=3, source=right, recvtag=3)
    world.sendrecv(rank, dest=left, sendtag=4, source=MPI.PROC_NULL)  # a send half only
    world.sendrecv(None, dest=MPI.PROC_NULL, source=right, recvtag=4)  # a receive half only
    mpvis.state(step=1)                                            # no MPI call
    reqs = [world.Irecv(np.zeros(2), source=MPI.ANY_SOURCE, tag=5),
            world.irecv(source=left, tag=6)]
    reqs += [world.Isend(np.ones(2), dest=right, tag=5), world.isend("x", dest=right, tag=6)]
    MPI.Request.Waitall(reqs)                                       # consumes, then one wait
    total = world.allreduce(rank)                                   # coll, coll_exit
    world.Barrier()
    rbuf, sbuf = np.zeros(1), np.full(1, float(rank))
    persistent = [world.Recv_init(rbuf, source=left, tag=7),
                  world.Send_init(sbuf, dest=right, tag=7)]
    for _ in range(2):
        MPI.Prequest.Startall(persistent)                           # two postings, one call
        MPI.Request.Waitall(persistent)
    for p in persistent:
        p.Free()
    r = world.Irecv(np.zeros(1), source=left, tag=8)
    world.Send(np.zeros(1), dest=right, tag=8)
    while not r.Test():                                             # a test that completes
        pass
    if rank == 0:
        print("CALLS OK", total)
""")


def _by_rank(events: list[Record]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = defaultdict(list)
    for r in events:
        out[r["rank"]].append(r)
    return out


def _must_share(recs: list[Record]) -> list[tuple[int, int]]:
    """Pairs of seqs that are surely one MPI call, read from the records' links."""
    pairs = []
    waits = [r for r in recs if r["kind"] == "wait"]
    for r in recs:
        kind, seq = r["kind"], r["seq"]
        if kind == "consume":
            recv = recs[r["recv"]]
            if recv["blocking"]:
                pairs.append((recv["seq"], seq))  # a blocking receive and its consume
            else:  # the completion that recorded it: the first wait after it naming it
                w = next(w for w in waits if w["seq"] > seq and recv["req"] in w["reqs"])
                pairs.append((seq, w["seq"]))
        elif kind == "coll_exit":
            coll = max((c for c in recs if c["kind"] == "coll" and c["seq"] < seq),
                       key=lambda c: c["seq"])
            pairs.append((coll["seq"], seq))
        elif kind == "recv" and r["blocking"] and seq > 0:
            prev = recs[seq - 1]
            if prev["kind"] == "send" and prev.get("site") == r.get("site"):
                pairs.append((prev["seq"], seq))  # a Sendrecv's halves (one line)
    return pairs


def test_every_record_of_one_call_shares_its_number(tmp_path: Path) -> None:
    _, events = run_inline(tmp_path, "calls", CALLS, 3, "CALLS OK")
    for rank, recs in _by_rank(events).items():
        for r in recs:
            assert (r["kind"] == "state") == ("call" not in r), r
        numbered = [r for r in recs if "call" in r]
        calls = [r["call"] for r in numbered]
        assert calls[0] == 0 and all(type(c) is int for c in calls)
        # calls increase with seq (one thread), each a block of consecutive records
        assert calls == sorted(calls), rank
        assert sorted(set(calls)) == list(range(len(set(calls))))
        pairs = _must_share(recs)
        assert pairs
        for a, b in pairs:
            assert recs[a]["call"] == recs[b]["call"], (rank, recs[a], recs[b])
        # what must be apart is apart: every send but a Sendrecv's or a Startall's
        # starts a call, and so does every collective entry
        starts = {r["seq"] for r in recs if r["kind"] == "coll"}
        starts |= {r["seq"] for r in recs if r["kind"] == "send" and r["blocking"]}
        starts |= {r["seq"] for r in recs if r["kind"] == "recv" and r["blocking"]
                   and not (recs[r["seq"] - 1]["kind"] == "send"
                            and recs[r["seq"] - 1].get("site") == r.get("site"))}
        for s in starts:
            assert s == 0 or recs[s - 1].get("call") != recs[s]["call"], recs[s]
        # Sendrecv: send, recv and consume are one call; Startall's two postings too
        for r, nxt in itertools.pairwise(recs):
            if (r["kind"] == "send" and r["blocking"] and nxt["kind"] == "recv"
                    and nxt.get("site") == r.get("site")):
                assert len({recs[r["seq"] + i]["call"] for i in range(3)}) == 1
        started = [r for r in recs if r["kind"] in ("send", "recv") and not r["blocking"]
                   and r.get("tag") == 7]
        assert len(started) == 4
        assert started[0]["call"] == started[1]["call"] != started[2]["call"]
        assert started[2]["call"] == started[3]["call"]


def _orderings(trace: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-m", "mpvis", "orderings", str(trace), "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out


def test_orderings_of_an_mpi4py_trace_pair_sendrecv_by_call(tmp_path: Path) -> None:
    """Figure 10's program traced: the POEG pairs the halves by ``call`` (no site
    needed) and counts the paper's 6,268 orderings at 2 iterations on 3 ranks."""
    from mpvis.analysis.poeg import poeg_of

    program = EXAMPLES / "neighbor_exchange.py"
    proc, lines = run_traced(program, 3, tmp_path, "2")
    assert proc.returncode == 0, proc.stderr
    header, events = validate(lines, program)
    model = model_of(header, events)
    assert poeg_of(model).pairing == ("call", "call", "call")
    trace = tmp_path / "fig10.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in lines))
    counted = _orderings(trace)
    assert counted["orderings"] == 6268
    ranks = counted["ranks"]
    assert isinstance(ranks, list) and [part["pairing"] for part in ranks] == ["call"] * 3
    # the same trace with neither calls nor sites: halves in program order, fewer orderings
    bare = tmp_path / "bare.jsonl"
    stripped = [lines[0]] + [{k: v for k, v in r.items() if k not in ("call", "site")}
                             for r in lines[1:]]
    bare.write_text("".join(json.dumps(r) + "\n" for r in stripped))
    fewer = _orderings(bare)["orderings"]
    assert isinstance(fewer, int) and fewer < 6268
