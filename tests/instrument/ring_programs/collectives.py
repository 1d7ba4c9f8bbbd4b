"""Calls collectives with a RingChecker; argv[1] names a scenario.

ok        every rank agrees (three collectives), rank 0 prints "ok"
order     rank 1 calls bcast where the others call barrier (its 2nd collective)
root      rank 5 passes root=1 to a bcast whose other ranks pass root=0
finished  the last rank finishes while the others wait in a barrier
raise     like "order", but with abort=False and an on_error hook: a rank that
          catches CollectiveMismatchError prints it and aborts the job itself
"""

from __future__ import annotations

import sys
import time

from mpi4py import MPI

from mpvis.instrument.ringcheck import ABORT_GRACE, CollectiveMismatchError, RingChecker

scenario = sys.argv[1]
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def hook(message: str) -> None:
    print(f"hook on rank {rank}", flush=True)


ring = RingChecker(comm, abort=scenario != "raise", on_error=hook)


def barrier(site: str) -> None:
    ring.check("barrier", site=site)
    comm.Barrier()


def bcast(root: int, site: str) -> None:
    ring.check("bcast", root=root, count=1, dtype="int", site=site)
    comm.bcast(rank, root=root)


barrier("prog:1")
if scenario in ("order", "raise") and rank == 1:
    try:
        bcast(0, "prog:2b")
    except CollectiveMismatchError as e:
        print(f"caught on rank {rank}: {e}", flush=True)
        time.sleep(ABORT_GRACE)  # let mpiexec forward the output before the abort
        comm.Abort(3)
elif scenario == "root":
    bcast(1 if rank == 5 else 0, "prog:2r")
elif scenario == "finished" and rank == size - 1:
    ring.finalize()
    sys.exit(0)
else:
    try:
        barrier("prog:2")
    except CollectiveMismatchError as e:
        print(f"caught on rank {rank}: {e}", flush=True)
        time.sleep(ABORT_GRACE)  # let mpiexec forward the output before the abort
        comm.Abort(3)
ring.check("allreduce", count=1, dtype="int", redop="sum", site="prog:3")
total = comm.allreduce(1)
ring.finalize()
if rank == 0:
    print(f"ok {total}", flush=True)
