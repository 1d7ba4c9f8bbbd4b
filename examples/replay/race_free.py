"""A ring with named sources only: no receive can race, nothing is recorded."""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
token = 0
for _ in range(5):
    if rank == 0:
        comm.send(token + 1, dest=1 % size, tag=0)
        token = comm.recv(source=size - 1, tag=0)
    else:
        token = comm.recv(source=rank - 1, tag=0)
        comm.send(token + 1, dest=(rank + 1) % size, tag=0)
print("rank", rank, "token", token, flush=True)
