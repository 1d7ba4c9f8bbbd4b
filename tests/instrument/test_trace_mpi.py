"""Real ``mpiexec`` runs (2 to 4 ranks) of the examples under the trace library.

Each traced run writes ``MPVIS_TRACE_DIR/rank-<r>.jsonl``; the tests check
every record against the spec (:func:`check_record`), that each consume names
the very send it matched (an independent oracle: the matched send must exist,
go to the consumer, carry the consumed tag, and every send must be consumed at
most once), that wildcards are ``-1``, that sites point into the program, and
what ``mpvis check`` finds.  Every run is bounded by ``timeout``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mpvis.protocol.chansend import resolve_sends
from mpvis.protocol.record_types import Record
from mpvis.protocol.records import check_header, check_record
from tests.fixtures import shape_error

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MPIEXEC = Path(sys.executable).parent / "mpiexec"

if not MPIEXEC.exists():  # pragma: no cover
    pytest.skip("no mpiexec next to this Python", allow_module_level=True)


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPVIS_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_traced(
    program: Path, n: int, tmp: Path, *args: str, limit: int = 60, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[Record]]:
    """Run ``program`` on ``n`` ranks under the launch module; return the process and trace."""
    trace_dir = tmp / f"trace-{program.stem}"
    cmd = [
        "timeout",
        "-k",
        "5",
        str(limit),
        str(MPIEXEC),
        "-n",
        str(n),
        sys.executable,
        "-m",
        "mpvis.instrument.launch",
        str(program),
        *args,
    ]
    proc = subprocess.run(
        cmd,
        env=_env({"MPVIS_TRACE_DIR": str(trace_dir), **(env or {})}),
        capture_output=True,
        text=True,
        timeout=limit + 30,
        check=False,
    )
    lines: list[Record] = []
    for r in range(n):
        path = trace_dir / f"rank-{r}.jsonl"
        if path.exists():
            lines += [json.loads(x) for x in path.read_text().splitlines()]
    # Rank files keep the channel ordinals of buffer consumes; name their sends
    # as the central process would.
    return proc, lines[:1] + resolve_sends(lines[1:])


def validate(
    lines: list[Record], program: Path, *, causal_times: bool = True
) -> tuple[Record, list[Record]]:
    """Check the trace: header, records, seq, matching of consumes to sends, sites,
    and (``causal_times``) that each consume comes after its send in time."""
    header, events = lines[0], lines[1:]
    check_header(header)
    n = header["nprocs"]
    for r in events:
        check_record(r, nprocs=n)
        assert shape_error(r) is None, r  # fits its typed class (record_types)
    by_rank: dict[int, list[Record]] = {}
    for r in events:
        by_rank.setdefault(r["rank"], []).append(r)
    for recs in by_rank.values():
        assert [r["seq"] for r in recs] == list(range(len(recs)))
    sends = {(r["rank"], r["seq"]): r for r in events if r["kind"] == "send"}
    recvs = {(r["rank"], r["seq"]): r for r in events if r["kind"] == "recv"}
    taken: set[tuple[int, int]] = set()
    for c in (r for r in events if r["kind"] == "consume"):
        recv = recvs[(c["rank"], c["recv"])]
        assert recv["src"] in (-1, c["src"]) and recv["tag"] in (-1, c["tag"])
        assert recv.get("comm", 0) == c.get("comm", 0)
        if "send" in c:
            s = sends[tuple(c["send"])]
            assert (s["dest"], s["tag"], s.get("comm", 0)) == (
                c["rank"],
                c["tag"],
                c.get("comm", 0),
            )
            assert tuple(c["send"]) not in taken
            taken.add(tuple(c["send"]))
            # one time origin for all ranks (one machine, one clock): no message
            # arrives before it left
            assert c["t"] > s["t"] or not causal_times, (s, c)
    for r in events:
        if "site" in r and r["kind"] not in ("final",):
            assert r["site"].startswith(f"{program}:"), r
    return header, events


def mpvis_check(lines: list[Record], tmp: Path) -> dict[str, Any]:
    path = tmp / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    proc = subprocess.run(
        [sys.executable, "-m", "mpvis", "check", str(path), "--json"],
        env=_env({}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def kinds(events: list[Record], rank: int) -> list[str]:
    return [r["kind"] for r in events if r["rank"] == rank]


# -- programs that end -----------------------------------------------------------------------


def test_race_wildcard(tmp_path: Path) -> None:
    prog = EXAMPLES / "race_wildcard.py"
    proc, lines = run_traced(prog, 4, tmp_path)
    assert proc.returncode == 0, proc.stderr
    _, events = validate(lines, prog)
    recvs = [r for r in events if r["kind"] == "recv"]
    assert len(recvs) == 3 and all(r["src"] == -1 and r["tag"] == -1 for r in recvs)
    consumes = [r for r in events if r["kind"] == "consume"]
    assert sorted(c["send"] for c in consumes) == [[1, 0], [2, 0], [3, 0]]
    assert all(kinds(events, r)[-1] == "final" for r in range(4))
    report = mpvis_check(lines, tmp_path)
    legit = [x for x in report["races"] if x["verdict"] == "legitimate" and x["rank"] == 0]
    assert legit and not report["deadlocks"]


def test_ring_objects_buffers_and_allreduce(tmp_path: Path) -> None:
    prog = EXAMPLES / "ring.py"
    proc, lines = run_traced(prog, 4, tmp_path)
    assert proc.returncode == 0, proc.stderr
    _, events = validate(lines, prog)
    consumes = [r for r in events if r["kind"] == "consume"]
    assert len(consumes) == 8 and all("send" in c for c in consumes)
    colls = [r for r in events if r["kind"] == "coll"]
    assert {(c["op"], c.get("redop"), c.get("count"), c.get("dtype")) for c in colls} == {
        ("allreduce", "sum", 1, "int")
    }
    report = mpvis_check(lines, tmp_path)
    assert report["races"] == [] and report["deadlocks"] == []


def test_nonblocking_race_consumes_before_wait(tmp_path: Path) -> None:
    prog = EXAMPLES / "nonblocking_race.py"
    proc, lines = run_traced(prog, 4, tmp_path)
    assert proc.returncode == 0, proc.stderr
    _, events = validate(lines, prog)
    r0 = [r for r in events if r["rank"] == 0]
    for w in (r for r in r0 if r["kind"] == "wait"):
        before = r0[w["seq"] - len(w["reqs"]) : w["seq"]]
        assert [b["kind"] for b in before] == ["consume"] * len(w["reqs"])
        assert sorted(b["recv"] for b in before) == sorted(w["reqs"])
    assert sum(1 for r in r0 if r["kind"] == "consume" and "send" in r) == 6
    report = mpvis_check(lines, tmp_path)
    assert any(x["verdict"] == "legitimate" for x in report["races"])


def test_false_race(tmp_path: Path) -> None:
    prog = EXAMPLES / "false_race.py"
    proc, lines = run_traced(prog, 3, tmp_path)
    assert proc.returncode == 0, proc.stderr
    validate(lines, prog)
    report = mpvis_check(lines, tmp_path)
    assert [x["verdict"] for x in report["races"] if x["method"] == "classifier"] == ["false"]


def test_master_worker_and_state_vars(tmp_path: Path) -> None:
    prog = EXAMPLES / "master_worker.py"
    proc, lines = run_traced(prog, 4, tmp_path, "9")
    assert proc.returncode == 0 and "sum of squares below 9: 204" in proc.stdout
    _, events = validate(lines, prog)
    assert all("send" in r for r in events if r["kind"] == "consume")
    prog = EXAMPLES / "state_vars.py"
    proc, lines = run_traced(prog, 3, tmp_path)
    assert proc.returncode == 0, proc.stderr
    _, events = validate(lines, prog)
    states = [r["vars"] for r in events if r["kind"] == "state" and r["rank"] == 1]
    assert states[0] == {"x": 1, "phase": "update", "step": 0}
    assert states[-1]["phase"] == "done"


# -- every wrapped call, on a derived communicator ---------------------------------------------

COVERAGE = textwrap.dedent("""
    from array import array
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    sub = world.Split(rank % 2, -rank)   # two comms; local ranks reversed
    me, n = sub.Get_rank(), sub.Get_size()
    peer = (me + 1) % n
    # objects: sendrecv, isend/irecv + waitany/testall, probe, mprobe
    got = sub.sendrecv(("obj", rank), dest=peer, sendtag=1, source=MPI.ANY_SOURCE, recvtag=1)
    assert got[0] == "obj"
    r = [sub.irecv(source=MPI.ANY_SOURCE, tag=2), sub.isend(rank, dest=peer, tag=2)]
    i, v = MPI.Request.waitany(r)
    while not MPI.Request.testall(r)[0]:
        pass
    sub.send("probed", dest=peer, tag=3)
    st = MPI.Status()
    sub.probe(source=MPI.ANY_SOURCE, tag=3, status=st)
    assert st.Get_source() == (me - 1) % n and st.Get_tag() == 3
    assert sub.mprobe(source=MPI.ANY_SOURCE, tag=3).recv() == "probed"
    # buffers: Sendrecv, Issend/Irecv + Waitsome/Testsome, Probe sees the user's count
    out, inb = array("i", [rank, rank]), array("i", [0, 0])
    sub.Sendrecv(out, dest=peer, sendtag=4, recvbuf=inb, source=MPI.ANY_SOURCE, recvtag=4)
    reqs = [sub.Irecv(inb, source=MPI.ANY_SOURCE, tag=5), sub.Issend(out, dest=peer, tag=5)]
    done = MPI.Request.Waitsome(reqs)
    while MPI.Request.Testsome(reqs) is not None:
        pass
    sub.Send(out, dest=peer, tag=6)
    sub.Probe(source=MPI.ANY_SOURCE, tag=6, status=st)
    assert st.Get_count(MPI.INT) == 2
    sub.Recv(inb, source=st.Get_source(), tag=6)
    req = sub.Irecv(inb, source=MPI.ANY_SOURCE, tag=7)
    sub.Ssend(out, dest=peer, tag=7)
    req.Wait()
    # collectives on the derived comm, object and buffer forms
    assert sub.bcast(rank, root=1) is not None
    total = array("i", [0, 0])
    sub.Reduce(out, total, op=MPI.MAX, root=0)
    sub.Barrier()
    world.Barrier()
    if rank == 0:
        print("COVERAGE OK")
