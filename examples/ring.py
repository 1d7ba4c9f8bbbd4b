"""A token ring with no race and no deadlock (run with 2 to 8 ranks; 4 in the tests).

Rank 0 starts a token that travels 0 -> 1 -> ... -> n-1 -> 0 twice: once with
object calls (``send``/``recv``) and once with buffer calls (``Send``/``Recv``),
every receive naming its source and tag.  Then all ranks agree on the sum
of their ranks with ``Allreduce``.  Deterministic: ``mpvis check`` finds no
race and no deadlock.
"""

from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
left, right = (rank - 1) % size, (rank + 1) % size

# Lap 1: objects.
if rank == 0:
    comm.send(["token", 0], dest=right, tag=1)
    token = comm.recv(source=left, tag=1)
else:
    token = comm.recv(source=left, tag=1)
    token[1] += rank
    comm.send(token, dest=right, tag=1)

# Lap 2: buffers.
buf = array("i", [0])
if rank == 0:
    comm.Send(buf, dest=right, tag=2)
    comm.Recv(buf, source=left, tag=2)
else:
    comm.Recv(buf, source=left, tag=2)
    buf[0] += rank
    comm.Send(buf, dest=right, tag=2)

total = array("i", [0])
comm.Allreduce(array("i", [rank]), total, op=MPI.SUM)
if rank == 0:
    print(f"token {token}, buffer lap {buf[0]}, allreduce {total[0]}")
