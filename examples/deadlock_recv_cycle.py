"""A receive-receive deadlock between two ranks (run with exactly 2 ranks).

Ranks 0 and 1 each receive from the other before sending: both block in
``recv`` forever.  Expected with mpvis: a ``p2p`` deadlock of ranks 0 and 1;
the run must be stopped (``mpvis run`` or a timeout).
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
other = 1 - rank

value = comm.recv(source=other, tag=0)
comm.send(rank, dest=other, tag=0)
