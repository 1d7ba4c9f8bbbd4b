"""A rank's status from its last event: running, suspended, finished, dead, ended.

Pure queries over the event store and the facts the record rules keep
(finished ranks, dead ranks, whether the input ended); nothing here changes
the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mpvis.model.store import EventStore
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC

RUNNING, SUSPENDED, FINISHED, DEAD, ENDED = "running", "suspended", "finished", "dead", "ended"

#: A blocking standard send smaller than this (``size`` bytes) is taken to have
#: returned at once: every common MPI sends such messages eagerly (the pip
#: MPICH up to about 8 KiB through shared memory, Open MPI's sm up to 4 KiB).
#: A larger one, or one of unknown size, whose message nobody consumed may be
#: blocked in ``MPI_Send`` until its receive is posted.
EAGER_BYTES = 4096


def rank_status(store: EventStore, rank: int, *, dead: Mapping[int, str],
                finished: Sequence[bool], input_ended: bool) -> tuple[str, int | None]:
    """A rank's status and, when suspended or dead, the seq where it stopped.

    Suspended: the last event is a blocking receive with no consume, a
    collective entry, a lock request, a ``waiting`` (the rank entered a wait,
    or polls, on requests whose completion it has not recorded), or a blocking
    send nobody consumed that is synchronous or may not have returned
    (:data:`EAGER_BYTES`)."""
    events = store.by_rank[rank]
    last = len(events) - 1
    if rank in dead:
        return DEAD, last if last >= 0 else None
    if finished[rank]:
        return FINISHED, None
    if last >= 0:
        g = events[last]
        kind = R.EVENT_KINDS[store.c_kind[g]]
        flags = store.c_flags[g]
        blocked = (
            (kind == R.RECV and flags & F_BLOCKING and store.c_ref[g] == -1)
            or kind in (R.COLL, R.LOCK, R.WAITING)
            or (kind == R.SEND and flags & F_BLOCKING and store.c_partner[g] == -1
                and (flags & F_SYNC or _may_block(store, g)))
        )
        if blocked:
            return SUSPENDED, last
    return (ENDED if input_ended else RUNNING), None


def _may_block(store: EventStore, g: int) -> bool:
    """A blocking standard send that may not have returned (see :data:`EAGER_BYTES`)."""
    if store.extras.get(g, {}).get("mode") == "buffered":
        return False
    size = int(store.c_size[g])
    return size < 0 or size >= EAGER_BYTES