""")


def run_inline(
    tmp: Path, name: str, source: str, n: int, done: str
) -> tuple[subprocess.CompletedProcess[str], list[Record]]:
    """Run the program text ``source`` on ``n`` ranks; it must end normally and
    print ``done``.  Returns the process and the validated events."""
    prog = tmp / f"{name}.py"
    prog.write_text(source)
    proc, lines = run_traced(prog, n, tmp)
    assert proc.returncode == 0 and done in proc.stdout, proc.stderr
    return proc, validate(lines, prog)[1]


def test_every_wrapped_call_on_a_derived_communicator(tmp_path: Path) -> None:
    _, events = run_inline(tmp_path, "coverage", COVERAGE, 4, "COVERAGE OK")
    consumes = [r for r in events if r["kind"] == "consume"]
    assert len(consumes) == 4 * 7  # per rank: 3 object receives, 4 buffer receives
    assert all("send" in c for c in consumes)  # no ambiguous completion in this program
    sub_ids = {r["comm"] for r in events if r["kind"] == "coll" and r["op"] == "bcast"}
    assert len(sub_ids) == 2 and 0 not in sub_ids  # the two halves are different comms
    for r in events:
        if r["kind"] in ("send", "consume") and r["comm"] != 0:
            peer = r["dest"] if r["kind"] == "send" else r["src"]
            assert peer % 2 == r["rank"] % 2  # world ranks, within the rank's half
    first = [r for r in events if r["kind"] == "coll" and r["comm"] != 0]
    groups = {r["rank"]: r["group"] for r in first if "group" in r}
    assert groups == {0: [2, 0], 1: [3, 1], 2: [2, 0], 3: [3, 1]}
    bcasts = [r for r in events if r["kind"] == "coll" and r["op"] == "bcast"]
    assert {(r["rank"] % 2, r["root"]) for r in bcasts} == {(0, 0), (1, 1)}
    reduces = [r for r in events if r["kind"] == "coll" and r["op"] == "reduce"]
    assert {(r["redop"], r["count"], r["dtype"]) for r in reduces} == {("max", 2, "int")}
    syncs = [r for r in events if r["kind"] == "send" and r["sync"]]
    assert len(syncs) == 8 and {r["blocking"] for r in syncs} == {True, False}


FAST_PATH = textwrap.dedent("""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    other = 1 - rank
    if rank == 0:
        world.send("a", 1)                               # positional, default tag
        world.send("b", dest=1, tag=5)                   # keywords
        world.send(obj="c", dest=1, tag=6)
        world.send("d", MPI.PROC_NULL)                   # no peer: not traced
        for bad in (lambda: world.send("x", dest=1, colour=2), lambda: world.send("x"),
                    lambda: world.send("x", 1, 2, tag=3)):
            try:
                bad()
            except TypeError as exc:
                print("TypeError:", exc)
    else:
        assert world.recv() == "a"                       # every argument defaulted
        st = MPI.Status()
        assert world.recv(None, MPI.ANY_SOURCE, MPI.ANY_TAG, st) == "b"
        assert (st.Get_source(), st.Get_tag()) == (0, 5)
        assert world.recv(source=0, tag=6) == "c"
        assert world.recv(source=MPI.PROC_NULL) is None
    buf = bytearray(4)
    if rank == 0:
        world.Send(b"abcd", 1)                           # buffers: default tag
        world.Send(buf=b"efgh", dest=1, tag=7)
        world.Send(b"ijkl", MPI.PROC_NULL)
    else:
        world.Recv(buf)                                  # every argument defaulted
        assert buf == b"abcd"
        st = MPI.Status()
        world.Recv(buf, source=MPI.ANY_SOURCE, tag=7, status=st)
        assert buf == b"efgh" and (st.Get_source(), st.Get_tag()) == (0, 7)
        world.Recv(buf, source=MPI.PROC_NULL)
    world.Barrier()
    if rank == 0:
        print("FAST OK")
