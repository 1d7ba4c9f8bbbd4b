"""A wrong result that only a non-default delivery order shows (3+ ranks; 4 in the tests).

Every worker sends rank 0 its partial result; rank 0 takes them with
``recv(source=ANY_SOURCE)`` and folds them with ``acc = acc * 10 + value``,
which silently assumes they arrive in rank order (the bug: the fold is not
commutative).  Worker ``i`` computes for ``i * 0.2`` seconds first, so in the
natural schedule they always do arrive in rank order and every run prints
the same, right-looking number.

Expected with mpvis: ``mpvis check`` reports races between rank 0's
receives; ``mpvis explore`` replays the other delivery orders and reports
those that print another number (exit status 1).
"""

import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()

if rank == 0:
    acc = 0
    for _ in range(size - 1):
        acc = acc * 10 + comm.recv(source=MPI.ANY_SOURCE, tag=7)
    print(f"folded: {acc}")
else:
    time.sleep(0.2 * rank)
    comm.send(rank, dest=0, tag=7)
