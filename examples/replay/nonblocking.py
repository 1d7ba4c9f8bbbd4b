"""Nonblocking wildcard receives, objects and buffers, completed by wait/waitall/waitany.

Rank 0 posts irecv(ANY_SOURCE) for every other rank's message and completes
them with waitall, then posts buffer Irecv(ANY_SOURCE) and completes them one
at a time with Waitany.  Which request gets which sender is decided by arrival.
"""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

if rank == 0:
    reqs = [comm.irecv(source=MPI.ANY_SOURCE, tag=5) for _ in range(size - 1)]
    objs = MPI.Request.waitall(reqs)
    bufs = [array("i", [0]) for _ in range(size - 1)]
    breqs = [comm.Irecv(b, source=MPI.ANY_SOURCE, tag=6) for b in bufs]
    got = []
    for _ in range(size - 1):
        i = MPI.Request.Waitany(breqs)
        got.append((i, bufs[i][0]))
    print("objects", objs, "buffers", got, flush=True)
else:
    comm.send(rank * 10, dest=0, tag=5)
    comm.Send(array("i", [rank * 100]), dest=0, tag=6)
