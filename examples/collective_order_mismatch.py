"""Collectives called in different orders (run with 2 or more ranks; 4 in the tests).

Rank 0 calls ``bcast`` then ``barrier``; every other rank calls ``barrier``
then ``bcast``.  MPI may hang, fail with "message truncated" or even finish
with wrong data (see the MPI guide).  Expected with mpvis: a ``collective``
deadlock (Roy et al., case 1: different operations).  Under the trace
library the ring check (``MPVIS_RINGCHECK=1``, the default) reports the
mismatch and aborts the job before it can hang.
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

if rank == 0:
    comm.bcast("hello", root=0)
    comm.barrier()
else:
    comm.barrier()
    comm.bcast(None, root=0)
