"""A wrong result that only another Waitany completion order shows (3+ ranks; 3 in the tests).

Rank 0 posts one ``Irecv`` per worker (named sources: no message race) and
handles the results in the order ``Waitany`` returns them, folding them with
``acc = acc * 10 + value``: the fold assumes they complete in rank order (the
bug).  Worker ``i`` computes for ``i * 0.2`` seconds first, so in the natural
schedule they do, and every run prints the same number.

Expected with mpvis: ``mpvis explore`` forces the other completion orders of
the ``Waitany`` calls (``mpvis replay --anys``) and reports those that print
another number.
"""

import time
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()

if rank == 0:
    bufs = [array("i", [0]) for _ in range(size - 1)]
    reqs = [comm.Irecv(bufs[i], source=i + 1, tag=3) for i in range(size - 1)]
    acc = 0
    for _ in range(size - 1):
        i = MPI.Request.Waitany(reqs)
        acc = acc * 10 + bufs[i][0]
    print(f"folded: {acc}")
else:
    time.sleep(0.2 * rank)
    comm.Send(array("i", [rank]), dest=0, tag=3)
