"""All-to-all exchange received with wildcards, several rounds: every receive races.

Each rank sends its value to every other rank, then receives size-1 messages
with ANY_SOURCE and folds them in arrival order (the fold is order-dependent),
and the next round sends the folded value.
"""

import sys

from mpi4py import MPI

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
value = rank + 1
order: list[int] = []
for rnd in range(ROUNDS):
    for d in range(size):
        if d != rank:
            comm.send(value, dest=d, tag=rnd)
    acc = value
    for _ in range(size - 1):
        st = MPI.Status()
        v = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        order.append(st.Get_source())
        acc = (acc * 31 + v) % 1_000_003
    value = acc
    comm.Barrier()
print("rank", rank, "order", order, "value", value, flush=True)
