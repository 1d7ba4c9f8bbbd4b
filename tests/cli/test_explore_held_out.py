"""``mpvis explore`` on held-out programs (issue 17, done-when).

Programs written apart from the examples explore was developed on, in other
shapes: the wrong result sits on a middle rank behind nonblocking buffer
receives, only in the final ``state`` variables (nothing printed differs), or
in one iteration of three; and programs whose races are harmless.  Each
wrong result is hidden by the natural schedule (the later sender sleeps
first); explore must find it, and report nothing for the harmless ones,
within 64 runs each.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mpvis.cli.main import main
from mpvis.collector.mpiexec import find_mpiexec

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec"),
]

MIDDLE_LEADER = """
    import time
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if rank == 1:
        bufs = [np.full(1, -1, dtype="i"), np.full(1, -1, dtype="i")]
        reqs = [comm.Irecv(b, source=MPI.ANY_SOURCE, tag=3) for b in bufs]
        MPI.Request.Waitall(reqs)
        print("leader:", int(bufs[0][0]))  # assumes rank 0 always answers first
    else:
        time.sleep(0.3 * rank)
        comm.Send(np.full(1, rank, dtype="i"), dest=1, tag=3)
"""

STATE_ONLY = """
    import time
    from mpi4py import MPI

    import mpvis.instrument as mpvis

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if rank == 0:
        owner = None
        for _ in range(2):
            st = MPI.Status()
            comm.recv(source=MPI.ANY_SOURCE, tag=0, status=st)
            owner = st.Get_source()  # the last to arrive owns the lock
        mpvis.state(owner=owner)
        print("done")
    else:
        time.sleep(0.3 * rank)
        comm.send(rank, dest=0, tag=0)
"""

ONE_ITERATION_OF_THREE = """
    import time
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if rank == 0:
        firsts = []
        for k in range(3):
            a = comm.recv(source=MPI.ANY_SOURCE, tag=k)
            comm.recv(source=MPI.ANY_SOURCE, tag=k)
            firsts.append(a)
        # the bug: only iteration 1 relies on the order
        print("ok" if firsts[1] == 1 else "corrupted")
    else:
        for k in range(3):
            time.sleep(0.2 * rank)
            comm.send(rank, dest=0, tag=k)
"""

HARMLESS_MAX = """
    import time
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if rank == 0:
        got = [comm.recv(source=MPI.ANY_SOURCE, tag=5) for _ in range(size - 1)]
        print("max", max(got), "all", sorted(got))
    else:
        time.sleep(0.1 * rank)
        comm.send(rank * 7, dest=0, tag=5)
"""

HARMLESS_BUFFERS = """
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if rank == 0:
        bufs = [np.zeros(1) for _ in range(size - 1)]
        reqs = [comm.Irecv(b, source=MPI.ANY_SOURCE, tag=9) for b in bufs]
        MPI.Request.Waitall(reqs)
        print("total", float(sum(b[0] for b in bufs)))
    else:
        comm.Send(np.full(1, float(rank)), dest=0, tag=9)
"""


def _explore(tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str,
             nprocs: int) -> tuple[int, dict]:
    program = tmp_path / "held_out.py"
    program.write_text(textwrap.dedent(source))
    code = main(["explore", "-n", str(nprocs), "--json", "--max-runs", "64",
                 "--workdir", str(tmp_path / "work"), "--", str(program)])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("source", "nprocs", "what"),
    [
        (MIDDLE_LEADER, 3, "rank 1 printed 'leader: 2' instead of 'leader: 0'"),
        (STATE_ONLY, 3, "rank 0 ended with owner=1 (recorded 2)"),
        (ONE_ITERATION_OF_THREE, 3, "rank 0 printed 'corrupted' instead of 'ok'"),
    ],
    ids=["middle-rank-buffers", "state-only", "one-iteration-of-three"],
)
def test_finds_the_hidden_wrong_result(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       source: str, nprocs: int, what: str) -> None:
    code, report = _explore(tmp_path, capsys, source, nprocs)
    assert code == 1, report
    assert report["runs"] <= 64 and report["differences"]
    assert report["runs"] <= report["orderings_total"] + 1
    found = [w for d in report["differences"] for w in d["what"]]
    assert any(what in w for w in found), found
    for d in report["differences"]:
        assert "mpvis replay" in d["replay"] and f"--order {d['order']}" in d["replay"]


@pytest.mark.parametrize(("source", "nprocs"), [(HARMLESS_MAX, 4), (HARMLESS_BUFFERS, 4)],
                         ids=["max-of-objects", "sum-of-buffers"])
def test_harmless_races_report_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       source: str, nprocs: int) -> None:
    code, report = _explore(tmp_path, capsys, source, nprocs)
    assert code == 0, report
    assert report["differences"] == [] and report["complete"]
    assert 1 < report["runs"] <= 64
