"""A rank finishes while the others wait in a barrier (run with 2 or more ranks; 3 in the tests).

Every rank except the last calls ``Barrier``; the last one returns at once.
The others wait forever.  Expected with mpvis: a ``collective`` deadlock
(Roy et al., case 3: a rank terminated while others wait in a collective);
with the ring check on (the default) the end-of-run check reports it and
aborts the job.
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()

if rank != size - 1:
    comm.Barrier()
