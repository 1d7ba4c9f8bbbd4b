"""A three-rank wait-for cycle (run with exactly 3 ranks).

Rank r first does a little work with its right neighbour's message in mind:
it receives from rank (r + 1) % 3 before sending to rank (r + 2) % 3, so
0 waits for 1, 1 waits for 2 and 2 waits for 0.  Expected with mpvis: a
``p2p`` deadlock of ranks 0, 1 and 2; the run must be stopped.
"""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

buf = array("i", [0])
comm.Recv(buf, source=(rank + 1) % 3, tag=5)
comm.Send(array("i", [rank]), dest=(rank + 2) % 3, tag=5)
