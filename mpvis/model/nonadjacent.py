"""Non-adjacent classifier pairs of a ``recv(-1,-1)``, computed on demand.

MPVisualizer checks non-adjacent pairs only when the user selects a
``recv(-1,-1)`` symbol (section 3.2, last paragraph): the receive is paired with
every later receive of its rank and communicator except the adjacent one.
Every such pair is in situation 4, 8, 12 or 16, hence a potential race; its
verdict comes from the same legitimacy check as adjacent pairs
(:func:`mpvis.model.races.evaluate`).  Part of the races room: a pure search
over the event store and the tracker's facts, keeping no state.
"""

from __future__ import annotations

from mpvis.model import classifier
from mpvis.model.races import Race, RecvFacts, evaluate
from mpvis.model.store import EventStore
from mpvis.protocol import records as R

_K_RECV = R.KIND_CODE[R.RECV]


def nonadjacent_races(store: EventStore, facts: RecvFacts, rank: int, seq: int, *,
                      final: bool) -> list[Race]:
    """Pairs of ``recv(-1,-1)`` ``(rank, seq)`` with its non-adjacent later receives
    (``final``: the input has ended, what is missing stays missing).

    Raises ``ValueError`` if the event is not a ``recv(-1,-1)``.
    """
    g = store.gidx(rank, seq)
    if store.c_kind[g] != _K_RECV or store.c_peer[g] != -1 or store.c_tag[g] != -1:
        raise ValueError(f"event {rank}:{seq} is not a recv(-1,-1)")
    later = store.later_receives(rank, seq)
    out = []
    for s2 in later[1:]:
        g2 = store.gidx(rank, s2)
        src2, tag2 = int(store.c_peer[g2]), int(store.c_tag[g2])
        race = Race(rank=rank, comm=int(store.c_comm[g]), recvs=(seq, s2),
                    situation=classifier.situation(-1, -1, src2, tag2), scope="nonadjacent",
                    sites=(store.site_of(rank, seq), store.site_of(rank, s2)))
        evaluate(race, facts, final=final)
        out.append(race)
    return out
