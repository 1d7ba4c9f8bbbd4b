"""The event columns of a run and the queries over them (the model's first room).

:class:`EventStore` owns every per-event column, the events of each rank in
``seq`` order, the sparse extras and the call-site table.  Contract:

* one row per event, by *global index* ``g`` in arrival order; the columns
  grow only through :meth:`EventStore.append` (a checked batch) and shrink
  only through :meth:`EventStore.truncate` (after a context error); column
  objects are never replaced, so a caller may keep a reference to one;
* ``by_rank[r][s]`` is the global index of event ``(r, s)``;
* ``c_partner`` links a send and its consume both ways, written only by
  :meth:`EventStore.link`; ``c_ref`` (a receive's consume seq, or a consume's
  receive seq) is written by the record rules when a consume is accepted;
  ``c_lamport`` is written by causal release (:mod:`mpvis.model.causal`);
* the queries read and never change anything.

The store knows nothing of the other rooms: the record rules, causal release
and the races read it and write it through the methods named above.
"""

from __future__ import annotations

import math
from array import array
from typing import Any, cast

import numpy as np

from mpvis.model.columns import Column
from mpvis.model.extras import Extras
from mpvis.model.heap import TRIM_EVENTS, trim_freed_memory
from mpvis.model.ingest import Batch, SiteTable
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC
from mpvis.protocol.record_types import EventRecord, Record

Key = tuple[int, int]

K_SEND, K_RECV, K_CONSUME = (R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME))


#: Distinct one-string-field extras dicts an :class:`EventStore` shares between
#: records (:meth:`~mpvis.model.extras.Extras.add_many`).
SHARED_EXTRAS = 4096


