"""A program that merely runs long: no race, no deadlock (run with 2 or more ranks).

``python long_running.py [SECONDS]`` (default 5): the ranks pass a counter
around a ring once per 0.1 s of "work" until the time is up, with all
receives naming their source.  Its trace keeps growing while it runs, and
ranks often sit in a receive for a while: a live view must not mistake that
for a deadlock.
"""

import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0

rounds = max(1, int(seconds / 0.1))
counter = 0
for _ in range(rounds):
    time.sleep(0.1 / size)  # work
    if rank == 0:
        comm.send(counter + 1, dest=(rank + 1) % size, tag=0)
        counter = comm.recv(source=size - 1, tag=0)
    else:
        counter = comm.recv(source=rank - 1, tag=0)
        comm.send(counter + 1, dest=(rank + 1) % size, tag=0)
comm.barrier()
if rank == 0:
    print(f"{rounds} rounds, counter {counter}")
