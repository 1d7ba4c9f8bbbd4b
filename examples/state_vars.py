"""Program variables for predicates (run with 2 or more ranks; 3 in the tests).

Each rank iterates a small relaxation: it records ``x`` (its value) and
``phase`` with ``mpvis.instrument.state(...)`` (a no-op outside mpvis), then
exchanges values with its neighbours with ``sendrecv``.  Try
``mpvis predicate TRACE --define a=0:x>3 --define b=1:'phase == "update"' --conj a,b``.
No race, no deadlock.
"""

from mpi4py import MPI

from mpvis.instrument import state

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
left, right = (rank - 1) % size, (rank + 1) % size

x = rank
for step in range(4):
    state(x=x, phase="update", step=step)
    from_left = comm.sendrecv(x, dest=right, sendtag=step, source=left, recvtag=step)
    x = max(x, from_left) + 1
    state(x=x, phase="exchange")
total = comm.allreduce(x, op=MPI.SUM)
state(phase="done", total=total)
