"""Figure 10 of Schaeli et al.: a neighbourhood exchange with Send, Sendrecv and Recv.

Each rank holds one slice of a 1-D domain.  Every iteration each rank sends
its lower border to the rank above and its top border to the rank below,
with ``Send``/``Recv`` on the end ranks and ``Sendrecv`` in the middle, then
updates its slice from the borders it received.  Named sources only: no
message race, and every delivery order the POEG admits gives the same result.

Run: ``mpiexec -n 3 python examples/neighbor_exchange.py [ITERATIONS]`` (3
by default).  ``mpvis orderings`` on its trace reproduces section 7 of the
paper: 60, 6268 and about 6.5e5 orderings for 1, 2 and 3 iterations on 3
ranks; 2*2*ITERATIONS per middle rank after decomposition.
"""

import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
np_ = comm.Get_size()
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 3

cells = np.full(4, float(rank))
below = np.zeros(1)  # lower border of rank - 1
above = np.zeros(1)  # top border of rank + 1
for _ in range(iterations):
    lower, top = cells[-1:].copy(), cells[:1].copy()
    if rank == 0:
        comm.Send(lower, dest=1, tag=0)
    elif rank < np_ - 1:
        comm.Sendrecv(lower, dest=rank + 1, sendtag=0, recvbuf=below, source=rank - 1, recvtag=0)
    else:
        comm.Recv(below, source=np_ - 2, tag=0)
    if rank == 0:
        comm.Recv(above, source=1, tag=1)
    elif rank < np_ - 1:
        comm.Sendrecv(top, dest=rank - 1, sendtag=1, recvbuf=above, source=rank + 1, recvtag=1)
    else:
        comm.Send(top, dest=np_ - 2, tag=1)
    # update the subdomain from the borders received
    left = below[0] if rank > 0 else cells[0]
    right = above[0] if rank < np_ - 1 else cells[-1]
    padded = np.concatenate(([left], cells, [right]))
    cells = (padded[:-2] + padded[1:-1] + padded[2:]) / 3.0

total = comm.allreduce(float(cells.sum()))
if rank == 0:
    print(f"sum after {iterations} iterations: {total:.6f}")