class EventStore:
    """Every event of one run in growable typed columns, and queries over them."""

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        # -- event columns, by global index in arrival order --
        self.c_rank, self.c_seq, self.c_kind = Column("i"), Column("i"), Column("b")
        self.c_t, self.c_site, self.c_comm = Column("d"), Column("i"), Column("i")
        self.c_peer, self.c_tag, self.c_flags = Column("i"), Column("i"), Column("b")
        self.c_req, self.c_ref, self.c_partner = Column("i"), Column("i"), Column("q")
        self.c_size = Column("q")
        #: Each record's ``call`` (the rank's MPI call that made it), -1 when absent.
        self.c_call = Column("i")
        #: Lamport clock of each causally processed event (-1 until processed):
        #: consistent with happened-before, for the diagram's logical layout.
        self.c_lamport = Column("i")
        #: Fields no column holds, by global index (equal dicts may be one object,
        #: a wait's ``reqs`` is held in arrays: never change one in place).
        self.extras = Extras()
        self._shared: dict[tuple[str, Any], dict[str, Any]] = {}
        self.site_table = SiteTable()
        #: Call sites by id (``c_site``).
        self.sites: list[str] = self.site_table.names
        #: Global indices of each rank's events, in ``seq`` order.
        self.by_rank: list[array[int]] = [array("q") for _ in range(nprocs)]
        self._untrimmed = 0  # events appended since the heap was last trimmed

    def _columns(self) -> tuple[Column, ...]:
        return (self.c_rank, self.c_seq, self.c_kind, self.c_t, self.c_site, self.c_comm,
                self.c_peer, self.c_tag, self.c_flags, self.c_req, self.c_ref, self.c_size,
                self.c_call, self.c_partner, self.c_lamport)

    # ------------------------------------------------------------ writing
    def append(self, cols: Batch, k: int) -> list[int]:
        """Append the first ``k`` records of a checked batch (``cols.site`` ids of
        :attr:`site_table`); returns the ranks that got events."""
        if k == 0:
            return []
        start = len(self.c_rank)
        for col, arr in ((self.c_rank, cols.rank), (self.c_seq, cols.seq),
                         (self.c_kind, cols.code), (self.c_t, cols.t), (self.c_site, cols.site),
                         (self.c_comm, cols.comm), (self.c_peer, cols.peer),
                         (self.c_tag, cols.tag), (self.c_flags, cols.flags),
                         (self.c_req, cols.req), (self.c_ref, cols.ref),
                         (self.c_size, cols.size), (self.c_call, cols.call)):
            col.extend_array(arr[:k])
        self.c_partner.extend_fill(-1, k)
        self.c_lamport.extend_fill(-1, k)
        if cols.extras:
            ex = cols.extras
            idx = [i for i in ex if i < k] if len(ex) and max(ex) >= k else list(ex)
            self.extras.add_many([start + i for i in idx], [ex[i] for i in idx],
                                 self._shared, SHARED_EXTRAS)
        ranks = cols.rank[:k]
        order = np.argsort(ranks, kind="stable")
        sr = ranks[order]
        bounds = np.flatnonzero(sr[1:] != sr[:-1]) + 1
        lo_list = [0, *bounds.tolist()]
        hi_list = [*bounds.tolist(), k]
        gids = (order + start).astype(np.int64)
        for lo, hi in zip(lo_list, hi_list, strict=True):
            self.by_rank[int(sr[lo])].frombytes(gids[lo:hi].tobytes())
        touched: list[int] = sr[lo_list].tolist()
        self._untrimmed += k
        if self._untrimmed >= TRIM_EVENTS:  # the batches' freed temporaries (heap.py)
            self._untrimmed = 0
            trim_freed_memory()
        return touched

    def truncate(self, g: int) -> list[int]:
        """Drop the events from global index ``g`` on; returns how many events
        each rank kept."""
        for col in self._columns():
            del col.data[g:]
        kept = []
        for events in self.by_rank:
            cut = len(events)
            while cut and events[cut - 1] >= g:
                cut -= 1
            del events[cut:]
            kept.append(cut)
        self.extras.truncate(g)
        return kept

    def release_all_but_sites(self) -> int:
        """Empty every event column but the sites, for a one-shot use that is done
        with them (``mpvis check``'s report, once its entries are made: the
        site-pair groups read only ``by_rank``, the sites and their names); the
        store then answers only queries reading those.  A column whose buffer is
        exported (a NumPy view of it alive) is left as it is.  Returns the bytes
        freed."""
        freed = 0
        for col in self._columns():
            if col is self.c_site:
                continue
            try:
                n = col.nbytes()
                del col.data[:]
            except BufferError:
                continue
            freed += n
        return freed

    def link(self, sg: int, cg: int) -> None:
        """Send ``sg`` and consume ``cg`` are one message."""
        self.c_partner.data[sg] = cg
        self.c_partner.data[cg] = sg

    def link_many(self, sg: Any, cg: Any) -> None:
        """:meth:`link` for each message ``(sg[i], cg[i])`` (distinct events)."""
        partner = np.frombuffer(self.c_partner.data, dtype=np.int64)
        partner[sg] = cg
        partner[cg] = sg

    def unlink(self, cg: int) -> None:
        """Consume ``cg`` no longer knows its send (the send is being dropped by
        :meth:`truncate` after a context error)."""
        self.c_partner.data[cg] = -1

    # ------------------------------------------------------------ queries
    @property
    def event_count(self) -> int:
        return len(self.c_rank)

    def count(self, rank: int) -> int:
        """Number of events of ``rank`` so far."""
        return len(self.by_rank[rank])

    def gidx(self, rank: int, seq: int) -> int:
        """Global index of event ``(rank, seq)`` (``IndexError`` if absent)."""
        return self.by_rank[rank][seq]

    def has(self, rank: int, seq: int) -> bool:
        """Does the store hold event ``(rank, seq)``?"""
        return 0 <= rank < self.nprocs and 0 <= seq < len(self.by_rank[rank])

    def key(self, g: int) -> Key:
        """``(rank, seq)`` of global event ``g``."""
        return int(self.c_rank.data[g]), int(self.c_seq.data[g])

    def site_of(self, rank: int, seq: int) -> str | None:
        sid = self.c_site.data[self.by_rank[rank][seq]]
        return None if sid < 0 else self.sites[int(sid)]

    def partner(self, rank: int, seq: int) -> Key | None:
        """For a send, its consume; for a consume, its send; else None."""
        pg = self.c_partner.data[self.by_rank[rank][seq]]
        return None if pg < 0 else self.key(pg)

    def consume_of(self, rank: int, recv_seq: int) -> int | None:
        """Seq of the consume of receive ``(rank, recv_seq)``, if any yet."""
        ref = int(self.c_ref.data[self.by_rank[rank][recv_seq]])
        return None if ref < 0 else ref

    def later_receives(self, rank: int, seq: int) -> list[int]:
        """Seqs of the receives of ``rank`` after ``seq`` on the same communicator."""
        idx = np.frombuffer(self.by_rank[rank], dtype=np.int64)[seq + 1:]
        if len(idx) == 0:
            return []
        kinds = self.c_kind.view()[idx]
        comms = self.c_comm.view()[idx]
        comm = self.c_comm[self.gidx(rank, seq)]
        sel = np.nonzero((kinds == K_RECV) & (comms == comm))[0]
        return [int(seq + 1 + i) for i in sel]

    def record_at(self, g: int) -> Record:
        """The trace record of global event ``g``, every field included: a fresh
        dict the caller may change (the analyzers' stream adds ``comm``)."""
        kind = R.EVENT_KINDS[self.c_kind[g]]
        rec: Record = {"rank": int(self.c_rank[g]), "seq": int(self.c_seq[g]), "kind": kind}
        t = self.c_t[g]
        if not math.isnan(t):
            rec["t"] = t
        sid = int(self.c_site[g])
        if sid >= 0:
            rec["site"] = self.sites[sid]
        comm = int(self.c_comm[g])
        if comm:
            rec["comm"] = comm
        flags = int(self.c_flags[g])
        if kind == R.SEND:
            rec.update(dest=int(self.c_peer[g]), tag=int(self.c_tag[g]),
                       blocking=bool(flags & F_BLOCKING), sync=bool(flags & F_SYNC))
            size = int(self.c_size[g])
            if size >= 0:
                rec["size"] = size
        elif kind == R.RECV:
            rec.update(src=int(self.c_peer[g]), tag=int(self.c_tag[g]),
                       blocking=bool(flags & F_BLOCKING))
        elif kind == R.CONSUME:
            rec.update(recv=int(self.c_ref[g]), src=int(self.c_peer[g]), tag=int(self.c_tag[g]))
            pg = self.c_partner[g]
            if pg >= 0:
                rec["send"] = [int(self.c_rank[pg]), int(self.c_seq[pg])]
        req = int(self.c_req[g])
        if req != -1 and kind in (R.SEND, R.RECV):
            rec["req"] = req
        call = int(self.c_call[g])
        if call >= 0:
            rec["call"] = call
        rec.update(self.extras.get(g, {}))
        return rec

    def event_record(self, g: int) -> EventRecord:
        """:meth:`record_at` typed as the record of its kind, for code that reads
        it by field name (narrow it by ``rec["kind"]``).  The store holds only
        records that passed the model's checks, which is what
        :data:`~mpvis.protocol.record_types.EventRecord` promises: this is where
        the model vouches for it (the one ``cast``: no copy, no check)."""
        return cast("EventRecord", self.record_at(g))