""")


def test_object_send_recv_in_c_accept_mpi4py_call_forms(tmp_path: Path) -> None:
    proc, events = run_inline(tmp_path, "fast", FAST_PATH, 2, "FAST OK")
    assert proc.stdout.count("TypeError:") == 3
    assert "unexpected keyword argument 'colour'" in proc.stdout
    assert "missing required argument 'dest'" in proc.stdout
    assert "multiple values for argument 'tag'" in proc.stdout
    sends = [r for r in events if r["kind"] == "send"]
    assert [(r["dest"], r["tag"]) for r in sends] == [(1, 0), (1, 5), (1, 6), (1, 0), (1, 7)]
    recvs = [r for r in events if r["kind"] == "recv"]
    assert [(r["src"], r["tag"]) for r in recvs] == [(-1, -1), (-1, -1), (0, 6), (-1, -1), (-1, 7)]
    consumes = [r for r in events if r["kind"] == "consume"]
    # the real source and tag of a wildcard receive, and the very send, with or
    # without the caller's Status (objects by piggyback, buffers by channel)
    assert [(c["src"], c["tag"], c["send"]) for c in consumes] == [
        (0, t, [0, s["seq"]]) for t, s in zip((0, 5, 6, 0, 7), sends, strict=True)
    ]
    lines_of = FAST_PATH.splitlines()
    for r in sends + recvs + consumes:
        line = int(r["site"].rsplit(":", 1)[1])
        assert any(f in lines_of[line - 1] for f in ("send(", "recv(", "Send(", "Recv(")), r


PERSISTENT = textwrap.dedent("""
    from array import array
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    buf = array("i", [0])
    if rank == 0:
        send = comm.Send_init(buf, 1, 3)                 # persistent, started 3 times
        ssend = comm.Ssend_init(buf, 1, 4)
        for i in range(3):
            buf[0] = i
            send.Start()
            send.Wait()
        MPI.Prequest.Startall([ssend])
        MPI.Request.Waitall([ssend])
        comm.Send(buf, 1, 3)                             # a plain send on the same channel
        for r in (send, ssend):
            r.Free()
    else:
        recv = comm.Recv_init(buf, MPI.ANY_SOURCE, 3)
        got = []
        for _ in range(3):
            recv.Start()
            st = MPI.Status()
            recv.Wait(st)
            got.append((buf[0], st.Get_source()))
        assert recv.Test()                               # inactive: completes at once, no record
        assert got == [(0, 0), (1, 0), (2, 0)], got
        other = array("i", [0])
        sync = comm.Recv_init(other, 0, 4)
        sync.Start()
        assert MPI.Request.Waitall([sync]) and other[0] == 2
        comm.Recv(buf, 0, 3)
        for r in (recv, sync):
            r.Free()
        print("PERSISTENT OK")
