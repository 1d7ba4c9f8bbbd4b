"""Causal release: events processed in causal order (the model's third room).

Records arrive in any order across ranks (a consume before its send, a
collective's exit before a member's entry).  :class:`CausalRelease` processes
each rank's events in ``seq`` order as far as their causes allow, and for
each processed event

* merges its vector clock (:class:`~mpvis.model.clocks.ClockStore`) at the
  events that have a cause on another rank: a consume (its send), a
  collective exit (the entries it depends on, :mod:`mpvis.model.collectives`);
* writes its Lamport clock (the store's ``c_lamport``, one more than its
  predecessor's or than its causes', whichever is larger);
* releases it to the analyzers (its global index, with the store's columns:
  no record dict is built for them), in the order :mod:`mpvis.model.stream`
  promises.

An event whose cause has not arrived waits; it is woken when the cause is
processed, when its consume's message is linked (:meth:`message_linked`) or
when its collective's entries arrive (:meth:`coll_entered`).  After the end
of input (:meth:`finish`) what still waits is forced, one event at a time.

State it owns: the clocks, how far each rank is processed (:attr:`done`),
the waiting events and who waits on what, the events being released.  It
reads the store, the collective book and (at the end) the record rules' lost
and named sends; it writes only the store's ``c_lamport``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

import numpy as np

from mpvis.model.clocks import (
    COLL_EXIT,
    NO_CAUSE,
    NO_SEND,
    Cause,
    ClockStore,
    CollectiveCounts,
    event_cause,
    joined_cause,
)
from mpvis.model.collectives import ALL_TO_ALL, CollectiveBook
from mpvis.model.ingest import Batch
from mpvis.model.store import EventStore
from mpvis.model.stream import Analyzer, ReleasedColumns, StreamAnalyzer
from mpvis.protocol import records as R
from mpvis.protocol.record_types import Record

Key = tuple[int, int]

K_CONSUME = R.KIND_CODE[R.CONSUME]
K_COLL, K_COLL_EXIT = R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT]


class CausalRelease:
    """Processes one run's events in causal order as their causes arrive."""

    def __init__(self, store: EventStore, colls: CollectiveBook,
                 analyzers: list[Analyzer],
                 lost_send_of: Callable[[int], Key | None],
                 named_send_of: Callable[[int], Key | None] = lambda g: None) -> None:
        """``analyzers`` is the (shared, growing) list events are released to
        (:mod:`mpvis.model.stream`); ``lost_send_of(g)`` names the lost send a
        consume ``g`` forced at the end of input consumed (see
        :meth:`RecordRules.lost_send_of <mpvis.model.rules.RecordRules.lost_send_of>`),
        ``named_send_of(g)`` the send such a consume's record named, if any
        (:attr:`ReleasedColumns.named <mpvis.model.stream.ReleasedColumns.named>`)."""
        n = store.nprocs
        self.nprocs = n
        self.store = store
        self.colls = colls
        self.analyzers = analyzers
        self._lost_send_of = lost_send_of
        self._named_send_of = named_send_of
        self.clocks = ClockStore(n)
        #: Events of each rank causally processed (a prefix of its seqs).
        self.done = [0] * n
        #: The input has ended: collectives' members are what arrived.
        self.input_ended = False
        #: Lamport clock of each rank's last processed event
        self._lam_last = array("q", [-1] * n)
        #: seqs of each rank's consumes, collective entries and exits (clock merges)
        self._merge_at: list[array[int]] = [array("i") for _ in range(n)]
        #: per rank, a collective exit whose joined row is known before the walk
        #: reaches it: (seq or -1, joined row, largest Lamport clock joined)
        self._ahead = array("q", [-1, 0, 0] * n)
        #: (comm, instance) -> rank -> seq of its exit, for all-members
        #: collectives whose joined row is not known yet
        self._exits: dict[tuple[int, int], dict[int, int]] = {}
        #: rank -> seq -> the ranks waiting for that event to be processed
        self._done_waiters: list[dict[int, set[int]]] = [{} for _ in range(n)]
        self._out_idx = array("q")  # global indices of the records being released
        self._entry_of: dict[Key, int] = {}  # coll -> instance, until processed
        self._coll_processed: dict[tuple[int, int], int] = {}  # (comm, instance) -> entries
        self._wake: dict[Any, set[int]] = {}  # what is awaited -> the ranks waiting
        self._touched_sink: set[int] = set()  # ranks woken while ingesting or walking
        self._exit_of: dict[Key, tuple[int, str]] = {}  # coll_exit -> (instance, op)
        #: comm -> (instance, joined clock row, largest Lamport clock of its entries)
        self._coll_cache: dict[int, tuple[int, int, int]] = {}
        #: The instances whose members are known at their first entry, counted
        #: and waited on by the walk in C; (comm, instance) -> id, -1 for the
        #: others (counted in ``_coll_processed``, their entries in ``_entry_of``).
        self._counts = CollectiveCounts(n)
        self._iid: dict[tuple[int, int], int] = {}
        #: Let the walk count collectives in C (False: every entry and exit is
        #: handed to Python, the reference the tests compare with).  Read when
        #: an instance's first entry is registered.
        self.c_collectives = True
        self._advance = self.clocks.releaser(
            store, self._merge_at, self.done, ahead=self._ahead, lam_last=self._lam_last,
            waiters=self._done_waiters, sink=self._touched_sink, out=self._out_idx,
            decide=self._decide, entered=self._entered_all, collectives=self._counts)

    # ------------------------------------------------------------ told by others
    def appended(self, cols: Batch, k: int) -> None:
        """The store appended the first ``k`` records of ``cols``."""
        codes = cols.code[:k]
        merges = np.flatnonzero((codes == K_CONSUME) | (codes == K_COLL)
                                | (codes == K_COLL_EXIT))
        if len(merges):
            mranks = cols.rank[merges]
            mseqs = cols.seq[merges]
            for r in np.unique(mranks).tolist():
                self._merge_at[r].frombytes(mseqs[mranks == r].astype(np.int32).tobytes())

    def truncated(self, before: list[int], kept: list[int]) -> None:
        """The store dropped events: rank ``r`` had ``before[r]`` events and
        keeps ``kept[r]`` (none of the dropped ones was processed)."""
        for r, cut in enumerate(kept):
            at = self._merge_at[r]
            del at[bisect_left(at, cut):]
            if self._ahead[3 * r] >= cut:
                self._ahead[3 * r] = -1
            self._counts.truncate(r, cut)
        for exits in self._exits.values():
            for r in [r for r, s in exits.items() if s >= kept[r]]:
                del exits[r]

    def message_linked(self, rank: int, consume_seq: int) -> None:
        """The consume ``(rank, consume_seq)`` now knows its send."""
        if self._wake:
            self._wake_key(("match", rank, consume_seq))

    def waits_on_messages(self) -> bool:
        """Does anything wait to be woken (a consume for its message to be
        linked, among others)?  If not, :meth:`messages_linked` does nothing."""
        return bool(self._wake)

    def messages_linked(self, ranks: list[int], consume_seqs: list[int]) -> None:
        """:meth:`message_linked` for each consume ``(ranks[i], consume_seqs[i])``."""
        if self._wake:
            for r, s in zip(ranks, consume_seqs, strict=True):
                self._wake_key(("match", r, s))

    def waits_on_entries(self) -> bool:
        """Does a rank wait for a collective entry to arrive (its exit's
        dependencies unknown)?  Then telling of entries wakes it, and the
        record rules tell of them in batch order among the other records."""
        return any(key[0] == "coll" for key in self._wake)

    def coll_entered(self, rank: int, seq: int, comm: int, instance: int) -> None:
        """``coll`` ``(rank, seq)`` is entry ``instance`` of ``comm``'s collectives."""
        self.colls_passed(exits=[False], ranks=[rank], seqs=[seq], comms=[comm],
                          instances=[instance], ops=[""])

    def coll_exited(self, rank: int, seq: int, instance: int, op: str) -> None:
        """``coll_exit`` ``(rank, seq)`` leaves ``comm``'s collective ``instance`` (``op``)."""
        comm = self.store.c_comm.data[self.store.by_rank[rank][seq]]
        self.colls_passed(exits=[True], ranks=[rank], seqs=[seq], comms=[comm],
                          instances=[instance], ops=[op])

    def colls_passed(self, *, exits: list[bool], ranks: list[int], seqs: list[int],
                     comms: list[int], instances: list[int], ops: list[str]) -> None:
        """Collective entries (``exits[i]`` false: :meth:`coll_entered`) and exits
        (:meth:`coll_exited`, of ``ops[i]``; an entry's op is not read) in this
        order: record ``i`` is event ``(ranks[i], seqs[i])`` of communicator
        ``comms[i]``'s collective ``instances[i]``.  An instance whose members
        are known at its first entry is counted by the walk
        (:class:`~mpvis.model.clocks.CollectiveCounts`), the others here; an
        all-members collective's exit is decided ahead once its joined row is
        known."""
        iids, counts, coll_cache = self._iid, self._counts, self._coll_cache
        at, at_iid = counts.at, counts.iid
        for ex, rank, seq, comm, instance, op in zip(exits, ranks, seqs, comms, instances, ops,
                                                     strict=True):
            key = (comm, instance)
            if not ex:
                iid = iids.get(key)
                if iid is None:
                    members = self.colls.members(comm, False) if self.c_collectives else None
                    iid = -1 if members is None else counts.new_instance(len(members))
                    iids[key] = iid
                if iid < 0:
                    self._entry_of[(rank, seq)] = instance
                at[rank].append(seq)
                at_iid[rank].append(iid)
                if self._wake:
                    self._wake_key(("coll", comm, instance, rank))
                continue
            self._exit_of[(rank, seq)] = (instance, op)
            if op in ALL_TO_ALL:  # every member's exit merges one joined row
                iid = iids.get(key, -1)
                if iid >= 0:
                    at[rank].append(seq)
                    at_iid[rank].append(iid)
                cached = coll_cache.get(comm)
                if cached is not None and cached[0] == instance:
                    self._decide_exit(rank, seq, cached[1], cached[2])
                else:
                    self._exits.setdefault(key, {})[rank] = seq

    def colls_passed_batch(self, *, exits: Any, ranks: Any, seqs: Any, comms: Any,
                           instances: Any, ops: list[str]) -> None:
        """:meth:`colls_passed` of a batch checked by
        :class:`~mpvis.model.rule_plans.CollPlan` (while no rank waits for an
        entry to arrive, :meth:`waits_on_entries`; arrays but ``ops``), with
        whole-array operations: one Python step per instance and per rank,
        not per record, but for the exits decided ahead at once (their
        joined row known, in batch order) and the entries of instances not
        counted by the walk.  Same state as record by record."""
        iids, counts, coll_cache = self._iid, self._counts, self._coll_cache
        n = len(ranks)
        iid = np.full(n, -1, dtype=np.int64)
        key_c, key_i = comms, instances
        both = np.lexsort((np.arange(n), key_i, key_c))
        cut = np.flatnonzero(np.r_[True, (key_c[both][1:] != key_c[both][:-1])
                                   | (key_i[both][1:] != key_i[both][:-1])])
        ends = np.r_[cut[1:], n]
        entry = ~exits
        ranks_l, seqs_l = ranks.tolist(), seqs.tolist()
        xpos = np.flatnonzero(exits).tolist()
        xops = [ops[i] for i in xpos]
        shared = np.zeros(n, dtype=bool)
        shared[xpos] = np.fromiter((op in ALL_TO_ALL for op in xops), dtype=bool,
                                   count=len(xops))
        ahead: list[int] = []
        # each instance at its first record in the batch (an entry comes first)
        for a in np.argsort(both[cut], kind="stable").tolist():
            at = both[cut[a]:ends[a]]
            comm, instance = int(key_c[at[0]]), int(key_i[at[0]])
            key = (comm, instance)
            ent = at[entry[at]]
            if len(ent):
                got = iids.get(key)
                if got is None:
                    members = self.colls.members(comm, False) if self.c_collectives else None
                    got = -1 if members is None else counts.new_instance(len(members))
                    iids[key] = got
                iid[ent] = got
                if got < 0:
                    for i in ent.tolist():
                        self._entry_of[(ranks_l[i], seqs_l[i])] = instance
            out = at[shared[at]]
            if len(out):
                got = iids.get(key, -1)
                iid[out] = got
                cached = coll_cache.get(comm)
                if cached is not None and cached[0] == instance:
                    ahead.extend(out.tolist())
                else:
                    self._exits.setdefault(key, {}).update(
                        (ranks_l[i], seqs_l[i]) for i in out.tolist())
        xr, xs, xi = (ranks[xpos].tolist(), seqs[xpos].tolist(), instances[xpos].tolist())
        self._exit_of.update(zip(zip(xr, xs, strict=True), zip(xi, xops, strict=True),
                                 strict=True))
        for i in sorted(ahead):
            cached = coll_cache[int(comms[i])]
            self._decide_exit(ranks_l[i], seqs_l[i], cached[1], cached[2])
        reg = np.flatnonzero(entry | (shared & (iid >= 0)))
        if not len(reg):
            return
        by = reg[np.argsort(ranks[reg], kind="stable")]
        rk = ranks[by]
        rcut = np.flatnonzero(np.r_[True, rk[1:] != rk[:-1]]).tolist()
        by_seq, by_iid = seqs[by].tolist(), iid[by].tolist()
        for r, lo, hi in zip(rk[rcut].tolist(), rcut, [*rcut[1:], len(by)], strict=True):
            counts.at[r].extend(by_seq[lo:hi])
            counts.iid[r].extend(by_iid[lo:hi])

    def _decide_exit(self, rank: int, seq: int, row: int, lmax: int) -> None:
        """:meth:`_decide_exits` of one exit."""
        self._decide_exits([rank], [seq], row, lmax)

    def _decide_exits(self, ranks: list[int], seqs: list[int], row: int, lmax: int) -> None:
        """The walk of each rank ``ranks[i]`` (distinct) passes its exit
        ``seqs[i]`` with the joined ``row`` (Lamport ``lmax``) without stopping
        (:meth:`ClockStore.releaser`), unless an earlier exit of it is decided
        and not passed yet (a join forced at the end of input may skip an
        entry): then the exit stops as usual."""
        q = np.array(ranks, dtype=np.int64)
        ahead = np.frombuffer(self._ahead, dtype=np.int64).reshape(-1, 3)
        free = ahead[q, 0] < 0
        q, sq = q[free], np.array(seqs, dtype=np.int64)[free]
        ahead[q, 0], ahead[q, 1], ahead[q, 2] = sq, row, lmax
        exit_of = self._exit_of
        for key in zip(q.tolist(), sq.tolist(), strict=True):
            del exit_of[key]

    def clock_ready(self, key: Key) -> bool:
        """Is the vector clock of event ``key`` known (causally processed)?"""
        return key[1] < self.done[key[0]]

    def finish(self) -> None:
        """The input has ended: process what can be, then force what still
        waits for a cause that can never come, one event at a time, so that
        everything that can still be ordered is ordered."""
        self.input_ended = True
        self.advance(set(range(self.nprocs)))
        by_rank = self.store.by_rank
        while True:
            stuck = [r for r in range(self.nprocs) if self.done[r] < len(by_rank[r])]
            if not stuck:
                break
            self.advance({stuck[0]}, final=True)

    def _lost_cause(self, g: int) -> int:
        """For a consume ``g`` forced at the end of input whose named send was
        lost (:meth:`RecordRules.lost_send_of`): the gidx of its rank's last
        recorded event, once processed (the lost send came after it); else -1."""
        key = self._lost_send_of(g)
        if key is None:
            return -1
        events = self.store.by_rank[key[0]]
        if not events or self.done[key[0]] < len(events):
            return -1
        return int(events[-1])

    def _wake_key(self, key: Any) -> None:
        ranks = self._wake.pop(key, None)
        if ranks:
            self._touched_sink.update(ranks)

    # ------------------------------------------------------- causal order
    def advance(self, touched: set[int], final: bool = False) -> None:
        """Process events in causal order: clocks, then release to analyzers.

        The ranks are walked in C (:meth:`ClockStore.releaser
        <mpvis.model.clocks.ClockStore.releaser>`: clock merges, Lamport
        clocks, the work set of ranks, waits for another rank's send and the
        ranks they wake); it calls back only where a cause needs deciding
        (:meth:`_decide`) and with the collective entries it passed
        (:meth:`_entered_all`).  With ``final`` (the input has ended), the first
        event of the first rank in ``touched`` is processed even though a cause
        is missing; everything after it again waits for its causes."""
        work = set(touched) | self._touched_sink
        self._touched_sink.clear()
        self._advance(work, min(touched) if final and touched else -1)
        if self._out_idx:
            if self.analyzers:
                self._feed()
            else:
                del self._out_idx[:]

    def _decide(self, r: int, st: int, s: int, forced: bool) -> Cause | None:
        """The cause of event ``s`` of rank ``r``, where its walk stopped
        (``st``: why, ``forced``: the end of input forces it), or ``None``
        after registering what it waits for: a collective exit's joined row
        (:meth:`_collective_clock`), a forced consume's lost send (its rank's
        last event) or nothing; a consume whose send is unknown waits for its
        message to be linked."""
        if st == COLL_EXIT:
            joined = self._collective_clock(r, s, forced)
            return None if joined is None else joined_cause(*joined)
        if forced:
            lg = self._lost_cause(self.store.by_rank[r][s]) if st == NO_SEND else -1
            return event_cause(lg) if lg >= 0 else NO_CAUSE
        self._wait_on(("match", r, s), r)
        return None

    def _feed(self) -> None:
        """Hand the released events to the analyzers as columns
        (:class:`~mpvis.model.stream.ReleasedColumns`); a plain
        :class:`~mpvis.model.stream.RecordAnalyzer` gets their records, built
        from the store only when one is attached."""
        idx = np.frombuffer(self._out_idx, dtype=np.int64).copy()
        del self._out_idx[:]
        # only a consume forced at the end of input has no send
        cols = ReleasedColumns.of(self.store, idx,
                                  self._named_send_of if self.input_ended else None)
        records: list[Record] | None = None
        for a in self.analyzers:
            if isinstance(a, StreamAnalyzer):
                a.feed_columns(cols)
            else:
                if records is None:
                    records = cols.records()
                a.feed(records)

    def _entered_all(self, r: int, seqs: list[int]) -> None:
        """The walk of rank ``r`` passed its collective entries ``seqs``."""
        for s in seqs:
            self._entered(r, s)

    def _entered(self, r: int, s: int) -> None:
        """A ``coll`` is processed: count it toward its instance's entries."""
        n_inst = self._entry_of.pop((r, s), None)
        if n_inst is None:  # an instance the walk counts (handed here in order)
            iid = self._counts.instance_at(r, s)
            if iid < 0:
                raise KeyError((r, s))  # an entry nobody registered: a bug
            ranks = self._counts.entered(iid)
            if ranks:
                self._touched_sink.update(ranks)
            return
        comm = self.store.c_comm.data[self.store.by_rank[r][s]]
        cnt = self._coll_processed.get((comm, n_inst), 0) + 1
        self._coll_processed[(comm, n_inst)] = cnt
        members = self.colls.members(comm, self.input_ended)
        if members is not None and cnt >= len(members):
            self._wake_key(("colldone", comm, n_inst))

    def _collective_clock(self, r: int, s: int, final: bool) -> tuple[int, int] | None:
        """Joined clock row (:meth:`ClockStore.join`) and largest Lamport clock of the entries the
        ``coll_exit`` (r, s) depends on, or ``None`` (after registering to be
        woken) while one is not processed."""
        comm = self.store.c_comm.data[self.store.by_rank[r][s]]
        n_inst, op = self._exit_of[(r, s)]
        shared = op in ALL_TO_ALL
        if shared:
            cached = self._coll_cache.get(comm)
            if cached is not None and cached[0] == n_inst:
                del self._exit_of[(r, s)]
                return cached[1], cached[2]
            members = self.colls.members(comm, final)
            iid = self._iid.get((comm, n_inst), -1)
            processed = (self._counts.count[iid] if iid >= 0
                         else self._coll_processed.get((comm, n_inst), 0))
            if members is not None and not final and processed < len(members):
                self._wait_on(("colldone", comm, n_inst), r)
                return None
        deps = self.colls.exit_deps(r, comm, n_inst, op, final)
        if deps is None:
            for q in range(self.nprocs):
                self._wait_on(("coll", comm, n_inst, q), r)
            return None
        late = [k for k in deps if self.done[k[0]] <= k[1]]
        if late and not final:
            self._wait_on(("done", *late[0]), r)
            return None
        ready = [k for k in deps if k not in late]
        vec = self.clocks.join(ready)
        lam = self.store.c_lamport.data
        lmax = max((lam[self.store.by_rank[q][qs]] for q, qs in ready), default=-1)
        del self._exit_of[(r, s)]
        if shared:
            self._coll_cache[comm] = (n_inst, vec, lmax)
            iid = self._iid.get((comm, n_inst), -1)
            if iid >= 0:
                self._counts.joined[iid] = 1
            others = self._exits.pop((comm, n_inst), {})
            others.pop(r, None)
            if others:
                self._decide_exits(list(others), list(others.values()), vec, lmax)
        return vec, lmax

    def _wait_on(self, key: Any, r: int) -> None:
        """Rank ``r`` waits for ``key`` (sets: every member of a collective may
        wait on one key); for another rank's event to be processed, in the
        walk's waiter table (the walk wakes it)."""
        if key[0] == "done":
            self._done_waiters[key[1]].setdefault(key[2], set()).add(r)
        elif key[0] == "colldone" and self._iid.get(key[1:], -1) >= 0:
            self._counts.wait(self._iid[key[1:]], r)
        else:
            self._wake.setdefault(key, set()).add(r)

