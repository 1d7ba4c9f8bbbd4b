"""Overhead of the trace library: ping-pong and many-to-one wildcard exchange.

Usage: ``python benchmarks/overhead_pingpong.py [--reps 15] [--ranks 4] [--sizes 1,1024,1048576]
[--apis obj,buf] [--patterns pingpong,manytoone]``

One ``mpiexec`` run per pattern, every rank under the trace library
(``python -m mpvis.instrument.launch``) and shipping its records over TCP to
a collector stand-in in this process (which reads and discards them, so the
records really are encoded and sent).  Inside the run, rounds on the traced
``MPI.COMM_WORLD`` alternate with rounds on an untraced copy of it
(``MPI.Intracomm(MPI.COMM_WORLD)``, plain mpi4py, with mpi4py's own pickle
functions and the flusher thread paused: :func:`mpvis.instrument.baseline.untraced`).
Prints, per API and message size, the best round of each kind (time per message) and two
overheads: of the best rounds, and the median over adjacent (untraced, traced)
pairs of rounds, which share the machine's state of the moment.  On a shared
machine whose speed drifts by several percent, the paired median is the
steadier figure.  Patterns:

* ``pingpong`` (2 ranks): rank 0 sends, rank 1 replies, both with blocking
  calls; object calls (``send``/``recv``) and buffer calls (``Send``/``Recv``).
* ``manytoone`` (``--ranks``): every other rank sends to rank 0, which
  receives with a wildcard source and tag.

Targets (issue 3): ping-pong overhead at most 30% at 1 byte and at most 5% at
1 MiB.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

SIZES = (1, 1024, 1 << 20)
APIS = ("obj", "buf")
ROOT = Path(__file__).resolve().parent.parent


def _iterations(size: int) -> int:
    """Messages per round: a round lasts a few tenths of a second, several times
    the flusher's longest delay (50 ms), so traced rounds pay their flushes."""
    return 50_000 if size <= 1024 else 100


def worker(pattern: str, reps: int, sizes: tuple[int, ...], apis: tuple[str, ...]) -> None:
    """The MPI program: prints ``RESULT api size plain traced`` (seconds per message) on rank 0."""
    from mpi4py import MPI

    from mpvis.instrument.baseline import untraced

    traced = MPI.COMM_WORLD
    plain = MPI.Intracomm(traced)  # the same communicator, untraced
    rank, nprocs = traced.Get_rank(), traced.Get_size()
    for api in apis:
        for size in sizes:
            n = _iterations(size)
            data, buf = bytearray(size), bytearray(size)
            best = {"plain": float("inf"), "traced": float("inf")}
            ratios: list[float] = []
            last_plain = float("inf")
            for rep in range(2 * reps + 2):  # the first round of each kind warms up
                kind = ("plain", "traced")[rep % 2]
                comm = plain if kind == "plain" else traced
                with untraced() if kind == "plain" else nullcontext():
                    plain.Barrier()
                    t0 = time.perf_counter()
                    if pattern == "pingpong":
                        _pingpong(comm, rank, api, n, data, buf)
                        msgs = 2 * n
                    else:
                        _manytoone(comm, rank, nprocs, api, n, data, buf)
                        msgs = n * (nprocs - 1)
                    plain.Barrier()
                    per_msg = (time.perf_counter() - t0) / msgs
                if rep >= 2:
                    best[kind] = min(best[kind], per_msg)
                    if kind == "traced":
                        ratios.append(per_msg / last_plain)
                if kind == "plain":
                    last_plain = per_msg
            if rank == 0:
                paired = statistics.median(ratios)
                print(
                    f"RESULT {api} {size} {best['plain']:.9f} {best['traced']:.9f} {paired:.6f}",
                    flush=True,
                )


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
    else:
        for i in range(n):
            if api == "obj":
                comm.send(data, 0, i % 4)
            else:
                comm.Send(data, 0, i % 4)


def _discarding_collector() -> str:
    """A TCP server that accepts rank connections and throws their bytes away."""
    server = socket.create_server(("127.0.0.1", 0))

    def drain(conn: socket.socket) -> None:
        with conn:
            while conn.recv(1 << 20):
                pass

    def serve() -> None:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=drain, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return f"127.0.0.1:{server.getsockname()[1]}"


def _run(
    pattern: str, ranks: int, options: list[str], collector: str
) -> list[tuple[str, int, float, float, float]]:
    py = sys.executable
    mpiexec = str(Path(py).with_name("mpiexec"))
    cmd = [
        mpiexec,
        "-n",
        str(ranks),
        py,
        "-m",
        "mpvis.instrument.launch",
        str(Path(__file__).resolve()),
        "--worker",
        pattern,
        *options,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPVIS_")}
    env.update(PYTHONPATH=str(ROOT), MPVIS_COLLECTOR=collector)
    out = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=1200, check=True
    ).stdout
    return [
        (m[1], int(m[2]), float(m[3]), float(m[4]), float(m[5]))
        for m in re.finditer(r"RESULT (\w+) (\d+) ([\d.e-]+) ([\d.e-]+) ([\d.e-]+)", out)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", metavar="PATTERN")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--ranks", type=int, default=4, help="ranks of the many-to-one pattern")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="message sizes in bytes")
    parser.add_argument("--apis", default=",".join(APIS), help="obj, buf or both")
    parser.add_argument("--patterns", default="pingpong,manytoone")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    apis = tuple(args.apis.split(","))
    if args.worker:
        worker(args.worker, args.reps, sizes, apis)
        return
    options = ["--reps", str(args.reps), "--sizes", args.sizes, "--apis", args.apis]
    collector = _discarding_collector()
    print(
        f"{'pattern':<10} {'api':<4} {'size':>8} {'plain us':>10} {'traced us':>10} {'overhead':>9}"
        f" {'paired median':>14}"
    )
    patterns = {"pingpong": 2, "manytoone": args.ranks}
    cores = os.cpu_count() or 1
    for pattern in args.patterns.split(","):
        ranks = patterns[pattern]
        if ranks > cores:
            print(
                f"({pattern}: {ranks} ranks on {cores} cores; MPI ranks poll while they wait,"
                " so these figures measure the scheduler more than the trace library)",
                flush=True,
            )
        for api, size, plain, traced, paired in _run(pattern, ranks, options, collector):
            p, t = plain * 1e6, traced * 1e6
            print(
                f"{pattern:<10} {api:<4} {size:>8} {p:>10.2f} {t:>10.2f} "
                f"{(t - p) / p * 100:>8.1f}% {(paired - 1) * 100:>13.1f}%",
                flush=True,
            )


if __name__ == "__main__":
    main()
