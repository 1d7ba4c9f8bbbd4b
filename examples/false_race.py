"""A race the classifier must call *false* (run with exactly 3 ranks).

Rank 0 receives twice with ``recv(ANY_SOURCE, ANY_TAG)``.  Rank 1 sends its
message at once.  Rank 2 first waits for a "go" that rank 0 sends only after
its first receive completed, then sends.  The second message is sent after
the first one was consumed, so it could never have been taken by the first
receive: the pair looks like a race (situation 16 of MPVisualizer's Table 1)
but its verdict is ``false`` (consumption of the first message happened
before the send of the second).  No deadlock.
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

if rank == 0:
    first = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
    comm.send("go", dest=2, tag=9)
    second = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
    print(f"received {first!r} then {second!r}")
elif rank == 1:
    comm.send("from 1", dest=0, tag=1)
elif rank == 2:
    comm.recv(source=0, tag=9)
    comm.send("from 2", dest=0, tag=2)
