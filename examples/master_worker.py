"""Master/worker task farm: many benign message races (run with 3 to 8 ranks; 4 in the tests).

Rank 0 hands out tasks and collects results with ``recv(ANY_SOURCE, ANY_TAG)``;
each worker receives tasks from rank 0 until it gets a stop message.  The
order in which results arrive is nondeterministic, so the master's adjacent
wildcard receives race (legitimate races in the sense of the MPVisualizer
classifier), but the result does not depend on the order: the races are
benign.  No deadlock.  ``python master_worker.py [TASKS]`` (default 12).
"""

import sys

from mpi4py import MPI

TASK, RESULT, STOP = 1, 2, 3

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
ntasks = int(sys.argv[1]) if len(sys.argv) > 1 else 12

if rank == 0:
    tasks = list(range(ntasks))
    total = 0
    active = 0
    for worker in range(1, size):  # one task per worker to start
        if tasks:
            comm.send(tasks.pop(), dest=worker, tag=TASK)
            active += 1
        else:
            comm.send(None, dest=worker, tag=STOP)
    while active:
        status = MPI.Status()
        total += comm.recv(source=MPI.ANY_SOURCE, tag=RESULT, status=status)
        worker = status.Get_source()
        if tasks:
            comm.send(tasks.pop(), dest=worker, tag=TASK)
        else:
            comm.send(None, dest=worker, tag=STOP)
            active -= 1
    print(f"sum of squares below {ntasks}: {total}")
else:
    while True:
        status = MPI.Status()
        task = comm.recv(source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == STOP:
            break
        comm.send(task * task, dest=0, tag=RESULT)
