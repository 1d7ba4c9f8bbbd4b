"""Trace records rebuilt from the model's columns, many at a time.

:func:`rebuild_records` gives, for a batch of global event indices, the same
dicts as :func:`mpvis.model.entities.rebuild_record` one by one (every field,
``send`` of a consume from its partner, extras last), but reads each column
once per batch with NumPy fancy indexing instead of a method call per field
per event: feeding the exact race detector a 1M-event model afterwards
(:meth:`mpvis.analysis.pipeline.Analyses.add_exact_afterwards`) spent most of
its time in those calls.
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mpvis.model.columns import Column
from mpvis.model.extras import Extras
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC
from mpvis.protocol.record_types import Record

__all__ = ["ColumnSource", "rank_records", "rebuild_records"]


class ColumnSource(Protocol):
    """What records are rebuilt from: a model (``ModelManager``) or its store."""

    @property
    def c_kind(self) -> Column: ...
    @property
    def c_rank(self) -> Column: ...
    @property
    def c_seq(self) -> Column: ...
    @property
    def c_t(self) -> Column: ...
    @property
    def c_site(self) -> Column: ...
    @property
    def c_comm(self) -> Column: ...
    @property
    def c_flags(self) -> Column: ...
    @property
    def c_peer(self) -> Column: ...
    @property
    def c_tag(self) -> Column: ...
    @property
    def c_ref(self) -> Column: ...
    @property
    def c_req(self) -> Column: ...
    @property
    def c_call(self) -> Column: ...
    @property
    def c_size(self) -> Column: ...
    @property
    def c_partner(self) -> Column: ...
    @property
    def sites(self) -> list[str]: ...
    @property
    def extras(self) -> Extras: ...
    @property
    def by_rank(self) -> list[array[int]]: ...

_SEND = R.KIND_CODE[R.SEND]
_RECV = R.KIND_CODE[R.RECV]
_CONSUME = R.KIND_CODE[R.CONSUME]


def rebuild_records(
    m: ColumnSource, gids: npt.NDArray[np.integer[Any]], *,
    comm_always: bool = False,
) -> list[Record]:
    """The trace records of global events ``gids``, in that order (``m``: a model
    or its store).

    Equal to ``[rebuild_record(m, g) for g in gids]``; with ``comm_always``
    every record also carries ``comm`` (``0`` when the trace omitted it), as
    the analyzers' stream contract wants (``mpvis.model.stream``).
    """
    g = np.asarray(gids, dtype=np.int64)
    if len(g) == 0:
        return []
    kinds_names = R.EVENT_KINDS
    sites = m.sites
    extras = m.extras
    codes = m.c_kind.view()[g].tolist()
    ranks = m.c_rank.view()[g].tolist()
    seqs = m.c_seq.view()[g].tolist()
    ts = m.c_t.view()[g].tolist()
    sids = m.c_site.view()[g].tolist()
    comms = m.c_comm.view()[g].tolist()
    flags = m.c_flags.view()[g].tolist()
    peers = m.c_peer.view()[g].tolist()
    tags = m.c_tag.view()[g].tolist()
    refs = m.c_ref.view()[g].tolist()
    reqs = m.c_req.view()[g].tolist()
    calls = m.c_call.view()[g].tolist()
    sizes = m.c_size.view()[g].tolist()
    pg = np.asarray(m.c_partner.view()[g], dtype=np.int64)
    has_partner = pg >= 0
    safe = np.where(has_partner, pg, 0)
    p_rank = np.where(has_partner, m.c_rank.view()[safe], -1).tolist()
    p_seq = m.c_seq.view()[safe].tolist()
    out: list[Record] = []
    append = out.append
    isnan = math.isnan
    extra_of = extras.get_many(g.tolist()) if extras else None
    for i, code in enumerate(codes):
        rec: Record = {"rank": ranks[i], "seq": seqs[i], "kind": kinds_names[code]}
        t = ts[i]
        if not isnan(t):
            rec["t"] = t
        sid = sids[i]
        if sid >= 0:
            rec["site"] = sites[sid]
        comm = comms[i]
        if comm:
            rec["comm"] = comm
        if code == _SEND:
            f = flags[i]
            rec["dest"] = peers[i]
            rec["tag"] = tags[i]
            rec["blocking"] = bool(f & F_BLOCKING)
            rec["sync"] = bool(f & F_SYNC)
            if sizes[i] >= 0:
                rec["size"] = sizes[i]
        elif code == _RECV:
            rec["src"] = peers[i]
            rec["tag"] = tags[i]
            rec["blocking"] = bool(flags[i] & F_BLOCKING)
        elif code == _CONSUME:
            rec["recv"] = refs[i]
            rec["src"] = peers[i]
            rec["tag"] = tags[i]
            if p_rank[i] >= 0:
                rec["send"] = [p_rank[i], p_seq[i]]
        if code in (_SEND, _RECV) and reqs[i] != -1:
            rec["req"] = reqs[i]
        if calls[i] >= 0:
            rec["call"] = calls[i]
        if extra_of is not None:
            extra = extra_of[i]
            if extra:
                rec.update(extra)
        if comm_always and "comm" not in rec:
            rec["comm"] = 0
        append(rec)
    return out


def rank_records(m: ColumnSource, rank: int) -> list[Record]:
    """Every record of ``rank``, in ``seq`` order (``[m.record(rank, s) for s ...]``)."""
    return rebuild_records(m, np.frombuffer(m.by_rank[rank], dtype=np.int64))
