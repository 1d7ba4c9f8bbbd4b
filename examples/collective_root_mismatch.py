"""A broadcast whose ranks disagree on the root (run with 2 or more ranks; 4 in the tests).

Rank 0 calls ``Bcast(root=0)``; the other ranks call ``Bcast(root=1)``.  On
MPICH this may finish with wrong data or hang.  Expected with mpvis: a
``collective`` mismatch (Roy et al., case 2: same operation, different
single-valued arguments); the ring check aborts the job with a message.
"""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

buf = array("d", [float(rank)] * 4)
comm.Bcast(buf, root=0 if rank == 0 else 1)
print(f"rank {rank} got {list(buf)}")
