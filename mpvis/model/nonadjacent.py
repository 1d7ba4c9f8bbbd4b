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

import numpy as np

from mpvis.model.classifier import situations
from mpvis.model.races import Race, RaceColumns, RecvFacts, evaluate
from mpvis.model.store import EventStore
from mpvis.protocol import records as R

_K_RECV = R.KIND_CODE[R.RECV]


def nonadjacent_races(store: EventStore, facts: RecvFacts, rank: int, seq: int, *,
                      final: bool) -> list[Race]:
    """Pairs of ``recv(-1,-1)`` ``(rank, seq)`` with its non-adjacent later receives
    (``final``: the input has ended, what is missing stays missing), in seq order.

    Raises ``ValueError`` if the event is not a ``recv(-1,-1)``.
    """
    g = store.gidx(rank, seq)
    if store.c_kind[g] != _K_RECV or store.c_peer[g] != -1 or store.c_tag[g] != -1:
        raise ValueError(f"event {rank}:{seq} is not a recv(-1,-1)")
    later = store.later_receives(rank, seq)[1:]
    g2 = np.frombuffer(store.by_rank[rank], dtype=np.int64)[np.array(later, dtype=np.int64)]
    g1 = np.full(len(g2), g, dtype=np.int64)
    peer, tag = store.c_peer.view(), store.c_tag.view()
    t = RaceColumns(facts, "nonadjacent", numbered=False)
    t.add(g1, g2, situations(peer[g1], tag[g1], peer[g2], tag[g2]))
    rows = np.arange(len(t), dtype=np.int64)
    evaluate(t, rows, final=final)
    return t.views(rows)