""")


def test_persistent_requests_are_traced_at_every_start(tmp_path: Path) -> None:
    """Each Start is a posting event; its completion the consume and the wait;
    the channel count includes persistent sends, so every consume names its send."""
    _, events = run_inline(tmp_path, "persistent", PERSISTENT, 2, "PERSISTENT OK")
    sends = [r for r in events if r["kind"] == "send"]
    assert [(r["tag"], r["blocking"], r["sync"]) for r in sends] == [
        (3, False, False),
        (3, False, False),
        (3, False, False),
        (4, False, True),
        (3, True, False),
    ]
    assert all(r["req"] == r["seq"] for r in sends[:4])
    recvs = [r for r in events if r["kind"] == "recv"]
    assert [(r["src"], r["tag"], r["blocking"]) for r in recvs] == [
        (-1, 3, False),
        (-1, 3, False),
        (-1, 3, False),
        (0, 4, False),
        (0, 3, True),
    ]
    consumes = [r for r in events if r["kind"] == "consume"]
    assert [c["send"] for c in consumes] == [[0, s["seq"]] for s in sends]
    assert [c["recv"] for c in consumes] == [r["seq"] for r in recvs]
    waits = [r for r in events if r["kind"] == "wait"]
    assert [w["reqs"] for w in waits if w["rank"] == 1] == [[r["seq"]] for r in recvs[:4]]


# -- programs that never end -----------------------------------------------------------------


def test_p2p_deadlock_is_recorded_up_to_the_blocked_receives(tmp_path: Path) -> None:
    prog = EXAMPLES / "deadlock_three_cycle.py"
    proc, lines = run_traced(prog, 3, tmp_path, limit=4)
    assert proc.returncode == 124  # killed by the timeout: it hangs
    _, events = validate(lines, prog)
    assert [kinds(events, r) for r in range(3)] == [["recv"]] * 3
    report = mpvis_check(lines, tmp_path)
    assert [(d["kind"], sorted(d["ranks"])) for d in report["deadlocks"]] == [("p2p", [0, 1, 2])]


def test_collective_mismatch_aborts_with_the_trace_kept(tmp_path: Path) -> None:
    prog = EXAMPLES / "collective_order_mismatch.py"
    proc, lines = run_traced(prog, 4, tmp_path, limit=30)
    assert proc.returncode not in (0, 124)  # the ring check aborted the job
    assert "collective mismatch" in proc.stderr
    _, events = validate(lines, prog)
    assert kinds(events, 0)[0] == "coll"
    report = mpvis_check(lines, tmp_path)
    assert [d["kind"] for d in report["deadlocks"]] == ["collective"]


def test_finish_while_barrier_keeps_final(tmp_path: Path) -> None:
    prog = EXAMPLES / "finish_while_barrier.py"
    proc, lines = run_traced(prog, 3, tmp_path, limit=30)
    assert proc.returncode not in (0, 124)
    _, events = validate(lines, prog)
    assert kinds(events, 2) == ["final"]
    report = mpvis_check(lines, tmp_path)
    assert [d["kind"] for d in report["deadlocks"]] == ["collective"]


def test_uncaught_exception_aborts_every_rank(tmp_path: Path) -> None:
    prog = tmp_path / "crash.py"
    prog.write_text(
        textwrap.dedent("""
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 1:
            raise RuntimeError("boom in rank 1")
        comm.recv(source=1, tag=0)   # would wait forever
    """)
    )
    proc, lines = run_traced(prog, 2, tmp_path, limit=30)
    assert proc.returncode not in (0, 124)  # aborted, not hung until the timeout
    assert "boom in rank 1" in proc.stderr
    _, events = validate(lines, prog)
    assert kinds(events, 0) == ["recv"] and kinds(events, 1) == []


# -- the whole pipeline ----------------------------------------------------------------------


def test_mpvis_run_prints_the_race_and_writes_a_valid_trace(tmp_path: Path) -> None:
    out = tmp_path / "race.jsonl"
    cmd = [
        "timeout",
        "-k",
        "5",
        "120",
        sys.executable,
        "-m",
        "mpvis",
        "run",
        "-n",
        "4",
        "--headless",
        "--out",
        str(out),
        "--",
        str(EXAMPLES / "race_wildcard.py"),
    ]
    proc = subprocess.run(
        cmd, env=_env({}), capture_output=True, text=True, timeout=150, check=False, cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr  # 1: races found
    assert "LEGITIMATE" in proc.stdout and "race_wildcard.py:22" in proc.stdout
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    validate(lines, EXAMPLES / "race_wildcard.py")
    report = mpvis_check(lines, tmp_path)
    assert any(x["verdict"] == "legitimate" for x in report["races"])


PICKLES = textwrap.dedent("""
    import pickle
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    plain = MPI.Intracomm(world)                         # the same communicator, untraced
    assert isinstance(MPI.pickle, MPI.Pickle) and MPI.pickle.PROTOCOL == pickle.HIGHEST_PROTOCOL
    assert MPI.pickle.loads(MPI.pickle.dumps({"k": 1})) == {"k": 1}
    calls = []

    def my_dumps(obj, *args):                            # as a program using dill would
        calls.append("dumps")
        return pickle.dumps(obj, *args)

    def my_loads(data):
        calls.append("loads")
        assert bytes(data).endswith(b".")                # exactly its own pickle, no trailer
        return pickle.loads(bytes(data))

    MPI.pickle.__init__(my_dumps, my_loads)
    if rank == 0:
        world.send(("a", 1), 1, 3)                       # C fast path
        world.isend(("b", 2), 1, 4).wait()               # Python path
        plain.send("untraced", 1, 5)                     # no trailer: the send is unknown
        world.send("c", 1, 6)
        world.send("d", 1, 7)
    else:
        assert world.recv(source=0, tag=3) == ("a", 1)
        assert world.irecv(source=0, tag=4).wait() == ("b", 2)
        assert world.recv(source=0, tag=5) == "untraced"
        reqs = [world.irecv(source=0, tag=6), plain.irecv(source=0, tag=7)]
        assert MPI.Request.waitall(reqs) == ["c", "d"]   # traced and untraced in one call
    assert set(calls) == ({"dumps"} if rank == 0 else {"loads"}), calls  # the program's own
    MPI.pickle.__init__()                                # back to mpi4py's defaults
    assert MPI.pickle.PROTOCOL == pickle.HIGHEST_PROTOCOL
    if rank == 0:
        world.send("e", 1, 8)
    else:
        assert world.recv(source=0, tag=8) == "e"
        print("PICKLES OK")
