"""A message race on a wildcard receive (run with 3 or more ranks; 4 in the tests).

Every rank except 0 sends rank 0 one message; rank 0 receives them with
``recv(source=ANY_SOURCE, tag=ANY_TAG)``.  The order in which rank 0 consumes
them depends on timing: each pair of adjacent wildcard receives is a
*legitimate* race (MPVisualizer, Table 1, situation 16).

Expected with mpvis: ``mpvis check`` reports races between rank 0's receives;
no deadlock.
"""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()

if rank == 0:
    got = []
    for _ in range(size - 1):
        status = MPI.Status()
        value = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
        got.append((status.Get_source(), value))
    print(f"rank 0 received in this order: {[src for src, _ in got]}")
else:
    comm.send(rank * 10, dest=0, tag=rank)
