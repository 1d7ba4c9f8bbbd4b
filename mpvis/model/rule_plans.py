"""A batch's context rules checked with whole-array operations, and its rows.

:class:`~mpvis.model.rules.RecordRules` checks most of a batch record by
record only where it must: :class:`ConsumePlan` checks a batch's consumes,
:class:`RequestPlan` its requests (nonblocking sends and receives, waits) and
:class:`CollPlan` its collective entries and exits as
whole arrays when the batch keeps the rules, and says so by returning a plan;
otherwise (``None``) the record rules take those records one by one, which
names the first bad record.  :class:`Rows` is a batch's columns read as
Python values by the record-by-record handlers.  Making a plan changes
nothing; applying it writes what the record rules would have written, through
them (:meth:`ConsumePlan.apply`) or into the live requests they hand over
(:meth:`RequestPlan.apply`).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from mpvis.model.arrayops import has_duplicates
from mpvis.model.collectives import CollectiveBook
from mpvis.model.ingest import Batch
from mpvis.model.races import gather_gidx
from mpvis.model.store import EventStore
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING

K_SEND, K_RECV, K_CONSUME, K_WAIT = (R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME, R.WAIT))
K_COLL, K_COLL_EXIT = R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT]


class Linker(Protocol):
    """What :meth:`ConsumePlan.apply` writes through (the record rules)."""

    store: EventStore

    def linked_many(self, sends: Any, consumes: Any, ranks: Any, seqs: Any, recvs: Any
                    ) -> None:
        """Link each planned consume to its send (:meth:`RecordRules.linked_many
        <mpvis.model.rules.RecordRules.linked_many>`)."""


class CollListener(Protocol):
    """What :meth:`CollPlan.apply` tells of the collectives (causal release)."""

    def colls_passed_batch(self, *, exits: Any, ranks: Any, seqs: Any, comms: Any,
                           instances: Any, ops: list[str]) -> None:
        """A batch's entries and exits (:meth:`CausalRelease.colls_passed_batch
        <mpvis.model.causal.CausalRelease.colls_passed_batch>`)."""


_ROW_COLUMNS = frozenset({"code", "comm", "flags", "peer", "rank", "ref", "req", "seq", "sseq",
                          "tag"})


class Rows:
    """The first ``k`` records of a :class:`~mpvis.model.ingest.Batch` as Python
    lists (cheap to index one record at a time), and their extras.  Record
    ``i`` has global index ``start + i``.  A column becomes a list when first
    read (the handlers that run record by record read a few)."""

    code: list[int]
    comm: list[int]
    flags: list[int]
    peer: list[int]
    rank: list[int]
    ref: list[int]
    req: list[int]
    seq: list[int]
    sseq: list[int]
    tag: list[int]

    def __init__(self, cols: Batch, start: int, k: int) -> None:
        self.start = start
        self.extras = cols.extras
        self._cols, self._k = cols, k

    def __getattr__(self, name: str) -> list[int]:
        if name not in _ROW_COLUMNS:
            raise AttributeError(name)
        out: list[int] = getattr(self._cols, name)[:self._k].tolist()
        setattr(self, name, out)
        return out




class ConsumePlan:
    """A batch's consumes checked with whole-array operations.

    :meth:`make` gives a plan only when every consume of the batch names its
    send, that send is in the store, and every rule of
    :meth:`RecordRules._on_consume` holds for each consume in batch order
    (including: no receive and no send consumed twice, within the batch or
    before it); otherwise ``None``, and the consumes are checked record by
    record, which also names the first bad one.  The consumes do not read
    what the other records of the batch change, and only a ``wait`` reads
    what they change (:attr:`RecordRules._consumed_at`), so the plan's
    effects are written after the other records are checked
    (:meth:`apply`), for the consumes before the first bad record."""

    __slots__ = ("cg", "pos", "rank", "rg", "rs", "seq", "sg")

    def __init__(self, *, pos: Any, rank: Any, seq: Any, rs: Any, rg: Any, sg: Any,
                 cg: Any) -> None:
        self.pos, self.rank, self.seq, self.rs = pos, rank, seq, rs
        self.rg, self.sg, self.cg = rg, sg, cg

    @classmethod
    def make(cls, store: EventStore, cols: Batch, start: int, k: int) -> ConsumePlan | None:
        pos = np.flatnonzero(cols.code[:k] == K_CONSUME)
        if len(pos) == 0:
            return None
        rank, seq = cols.rank[pos].astype(np.int64), cols.seq[pos].astype(np.int64)
        comm, csrc, ctag = cols.comm[pos], cols.peer[pos].astype(np.int64), cols.tag[pos]
        rs, qs = cols.ref[pos].astype(np.int64), cols.sseq[pos].astype(np.int64)
        if (qs < 0).any() or (rs < 0).any() or (rs >= seq).any():
            return None
        by_rank = store.by_rank
        if (csrc < 0).any() or (csrc >= store.nprocs).any():
            return None
        counts = np.fromiter((len(b) for b in by_rank), dtype=np.int64, count=len(by_rank))
        if (qs >= counts[csrc]).any():
            return None
        rg, sg = np.split(gather_gidx(by_rank, np.r_[rank, csrc], np.r_[rs, qs]), [len(pos)])
        kind, ref, c_comm = store.c_kind.view(), store.c_ref.view(), store.c_comm.view()
        peer, tag, flags = store.c_peer.view(), store.c_tag.view(), store.c_flags.view()
        src, rtag = peer[rg], tag[rg]
        ok = ((kind[rg] == K_RECV) & (ref[rg] == -1) & (c_comm[rg] == comm)
              & (((flags[rg] & F_BLOCKING) == 0) | (rs == seq - 1))
              & ((src == -1) | (src == csrc)) & ((rtag == -1) | (rtag == ctag))
              & (kind[sg] == K_SEND) & (store.c_partner.view()[sg] == -1)
              & (peer[sg] == rank) & (tag[sg] == ctag) & (c_comm[sg] == comm))
        if not ok.all() or has_duplicates(rg) or has_duplicates(sg):
            return None
        return cls(pos=pos, rank=rank, seq=seq, rs=rs, rg=rg, sg=sg, cg=pos + start)

    def consumed_at(self) -> dict[int, int]:
        """Receive gidx -> position of its consume in the batch."""
        return dict(zip(self.rg.tolist(), self.pos.tolist(), strict=True))

    def apply(self, rules: Linker, limit: int) -> list[int]:
        """Write the effects of the consumes before position ``limit``: each
        receive's consume, each message's link, and tell causal release and
        the race tracker (:meth:`RecordRules.linked_many`).  Returns the sends
        linked, in batch order, for the caller to list as new messages."""
        n = int(np.searchsorted(self.pos, limit))
        if n == 0:
            return []
        np.frombuffer(rules.store.c_ref.data, dtype=np.int32)[self.rg[:n]] = self.seq[:n]
        rules.linked_many(self.sg[:n], self.cg[:n], self.rank[:n], self.seq[:n], self.rg[:n])
        sends: list[int] = self.sg[:n].tolist()
        return sends


class RequestPlan:
    """A batch's request rules checked with whole-array operations.

    The rules (:meth:`RecordRules._new_req`, :meth:`RecordRules._on_wait`): a
    nonblocking send or receive makes its request live, and the request must
    not be live already; a wait names live requests, each once, and ends
    them; a receive request is waited only after its consume.  Per rank and
    request, the batch's creations and waits in batch order must therefore
    alternate, starting with a wait when the request is live before the
    batch, with a creation when not.  :meth:`make` gives a plan only when
    every creation and wait of the batch keeps the rules; otherwise ``None``
    and they are checked record by record, which also names the first bad
    one.  A receive's consume is known before the batch (``c_ref``) or at its
    position in the batch (``consumed_at``: the batch's consumes are planned,
    or it has none), so the check does not depend on the other records.
    :meth:`apply` then writes the live requests as the records before the
    first bad record (of another rule) leave them."""

    __slots__ = ("mask", "pos", "rank", "req", "seq")

    def __init__(self, *, mask: Any, pos: Any, rank: Any, req: Any, seq: Any) -> None:
        self.mask, self.pos, self.rank, self.req, self.seq = mask, pos, rank, req, seq

    @classmethod
    def make(cls, store: EventStore, live: list[dict[int, int]], cols: Batch, *, start: int,
             k: int, consumed_at: dict[int, int]) -> RequestPlan | None:
        """``live``: per rank, the live requests before the batch (request ->
        the seq of the event that made it)."""
        codes, flags = cols.code[:k], cols.flags[:k]
        create = ((codes == K_SEND) | (codes == K_RECV)) & ((flags & F_BLOCKING) == 0)
        wait = codes == K_WAIT
        cpos, wpos = np.flatnonzero(create), np.flatnonzero(wait)
        if len(cpos) == 0 and len(wpos) == 0:
            return None
        extras = cols.extras
        try:
            reqs = [extras[i]["reqs"] for i in wpos.tolist()]
            wreq = np.fromiter((q for qs in reqs for q in qs), dtype=np.int64)
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        nreq = np.fromiter(map(len, reqs), dtype=np.int64, count=len(reqs))
        pos = np.r_[cpos, np.repeat(wpos, nreq)]
        rank = cols.rank[pos].astype(np.int64)
        req = np.r_[cols.req[cpos].astype(np.int64), wreq]
        is_wait = np.r_[np.zeros(len(cpos), dtype=bool), np.ones(len(wreq), dtype=bool)]
        order = np.lexsort((pos, req, rank))
        pos, rank, req, is_wait = pos[order], rank[order], req[order], is_wait[order]
        n = len(pos)
        first = np.r_[True, (rank[1:] != rank[:-1]) | (req[1:] != req[:-1])]
        starts = np.flatnonzero(first)
        held = [live[r].get(q) for r, q in zip(rank[starts].tolist(), req[starts].tolist(),
                                               strict=True)]
        was_live = np.fromiter((h is not None for h in held), dtype=bool, count=len(held))
        group = np.cumsum(first) - 1
        j = np.arange(n) - starts[group]
        if ((j + was_live[group]) % 2 != is_wait).any():
            return None
        # the receive requests waited: each consumed before its wait
        wait_at = np.flatnonzero(is_wait)
        maker = np.empty(len(wait_at), dtype=np.int64)  # gidx of the event that made it
        inside = j[wait_at] > 0
        maker[inside] = pos[wait_at[inside] - 1] + start
        outside = wait_at[~inside]
        if len(outside):
            seqs = np.array([held[g] for g in group[outside].tolist()], dtype=np.int64)
            maker[~inside] = gather_gidx(store.by_rank, rank[outside], seqs)
        is_recv = store.c_kind.view()[maker] == K_RECV
        unknown = is_recv & (store.c_ref.view()[maker] == -1)
        if unknown.any():
            wp = pos[wait_at[unknown]].tolist()
            if any(consumed_at.get(g, p) >= p
                   for g, p in zip(maker[unknown].tolist(), wp, strict=True)):
                return None
        seq = cols.seq[pos].astype(np.int64)
        return cls(mask=create | wait, pos=pos, rank=rank, req=req, seq=np.where(is_wait, -1, seq))

    def apply(self, live: list[dict[int, int]], limit: int) -> None:
        """The creations and waits before position ``limit`` take effect on
        ``live`` (as :meth:`make`'s)."""
        keep = self.pos < limit
        rank, req, seq = self.rank[keep], self.req[keep], self.seq[keep]
        if len(rank) == 0:
            return
        last = np.r_[(rank[1:] != rank[:-1]) | (req[1:] != req[:-1]), True]
        for r, q, s in zip(rank[last].tolist(), req[last].tolist(), seq[last].tolist(),
                           strict=True):
            if s >= 0:
                live[r][q] = s
            else:
                live[r].pop(q, None)


class CollPlan:
    """A batch's collective entries and exits checked with whole-array operations.

    The rules (:meth:`RecordRules._on_coll <mpvis.model.rules.RecordRules._on_coll>`,
    ``_on_coll_exit``): per rank and communicator, a ``coll`` comes while no
    collective is open and a ``coll_exit`` while one is, with the op of its
    ``coll``; a ``group`` lists the communicator's ranks, the entry's own
    included.  Per rank and communicator the batch's entries and exits must
    therefore alternate in batch order, starting with an exit when a
    collective is open before the batch, and each exit must name the op of the
    entry before it (or of the open one).  :meth:`make` gives a plan only
    when every entry and exit of the batch keeps the rules and no entry's
    ``group`` is the first of its communicator (a communicator's members are
    then the same for all the batch's records, so causal release numbers its
    instances as record by record); otherwise ``None``, and they are checked
    record by record, which also names the first bad one.  Nothing else in
    a batch reads or writes what they change, so :meth:`apply` writes them
    after the batch's other records are checked, for the records before the
    first bad record (of another rule)."""

    __slots__ = ("comms", "exits", "mask", "ops", "pos", "ranks", "roots", "seqs")

    def __init__(self, *, mask: Any, pos: Any, exits: Any, ranks: Any, seqs: Any, comms: Any,
                 ops: list[str], roots: list[Any]) -> None:
        self.mask, self.pos, self.exits, self.ranks, self.seqs = mask, pos, exits, ranks, seqs
        self.comms, self.ops, self.roots = comms, ops, roots

    @classmethod
    def make(cls, book: CollectiveBook, cols: Batch, k: int) -> CollPlan | None:
        codes = cols.code[:k]
        mask = (codes == K_COLL) | (codes == K_COLL_EXIT)
        pos = np.flatnonzero(mask)
        n = len(pos)
        if n == 0:
            return None
        extras = cols.extras
        try:
            args = [extras[i] for i in pos.tolist()]
            ops: list[str] = [a["op"] for a in args]
        except (KeyError, TypeError):
            return None
        exits = codes[pos] == K_COLL_EXIT
        rank, comm = cols.rank[pos].astype(np.int64), cols.comm[pos].astype(np.int64)
        for i in [i for i, a in enumerate(args) if "group" in a]:
            if exits[i]:
                continue
            g, r, c = args[i]["group"], int(rank[i]), int(comm[i])
            if c not in book.groups or not (isinstance(g, list) and r in g):
                return None  # a first group, or a bad one: record by record
        order = np.lexsort((pos, comm, rank))
        r_o, c_o, x_o = rank[order], comm[order], exits[order]
        first = np.r_[True, (r_o[1:] != r_o[:-1]) | (c_o[1:] != c_o[:-1])]
        starts = np.flatnonzero(first)
        opened = [book.open_collective(r, c)
                  for r, c in zip(r_o[starts].tolist(), c_o[starts].tolist(), strict=True)]
        was_open = np.fromiter((o is not None for o in opened), dtype=bool, count=len(opened))
        group = np.cumsum(first) - 1
        j = np.arange(n) - starts[group]
        if (((j + was_open[group]) % 2 == 1) != x_o).any():
            return None
        code_of: dict[str, int] = {}
        opc = np.fromiter((code_of.setdefault(o, len(code_of)) for o in ops), dtype=np.int64,
                          count=n)[order]
        before = np.empty(n, dtype=np.int64)  # the op of the entry an exit leaves
        before[1:] = opc[:-1]
        before[starts] = [code_of.setdefault(o[2], len(code_of)) if o is not None else -1
                          for o in opened]
        if (opc[x_o] != before[x_o]).any():
            return None
        return cls(mask=mask, pos=pos, exits=exits, ranks=rank,
                   seqs=cols.seq[pos].astype(np.int64), comms=comm, ops=ops,
                   roots=[a.get("root") for a in args])

    def apply(self, book: CollectiveBook, causal: CollListener, limit: int) -> None:
        """The entries and exits before position ``limit`` take effect: in the
        collective book, then causal release is told (each with whole-array
        operations: :meth:`CollectiveBook.passed_batch
        <mpvis.model.collectives.CollectiveBook.passed_batch>`,
        :meth:`CausalRelease.colls_passed_batch
        <mpvis.model.causal.CausalRelease.colls_passed_batch>`)."""
        n = int(np.searchsorted(self.pos, limit))
        if n == 0:
            return
        exits, ranks, seqs, comms = self.exits[:n], self.ranks[:n], self.seqs[:n], self.comms[:n]
        ops = self.ops[:n]
        instances = book.passed_batch(exits=exits, ranks=ranks, seqs=seqs, comms=comms, ops=ops,
                                      roots=self.roots[:n])
        causal.colls_passed_batch(exits=exits, ranks=ranks, seqs=seqs, comms=comms,
                                  instances=instances, ops=ops)