""")


def test_the_piggyback_survives_the_program_replacing_mpi4pys_pickle(tmp_path: Path) -> None:
    _, events = run_inline(tmp_path, "pickles", PICKLES, 2, "PICKLES OK")
    consumes = {c["tag"]: c for c in events if c["kind"] == "consume"}
    sends = {(s["rank"], s["seq"]): s["tag"] for s in events if s["kind"] == "send"}
    # every traced send is named by its consume, through the program's own pickle
    for tag in (3, 4, 6, 8):
        assert sends[tuple(consumes[tag]["send"])] == tag
    assert "send" not in consumes[5]  # the untraced sender: left to the reader's rule
    assert 7 not in consumes  # received by the untraced communicator: no record


MERGED = textwrap.dedent("""
    import sys, time
    from mpi4py import MPI
    from mpvis.instrument.traced_comm import TracedIntracomm

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    rec = TracedIntracomm._mv_rec
    buf = bytearray(2)
    if rank == 0:
        world.send("a", 1, 1)
        world.Send(b"bb", 1, 2)
        world.Barrier()
        time.sleep(float(sys.argv[1]))
        world.send("late", 1, 3)
    else:
        world.Barrier()                                  # both messages are here
        pending, seq = rec.pending(), rec.seq
        assert world.recv(source=0, tag=1) == "a"
        world.Recv(buf, 0, 2)
        print("RECORDS", rec.pending() - pending, "EVENTS", rec.seq - seq)
        assert world.recv(source=0, tag=3) == "late"     # blocks past flushes
        print("MERGED OK")
