"""Cost per collective of the in-rank ring check (Roy et al., Sec. V), with and without it.

Usage: ``.venv/bin/python benchmarks/ringcheck.py [--sizes 2,4,8,16,32] [--calls 2000]``.
Launches itself under the venv's ``mpiexec`` for each size (oversubscribed on
small machines: ranks busy-poll, so absolute times there are dominated by
scheduling), times ``calls`` one-int bcasts plain and with
``RingChecker.check`` before each, and prints microseconds per collective.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(calls: int) -> None:
    from mpi4py import MPI

    from mpvis.instrument.ringcheck import RingChecker

    comm = MPI.COMM_WORLD
    ring = RingChecker(comm)
    timings = []
    for checked in (False, True):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            if checked:
                ring.check("bcast", root=0, count=1, dtype="int", site="bench:1")
            comm.bcast(1, root=0)
        comm.Barrier()
        timings.append((time.perf_counter() - t0) / calls * 1e6)
    ring.finalize()
    worst = comm.gather(timings, root=0)
    if comm.Get_rank() == 0 and worst is not None:
        plain = max(t[0] for t in worst)
        checked_t = max(t[1] for t in worst)
        print(f"{comm.Get_size():6d} {plain:12.1f} {checked_t:14.1f} {checked_t - plain:12.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="2,4,8,16,32")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.calls)
        return
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"{os.cpu_count()} cores; us per bcast of one int, slowest rank")
    print(f"{'ranks':>6} {'plain':>12} {'with check':>14} {'overhead':>12}")
    for n in (int(s) for s in args.sizes.split(",")):
        calls = max(50, args.calls * 2 // n)
        cmd = [
            "timeout",
            "-k",
            "5",
            "300",
            str(mpiexec),
            "-n",
            str(n),
            sys.executable,
            __file__,
            "--worker",
            "--calls",
            str(calls),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        out = (
            proc.stdout.strip() or f"{n:6d}  failed (exit {proc.returncode}): {proc.stderr[-200:]}"
        )
        print(out, f"  ({calls} calls)", flush=True)


if __name__ == "__main__":
    main()
