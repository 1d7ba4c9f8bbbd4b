"""Overhead of the PMPI trace library on a C ping-pong (issue 13: at most 20% at 1 B, 2% at 1 MiB).

Usage: ``python benchmarks/overhead_c.py [--reps 15] [--sizes 1,1048576]``

Builds ``benchmarks/c/pingpong.c`` with the pip MPICH's ``mpicc`` and the
trace library for that MPI (:func:`mpvis.cli.native.build_library`, the same
build ``mpvis run`` uses), then runs it once on 2 ranks under ``mpiexec`` with
the library preloaded, shipping its records over TCP to a collector stand-in
in this process that reads and discards them (so every record really is
encoded and sent).  Inside the run, traced rounds (``MPI_Send``/``MPI_Recv``,
through the wrappers) alternate with untraced ones (``PMPI_Send``/
``PMPI_Recv``, the same MPI without them): both are measured in the same
processes at the same moment.  Prints, per message size, the best round of
each kind (time per round trip), the overhead of the best rounds and the
median over adjacent (untraced, traced) pairs, the steadier figure on a
machine whose speed drifts; and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead_pingpong import _discarding_collector  # noqa: E402

from mpvis.cli.native import build_library, find_mpicc  # noqa: E402
from mpvis.collector.mpiexec import find_mpiexec  # noqa: E402

TARGETS = {1: 20.0, 1 << 20: 2.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--sizes", default="1,1048576", help="message sizes in bytes")
    args = parser.parse_args()
    mpiexec = find_mpiexec()
    if mpiexec is None:
        sys.exit("mpiexec not found (pip install mpich)")
    mpicc = find_mpicc(mpiexec)
    lib = build_library(mpicc)
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "pingpong"
        subprocess.run(
            [mpicc, "-O2", "-g", "-o", str(exe), str(ROOT / "benchmarks" / "c" / "pingpong.c")],
            check=True,
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("MPVIS_")}
        env["MPVIS_COLLECTOR"] = _discarding_collector()
        load = os.getloadavg()
        cmd = [mpiexec, "-n", "2", "env", f"LD_PRELOAD={lib.path}", str(exe), str(args.reps),
               *args.sizes.split(",")]
        out = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=1800, check=True
        ).stdout
    cores = os.cpu_count() or 1
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({cores} cores); {args.reps} pairs of rounds per size")
    if load[0] > cores - 1:
        print("(the machine was busy: the two ranks poll while they wait, so other work "
              "on its cores inflates both kinds of round unevenly; measure on an idle machine)")
    print(f"{'size':>8} {'plain us':>10} {'traced us':>10} {'overhead':>9} {'paired median':>14}"
          f" {'target':>7}")
    for m in re.finditer(r"RESULT (\d+) ([\d.e+-]+) ([\d.e+-]+) ([\d.e+-]+)", out):
        size, plain, traced, paired = int(m[1]), float(m[2]), float(m[3]), float(m[4])
        target = TARGETS.get(size)
        print(
            f"{size:>8} {plain * 1e6:>10.2f} {traced * 1e6:>10.2f} "
            f"{(traced - plain) / plain * 100:>8.1f}% {(paired - 1) * 100:>13.1f}%"
            f" {'≤' + format(target, 'g') + '%' if target else '':>7}",
            flush=True,
        )


if __name__ == "__main__":
    main()
