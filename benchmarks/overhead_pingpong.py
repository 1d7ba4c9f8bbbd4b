"""Overhead of the trace library: ping-pong and many-to-one wildcard exchange.

Usage: ``python benchmarks/overhead_pingpong.py [--reps 5] [--ranks 4]``

Runs the same MPI program twice per pattern, plain (``python prog``) and traced
(``python -m mpvis.instrument.launch prog`` writing a trace to a temporary
``MPVIS_TRACE_DIR``), and prints, per message size, the time per message and
the overhead in percent.  Patterns:

* ``pingpong`` (2 ranks): rank 0 sends, rank 1 replies, both with blocking
  calls; object calls (``send``/``recv``) and buffer calls (``Send``/``Recv``).
* ``manytoone`` (``--ranks``): every other rank sends to rank 0, which
  receives with ``recv(source=ANY_SOURCE, tag=ANY_TAG)``.

Targets (issue 3): ping-pong overhead at most 30% at 1 byte and at most 5% at
1 MiB.  Each figure is the best of ``--reps`` timed rounds inside one run, so
start-up and the first round's warm-up are excluded.  Timings are noisy on a
shared 2-core machine: compare runs made close together.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (1, 1024, 1 << 20)
ROOT = Path(__file__).resolve().parent.parent


def _iterations(size: int) -> int:
    return 20_000 if size <= 1024 else 300


def worker(pattern: str, api: str, reps: int) -> None:
    """The MPI program itself: prints ``RESULT <size> <seconds per message>`` on rank 0."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, nprocs = comm.Get_rank(), comm.Get_size()
    for size in SIZES:
        n = _iterations(size) if pattern == "pingpong" else max(_iterations(size) // 4, 50)
        data = bytearray(size)
        buf = bytearray(size)
        best = float("inf")
        for _ in range(reps + 1):  # the first round warms up
            comm.Barrier()
            t0 = time.perf_counter()
            if pattern == "pingpong":
                _pingpong(comm, rank, api, n, data, buf)
                per_msg = (time.perf_counter() - t0) / (2 * n)
            else:
                _manytoone(comm, rank, nprocs, api, n, data, buf)
                per_msg = (time.perf_counter() - t0) / (n * (nprocs - 1))
            best = min(best, per_msg)
        if rank == 0:
            print(f"RESULT {size} {best:.9f}", flush=True)


def _pingpong(comm, rank, api, n, data, buf) -> None:  # type: ignore[no-untyped-def]  # noqa: PLR0917
    if api == "obj":
        for _ in range(n):
            if rank == 0:
                comm.send(data, 1, 0)
                comm.recv(source=1, tag=0)
            elif rank == 1:
                comm.send(comm.recv(source=0, tag=0), 0, 0)
    else:
        for _ in range(n):
            if rank == 0:
                comm.Send(data, 1, 0)
                comm.Recv(buf, 1, 0)
            elif rank == 1:
                comm.Recv(buf, 0, 0)
                comm.Send(buf, 0, 0)


def _manytoone(comm, rank, nprocs, api, n, data, buf) -> None:  # type: ignore[no-untyped-def]  # noqa: PLR0917
    from mpi4py import MPI

    if rank == 0:
        for _ in range(n * (nprocs - 1)):
            if api == "obj":
                comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
            else:
                comm.Recv(buf, MPI.ANY_SOURCE, MPI.ANY_TAG)
        comm.Barrier()
    else:
        for i in range(n):
            if api == "obj":
                comm.send(data, 0, i % 4)
            else:
                comm.Send(data, 0, i % 4)
        comm.Barrier()


def _run(pattern: str, api: str, ranks: int, reps: int, traced: bool) -> dict[int, float]:
    py = sys.executable
    mpiexec = str(Path(py).with_name("mpiexec"))
    prog = [str(Path(__file__).resolve()), "--worker", pattern, api, "--reps", str(reps)]
    cmd = [mpiexec, "-n", str(ranks), py]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPVIS_")}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        if traced:
            cmd += ["-m", "mpvis.instrument.launch"]
            env["MPVIS_TRACE_DIR"] = tmp
        out = subprocess.run(
            cmd + prog, env=env, capture_output=True, text=True, timeout=600, check=True
        ).stdout
    return {int(m[1]): float(m[2]) for m in re.finditer(r"RESULT (\d+) ([\d.e-]+)", out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", nargs=2, metavar=("PATTERN", "API"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=4, help="ranks of the many-to-one pattern")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.reps)
        return
    print(
        f"{'pattern':<10} {'api':<4} {'size':>8} {'plain us':>10} {'traced us':>10} {'overhead':>9}"
    )
    for pattern, ranks in (("pingpong", 2), ("manytoone", args.ranks)):
        for api in ("obj", "buf"):
            plain = _run(pattern, api, ranks, args.reps, traced=False)
            traced = _run(pattern, api, ranks, args.reps, traced=True)
            for size in SIZES:
                p, t = plain[size] * 1e6, traced[size] * 1e6
                print(
                    f"{pattern:<10} {api:<4} {size:>8} {p:>10.2f} {t:>10.2f} "
                    f"{(t - p) / p * 100:>8.1f}%",
                    flush=True,
                )


if __name__ == "__main__":
    main()