""")


@pytest.mark.parametrize("flush_ms", ["100000", "5"])
def test_a_receive_and_its_consume_share_a_record_unless_a_flush_came_between(
    tmp_path: Path, flush_ms: str
) -> None:
    """The fast path merges a blocking receive's records (compact kind 9) while
    the recv record is still in the rank's buffer; the trace is the same."""
    prog = tmp_path / "merged.py"
    prog.write_text(MERGED)
    env = {"MPVIS_FLUSH_MS": flush_ms, "MPVIS_FLUSH_QUIET_MS": flush_ms}
    proc, lines = run_traced(prog, 2, tmp_path, "0.2", env=env)
    assert proc.returncode == 0 and "MERGED OK" in proc.stdout, proc.stderr
    events = validate(lines, prog)[1]
    if flush_ms == "100000":  # no flush: the two quick receives took one record each
        assert "RECORDS 2 EVENTS 4" in proc.stdout
    mine = [r for r in events if r["rank"] == 1 and r["kind"] in ("recv", "consume")]
    assert [(r["kind"], r["tag"]) for r in mine] == [
        ("recv", 1),
        ("consume", 1),
        ("recv", 2),
        ("consume", 2),
        ("recv", 3),
        ("consume", 3),
    ]
    for recv, consume in zip(mine[::2], mine[1::2], strict=True):
        assert consume["recv"] == recv["seq"] == consume["seq"] - 1
        assert consume["site"] == recv["site"] and consume["src"] == 0
        assert 0 <= consume["t"] - recv["t"] < 5
    late_recv, late_consume = mine[4:]
    assert late_consume["t"] - late_recv["t"] > 0.1  # the wait, with or without a flush
    assert "send" in mine[1] and "send" in mine[5] and "send" in mine[3]  # buffer: by channel


