"""A message-heavy program for benchmarks/record.py: master-worker or halo exchange.

``python message_heavy.py master_worker N``: rank 0 hands out N small tasks,
receiving every result with ANY_SOURCE (the receives race).
``python message_heavy.py halo N``: N rounds of exchange with both ring
neighbours by named source (no race), then one wildcard gather per 100 rounds.

Rank 0 prints ``elapsed SECONDS`` for the timed part (between two barriers).
"""

import sys

from mpi4py import MPI

pattern = sys.argv[1]
N = int(sys.argv[2])
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
comm.Barrier()
t0 = MPI.Wtime()
if pattern == "master_worker":
    if rank == 0:
        sent = 0
        for w in range(1, size):
            comm.send(sent, dest=w, tag=1)
            sent += 1
        live = size - 1
        while live:
            st = MPI.Status()
            comm.recv(source=MPI.ANY_SOURCE, tag=2, status=st)
            if sent < N:
                comm.send(sent, dest=st.Get_source(), tag=1)
                sent += 1
            else:
                comm.send(-1, dest=st.Get_source(), tag=1)
                live -= 1
    else:
        while (task := comm.recv(source=0, tag=1)) >= 0:
            comm.send(task * task, dest=0, tag=2)
elif pattern == "halo":
    left, right = (rank - 1) % size, (rank + 1) % size
    value = rank
    for i in range(N):
        comm.send(value, dest=right, tag=3)
        comm.send(value, dest=left, tag=4)
        a = comm.recv(source=left, tag=3)
        b = comm.recv(source=right, tag=4)
        value = (a + b + value) % 1009
        if i % 100 == 99:
            if rank == 0:
                for _ in range(size - 1):
                    value += comm.recv(source=MPI.ANY_SOURCE, tag=5)
            else:
                comm.send(value, dest=0, tag=5)
else:
    raise SystemExit(f"unknown pattern {pattern}")
comm.Barrier()
if rank == 0:
    print(f"elapsed {MPI.Wtime() - t0:.6f}", flush=True)
