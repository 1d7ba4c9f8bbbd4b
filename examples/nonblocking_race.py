"""A race among nonblocking wildcard receives (run with 3 or more ranks; 4 in the tests).

Rank 0 posts one ``Irecv(ANY_SOURCE, ANY_TAG)`` per other rank and completes
them with ``Waitall``; the other ranks ``Isend`` one buffer each and wait.
Which sender's message each receive takes depends on timing: the receives
race (legitimate).  The consumes are recorded at the ``Waitall``, just before
its ``wait`` record.  After a barrier, a second round does the same with object calls
(``irecv``/``isend`` and ``MPI.Request.waitall``).  No deadlock.
"""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()

if rank == 0:
    bufs = [array("i", [0]) for _ in range(size - 1)]
    reqs = [comm.Irecv(b, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG) for b in bufs]
    MPI.Request.Waitall(reqs)
    comm.Barrier()  # so no object message can reach a buffer receive of round 1
    reqs = [comm.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG) for _ in range(size - 1)]
    objs = MPI.Request.waitall(reqs)
    print(f"buffers {[b[0] for b in bufs]}, objects {objs}")
else:
    comm.Isend(array("i", [rank]), dest=0, tag=rank).Wait()
    comm.Barrier()
    comm.isend(f"from {rank}", dest=0, tag=rank).wait()
