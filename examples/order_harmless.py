"""Message races that cannot change the result (3+ ranks; 4 in the tests).

Every worker sends rank 0 its partial result; rank 0 takes them with
``recv(source=ANY_SOURCE)`` in whatever order they arrive and adds them up
(addition of integers: any order gives the same sum), then sends every
worker the total with named sources.  The receives race, harmlessly.

Expected with mpvis: ``mpvis check`` reports races between rank 0's
receives; ``mpvis explore`` replays the other delivery orders, finds the
same output, messages and exit status for each, and exits 0.
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()

if rank == 0:
    total = 0
    for _ in range(size - 1):
        total += comm.recv(source=MPI.ANY_SOURCE, tag=7)
    for dest in range(1, size):
        comm.send(total, dest=dest, tag=8)
    print(f"sum: {total}")
else:
    comm.send(rank * rank, dest=0, tag=7)
    total = comm.recv(source=0, tag=8)
    print(f"rank {rank} got the sum {total}")
