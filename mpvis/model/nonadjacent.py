"""Non-adjacent classifier pairs of a ``recv(-1,-1)``, computed on demand.

MPVisualizer checks non-adjacent pairs only when the user selects a
``recv(-1,-1)`` symbol (section 3.2, last paragraph): the receive is paired with
every later receive of its rank and communicator except the adjacent one.
Every such pair is in situation 4, 8, 12 or 16, hence a potential race; its
verdict comes from the same legitimacy check as adjacent pairs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mpvis.model import classifier
from mpvis.model.races import Race, evaluate
from mpvis.protocol import records as R

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager


def later_receives(m: ModelManager, rank: int, seq: int) -> list[int]:
    """Seqs of the receives of ``rank`` after ``seq`` on the same communicator."""
    idx = np.frombuffer(m.by_rank[rank], dtype=np.int64)[seq + 1:]
    if len(idx) == 0:
        return []
    kinds = m.c_kind.view()[idx]
    comms = m.c_comm.view()[idx]
    comm = m.c_comm[m.gidx(rank, seq)]
    sel = np.nonzero((kinds == R.KIND_CODE[R.RECV]) & (comms == comm))[0]
    return [int(seq + 1 + i) for i in sel]


def nonadjacent_races(m: ModelManager, rank: int, seq: int) -> list[Race]:
    """Pairs of ``recv(-1,-1)`` ``(rank, seq)`` with its non-adjacent later receives.

    Raises ``ValueError`` if the event is not a ``recv(-1,-1)``.
    """
    g = m.gidx(rank, seq)
    if m.c_kind[g] != R.KIND_CODE[R.RECV] or m.c_peer[g] != -1 or m.c_tag[g] != -1:
        raise ValueError(f"event {rank}:{seq} is not a recv(-1,-1)")
    later = later_receives(m, rank, seq)
    out = []
    for s2 in later[1:]:
        src2, tag2 = int(m.c_peer[m.gidx(rank, s2)]), int(m.c_tag[m.gidx(rank, s2)])
        race = Race(rank=rank, comm=int(m.c_comm[g]), recvs=(seq, s2),
                    situation=classifier.situation(-1, -1, src2, tag2), scope="nonadjacent",
                    sites=(m.site_of(rank, seq), m.site_of(rank, s2)))
        evaluate(race, m.races.facts, final=m.input_ended)
        out.append(race)
    return out
