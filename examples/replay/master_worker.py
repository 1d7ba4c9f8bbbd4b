"""Master-worker with dynamic assignment: the master's wildcard receives race.

Rank 0 hands out TASKS tasks one at a time; each result is received with
ANY_SOURCE and the next task goes to whichever worker answered.  The order in
which results arrive decides which worker computes what, so the printed
assignment differs from run to run unless the run is replayed.
"""

import sys

from mpi4py import MPI

TASKS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
STOP = -1

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

if rank == 0:
    done: list[tuple[int, int]] = []
    next_task = 0
    for w in range(1, size):
        comm.send(next_task if next_task < TASKS else STOP, dest=w, tag=1)
        next_task += 1
    active = min(size - 1, TASKS)
    while active:
        st = MPI.Status()
        task, value = comm.recv(source=MPI.ANY_SOURCE, tag=2, status=st)
        done.append((task, st.Get_source()))
        if next_task < TASKS:
            comm.send(next_task, dest=st.Get_source(), tag=1)
            next_task += 1
        else:
            comm.send(STOP, dest=st.Get_source(), tag=1)
            active -= 1
    print("assignment", done, flush=True)
else:
    while True:
        task = comm.recv(source=0, tag=1)
        if task == STOP:
            break
        comm.send((task, sum(i * i for i in range(task * 50))), dest=0, tag=2)