MATCHED = textwrap.dedent("""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    if world.Get_rank() == 0:
        world.send({"x": 1}, 1, 1)
        world.Send(b"abcd", 1, 2)
    else:
        msg = world.mprobe(source=0, tag=1)
        assert msg.irecv().wait() == {"x": 1}            # object, nonblocking
        buf = bytearray(4)
        st = MPI.Status()
        msg = world.Mprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, st)
        req = msg.Irecv(buf)
        MPI.Request.Waitall([req])
        assert buf == b"abcd" and st.Get_tag() == 2
        print("MATCHED OK")
""")


def test_nonblocking_receives_of_matched_messages_are_traced(tmp_path: Path) -> None:
    _, events = run_inline(tmp_path, "matched", MATCHED, 2, "MATCHED OK")
    mine = [r for r in events if r["rank"] == 1]
    assert [r["kind"] for r in mine] == [
        "recv",
        "consume",
        "wait",
        "recv",
        "consume",
        "wait",
        "final",
    ]
    recvs, consumes = mine[0::3][:2], mine[1::3][:2]
    assert [(r["blocking"], r["req"], r["src"], r["tag"]) for r in recvs] == [
        (False, recvs[0]["seq"], 0, 1),
        (False, recvs[1]["seq"], -1, -1),
    ]
    sends = [r for r in events if r["kind"] == "send"]
    assert [c["send"] for c in consumes] == [[0, s["seq"]] for s in sends]
    assert [c["tag"] for c in consumes] == [1, 2]
