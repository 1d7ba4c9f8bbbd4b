"""The deadlock monitor: point-to-point, collective and lock deadlocks on the record stream.

:class:`DeadlockMonitor` is an analyzer of the model's stream
(:class:`~mpvis.model.stream.StreamAnalyzer`: :meth:`~DeadlockMonitor.feed_columns`);
it also takes record dicts (:meth:`~DeadlockMonitor.feed`).  It
keeps only live state: each rank's last relevant event (which tells whether
the rank is blocked, and where; its record, or its global index in the
model's store, resolved into the record by a check), messages sent and not consumed, open requests
(:mod:`~mpvis.analysis.deadlock_p2p`), collective counters and signatures per
communicator (:mod:`~mpvis.analysis.deadlock_collectives`) and lock holders
(:mod:`~mpvis.analysis.deadlock_locks`).  ``state`` records and unknown kinds
cost one dictionary lookup.

Two ways of finding deadlocks, as in Roy et al.:

* as records arrive (:meth:`feed`), the errors a few records prove: collective
  order or argument mismatches, ranks waiting in a collective that a finished
  member never reached (their Sec. III cases 1-3), a rank locking a lock it
  holds, a rank releasing a lock it does not hold (A2);
* on demand (:meth:`check`), the AND-OR wait-for graph of the blocked ranks
  (:mod:`~mpvis.analysis.waitfor`): a rank stays stuck when no rank able to act
  can release it.  Each weakly connected group of stuck ranks, with the
  finished or already-deadlocked ranks its chains end at, is one deadlock; its
  kind is that of its cycle's waits (or of all its waits when it is a chain).
  Ranks whose current blocking event belongs to a deadlock already reported
  are not reported again; ranks waiting on them are, as chains ending there.

``check(final=False)`` is for a live run whose ranks have all been observed
idle for a while: a rank without ``final`` whose last record is not a blocking
operation counts as running (it may still send or release).
``check(final=True)`` is for the end of input: in addition, a rank whose trace
ends with requests still open is blocked in a wait on all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from mpvis.analysis.deadlock_collectives import CollectiveTracker
from mpvis.analysis.deadlock_locks import LockTracker
from mpvis.analysis.deadlock_p2p import WAITING, P2PState
from mpvis.analysis.deadlock_report import (
    COLLECTIVE,
    LOCK,
    Deadlock,
    classify,
    describe_site,
    to_dot,
)
from mpvis.analysis.waitfor import Clause, WaitEdge, find_cycle, reduce_graph, weak_components
from mpvis.model.arrayops import isin
from mpvis.model.event_arrays import EventArrays
from mpvis.model.store import EventStore
from mpvis.model.stream import ReleasedColumns
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC
from mpvis.protocol.record_types import (
    CollExitRecord,
    CollRecord,
    EventRecord,
    FinalRecord,
    Record,
)

__all__ = ["Deadlock", "DeadlockMonitor", "detect_deadlocks", "to_dot"]

_K_SEND, _K_RECV, _K_CONSUME, _K_WAIT, _K_STATE, _K_COLL, _K_EXIT, _K_FINAL = (
    R.KIND_CODE[k]
    for k in ("send", "recv", "consume", "wait", "state", "coll", "coll_exit", "final"))


class DeadlockMonitor:
    """Deadlock detection over the causally ordered record stream of ``nprocs`` ranks."""

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        #: Each rank's last relevant event: its record, or its global index in
        #: the store (column path), turned into its record by a check.
        self._cur: list[EventRecord | int | None] = [None] * nprocs
        self._finished = [False] * nprocs
        self._dead: dict[int, str] = {}
        self._found: list[Deadlock] = []
        self._record_by_record = False  # feed_columns falls back to feed (see there)
        self._graph: list[Deadlock] = []
        self._p2p = P2PState(nprocs, self._record_of)
        self._coll = CollectiveTracker(nprocs, self._found, self._coll_record_of)
        self._store: EventStore | None = None  # the column path's, for _record_of
        self._curs: list[EventRecord | None] = []  # _cur resolved, during a check
        self._locks = LockTracker(nprocs, self._found)
        # kind -> its handler, which takes that kind's records (its parameter's type)
        self._handlers: dict[str, Callable[[Any], None]] = {
            "send": self._on_p2p(self._p2p.on_send),
            "recv": self._on_p2p(self._p2p.on_recv),
            "consume": self._on_p2p(self._p2p.on_consume),
            "wait": self._on_p2p(self._p2p.on_wait),
            WAITING: self._set_cur,
            "coll": self._on_coll,
            "coll_exit": self._on_coll_exit,
            "lock": self._on_p2p(self._locks.on_lock),
            "locked": self._on_p2p(self._locks.on_locked),
            "unlock": self._on_p2p(self._locks.on_unlock),
            "final": self._on_final,
        }
        #: Kind codes of the records a handler takes.
        self._handled = np.array([R.KIND_CODE[k] for k in self._handlers])

    # -- the stream (mpvis.model.stream) -----------------------------------------------

    def feed(self, batch: list[Record]) -> None:
        """Take the next records of the causally ordered stream (see mpvis.model.stream)."""
        get = self._handlers.get
        for rec in cast("list[EventRecord]", batch):  # checked records (the model's contract)
            handler = get(rec["kind"])
            if handler is not None:
                handler(rec)

    def feed_columns(self, cols: ReleasedColumns) -> None:
        """Exactly ``feed(cols.records())``, with whole-array operations over the
        model's columns (:class:`~mpvis.model.stream.StreamAnalyzer`) and no
        record dict for ordinary events: the events looked at one by one
        update the state by value (:meth:`_handle`), which holds them by
        global index, and each rank's state is its last relevant event's
        global index; records are built (:meth:`_records_of`) when a check or
        a report needs them.

        Not looked at are a blocking send and the consume of its message when
        both are in the batch (the message enters the pool and leaves it
        again), a nonblocking send likewise when a later wait of its rank in
        the batch names its request (the request opens and closes: the wait's
        handler then pops an absent request), a nonblocking receive whose
        consume and closing wait are in the batch, and blocking receives (which
        change nothing but the rank's state); a collective exit only counts
        toward its collective, without a record.
        Every other event goes to its update in stream order, as in
        :meth:`feed`; then each rank's state is its last relevant event.  The
        pool is the same because a consume removes the very send it names,
        which is in the pool when the stream is the model's; a consume whose
        send is unknown (a lost send, forced at the end of input) may take
        another message instead, so from then on every batch is fed record by
        record."""
        kind, partner = cols.kind, cols.partner
        cons_pos = np.flatnonzero(kind == _K_CONSUME)
        sends_of = partner[cons_pos]
        if self._record_by_record or (sends_of < 0).any():
            self._record_by_record = True
            self.feed(cols.records())
            return
        blocking = (cols.flags & F_BLOCKING) != 0
        bulk = (kind == _K_RECV) & blocking
        if len(cons_pos):
            closed = _closed_in_batch(cols, blocking)
            sends = np.flatnonzero(kind == _K_SEND)  # the batch's, by global index:
            order = sends[np.argsort(cols.gidx[sends])]  # a consume's send, if here
            at = np.minimum(np.searchsorted(cols.gidx[order], sends_of), max(len(order) - 1, 0))
            send_pos = order[at] if len(order) else np.zeros(len(cons_pos), dtype=np.intp)
            paired = ((cols.gidx[send_pos] == sends_of) & (kind[send_pos] == _K_SEND)
                      & (blocking[send_pos] | closed[send_pos]) & (send_pos < cons_pos))
            bulk[closed & (kind == _K_RECV) & _consumed_in_batch(cols, cons_pos)] = True
            cons_pos = cons_pos[paired]
            bulk[cons_pos] = True
            bulk[send_pos[paired]] = True
        self._store = cols.store
        todo = np.flatnonzero(~bulk)
        todo = todo[np.isin(kind[todo], self._handled)]
        recorded = self._handle(cols, todo)
        receivers = self._p2p.receivers() if len(cons_pos) else []
        if receivers:  # only ranks with nonblocking receives pending are changed
            cranks = cols.rank[cons_pos]
            refs = cols.column("ref", cons_pos)
            for r in receivers:
                mine = cranks == r
                if mine.any():
                    self._p2p.receives_consumed(r, refs[mine].tolist())
        # each rank's state: its last relevant event (kinds without a handler: state)
        relevant = np.flatnonzero(kind != _K_STATE)
        latest = np.full(self.nprocs, -1, dtype=np.int64)
        np.maximum.at(latest, cols.rank[relevant], relevant)
        ranks = np.flatnonzero(latest >= 0)
        last = latest[ranks]
        unset = ~recorded[last]  # no record made its rank's state
        cur = self._cur
        for r, g in zip(ranks[unset].tolist(), cols.gidx[last[unset]].tolist(), strict=True):
            cur[r] = g

    def _handle(self, cols: ReleasedColumns, todo: npt.NDArray[np.intp]
                ) -> npt.NDArray[np.bool_]:
        """Feed batch entries ``todo`` to their updates in stream order, by
        value, the operations held by their global indices: sends, nonblocking
        receives and consumes (:meth:`P2PState.send_by_value`,
        ``irecv_by_value``, ``consume_by_value``), waits whose requests the
        store holds as arrays (:meth:`P2PState.close_requests`), collective
        entries and exits (:meth:`CollectiveTracker.on_entry`, ``on_exit``:
        the call's arguments are the store's extras); the other entries
        (locks, ``final``, ``waiting``, waits held as dicts) through their
        records' handlers.  Returns which batch entries were fed as records.

        Two kinds are left out of the loop when they cannot change what it
        reads: a wait none of whose requests is open (held from an earlier
        batch, or opened by an operation of this one), and, when no ``final``
        is in the batch (the only update that reads which ranks are inside a
        collective), the collective exits, passed after the loop for each
        rank whose last collective event in the batch is an exit."""
        kind = cols.kind[todo]
        wait_at, counts, reqs = _wait_requests(cols, todo[kind == _K_WAIT])
        keep = self._may_close(cols, todo[(kind == _K_SEND) | (kind == _K_RECV)],
                               wait_at, counts, reqs)
        reqs, counts = reqs[np.repeat(keep, counts)], counts[keep]
        skip = wait_at[~keep]
        exits = todo[kind == _K_EXIT]
        if not (kind == _K_FINAL).any():
            skip = np.concatenate([skip, exits])
        if len(skip):
            todo = todo[~isin(todo, skip)]
            kind = cols.kind[todo]
        how = np.zeros(len(todo), dtype=np.int8)  # 0: a record
        how[kind == _K_EXIT] = 1
        how[isin(todo, wait_at[keep])] = 2
        for code, k in enumerate((_K_COLL, _K_SEND, _K_RECV, _K_CONSUME), 3):
            how[kind == k] = code
        rec_pos = todo[how == 0]
        recorded = np.zeros(len(cols.kind), dtype=bool)
        recorded[rec_pos] = True
        recs = iter(cols.records_at(rec_pos))
        flat = reqs.tolist()
        ends = iter(np.cumsum(counts).tolist())
        colls = iter(_colls(cols, todo[kind == _K_COLL]))
        sends = iter(_sends(cols, todo[kind == _K_SEND]))
        recvs = iter(_irecvs(cols, todo[kind == _K_RECV]))
        consumes = iter(_consumes(cols, todo[kind == _K_CONSUME]))
        handlers, on_exit, close = self._handlers, self._coll.on_exit, self._p2p.close_requests
        on_entry, set_group, p2p = self._coll.on_entry, self._p2p.set_group, self._p2p
        start = 0
        for h, r in zip(how.tolist(), cols.rank[todo].tolist(), strict=True):
            if h == 0:
                rec = next(recs)
                handlers[rec["kind"]](rec)
            elif h == 1:
                on_exit(r)
            elif h == 2:
                end = next(ends)
                close(r, flat[start:end])
                start = end
            elif h == 3:
                comm, args, g = next(colls)
                group = on_entry(r, comm, args, g)
                if group:
                    set_group(comm, group)
            elif h == 4:
                seq, dest, comm, tag, req, sync, buffered, g = next(sends)
                p2p.send_by_value(r, seq, dest, comm, tag, req=req, sync=sync,
                                  buffered=buffered, ev=g)
            elif h == 5:
                seq, req, g = next(recvs)
                p2p.irecv_by_value(r, seq, req, g)
            else:
                recv, src, comm, tag, send_seq = next(consumes)
                p2p.consume_by_value(r, recv, src, comm, tag, send_seq=send_seq)
        if len(exits) and not (kind == _K_EXIT).any():  # the exits left out of the loop
            entered = np.flatnonzero((cols.kind == _K_COLL) | (cols.kind == _K_EXIT))
            latest = np.full(self.nprocs, -1, dtype=np.int64)
            np.maximum.at(latest, cols.rank[entered], entered)
            ranks = np.flatnonzero(latest >= 0)
            for r in ranks[cols.kind[latest[ranks]] == _K_EXIT].tolist():
                on_exit(r)
        return recorded

    def _may_close(self, cols: ReleasedColumns, ops: npt.NDArray[np.intp],
                   wait_at: npt.NDArray[np.intp], counts: npt.NDArray[np.int64],
                   reqs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """For each wait ``wait_at`` (its ``counts`` requests ``reqs``): whether
        one of its requests is open now (:meth:`P2PState.open_keys`) or is
        one of the nonblocking operations ``ops`` of the batch (a request is an
        int32, as the store's column holds it: a wider one is never open)."""
        held = self._p2p.open_keys()
        if not len(wait_at) or (not held and not len(ops)):
            return np.zeros(len(wait_at), dtype=bool)
        flags = cols.flags[ops]
        ops = ops[(flags & F_BLOCKING) == 0]
        opened = np.concatenate([
            np.array([r * _REQ_SPAN + q + 2**31 for r, q in held], dtype=np.int64),
            cols.rank[ops].astype(np.int64) * _REQ_SPAN
            + (cols.column("req", ops).astype(np.int64) + 2**31)])
        fits = (reqs >= -(2**31)) & (reqs < 2**31)
        owner = np.repeat(np.arange(len(wait_at)), counts)
        wkey = cols.rank[wait_at[owner]].astype(np.int64) * _REQ_SPAN + (reqs + 2**31)
        hit = fits & isin(wkey, opened)
        return np.bincount(owner[hit], minlength=len(wait_at)) > 0

    def _records_of(self, evs: list[object]) -> list[EventRecord]:
        """Events' records from the handles the state holds: a record itself
        (record path) or a global index in the store (column path), the
        latter built a batch at a time."""
        out = cast("list[EventRecord]", list(evs))
        at = [i for i, ev in enumerate(evs) if not isinstance(ev, dict)]
        if at:
            assert self._store is not None, "global indices come with the column path"
            g = np.array([evs[i] for i in at], dtype=np.int64)
            recs = ReleasedColumns.of(self._store, g).records_at(np.arange(len(g)))
            for i, rec in zip(at, recs, strict=True):
                out[i] = rec
        return out

    def _record_of(self, ev: object) -> EventRecord:
        return self._records_of([ev])[0]

    def _coll_record_of(self, ev: object) -> CollRecord:
        return cast("CollRecord", self._record_of(ev))

    def finish(self) -> None:
        """The input has ended: decide which blocked ranks are deadlocked (``final=True``)."""
        self.check(final=True)

    @property
    def deadlocks(self) -> list[Deadlock]:
        """Deadlocks found so far: those proven while feeding, then those of the last check."""
        return [*self._found, *self._graph]

    def mark_dead(self, rank: int, detail: str) -> None:
        """The rank crashed or was killed: it will never act again (like a finished rank)."""
        self._dead[rank] = detail

    # -- record handlers ---------------------------------------------------------------

    def _set_cur(self, rec: EventRecord) -> None:
        self._cur[rec["rank"]] = rec

    def _on_p2p(self, update: Callable[[Any], None]) -> Callable[[EventRecord], None]:
        cur = self._cur

        def handle(rec: EventRecord) -> None:
            update(rec)
            cur[rec["rank"]] = rec

        return handle

    def _on_coll(self, rec: CollRecord) -> None:
        self._cur[rec["rank"]] = rec
        group = self._coll.on_coll(rec)
        if group:
            self._p2p.set_group(rec.get("comm", 0), group)

    def _on_coll_exit(self, rec: CollExitRecord) -> None:
        self._cur[rec["rank"]] = rec
        self._coll.on_exit(rec["rank"])

    def _on_final(self, rec: FinalRecord) -> None:
        rank = rec["rank"]
        self._cur[rank] = rec
        self._finished[rank] = True
        self._coll.on_final(rank)

    # -- the wait-for graph ------------------------------------------------------------

    def _clauses(self, rank: int, cur: EventRecord, final: bool) -> list[Clause] | None:
        if cur["kind"] == "coll":
            return self._coll.blocking_clauses(rank)
        if cur["kind"] == "lock":
            return self._locks.blocking_clauses(rank, cur)
        return self._p2p.blocking_clauses(rank, cur, final, self._curs)

    def _current(self) -> list[EventRecord | None]:
        """Each rank's last relevant record (:attr:`_cur` with its handles resolved)."""
        held = [(r, c) for r, c in enumerate(self._cur) if c is not None]
        out: list[EventRecord | None] = [None] * self.nprocs
        for (r, _), rec in zip(held, self._records_of([c for _, c in held]), strict=True):
            out[r] = rec
        return out

    def _known_stuck(self) -> dict[int, Deadlock]:
        """Ranks whose current blocking event is part of a deadlock found while feeding."""
        known: dict[int, Deadlock] = {}
        for d in self._found:
            for rank, seq in d.events:
                cur = self._curs[rank]
                if cur is not None and cur["seq"] == seq and not self._finished[rank]:
                    known.setdefault(rank, d)
        return known

    def check(self, final: bool) -> list[Deadlock]:
        """Build the wait-for graph now and return every deadlock found so far.

        ``final=False``: live, all ranks observed idle for a while; ranks not in a
        blocking operation are running.  ``final=True``: the input has ended;
        ranks with open requests and no ``final`` are blocked in a wait on them.
        """
        self._curs = self._current()
        known = self._known_stuck()
        blocked: dict[int, list[Clause]] = {}
        free: list[int] = []
        for rank in range(self.nprocs):
            cur = self._curs[rank]
            if self._finished[rank] or rank in known or rank in self._dead:
                continue
            clauses = None if cur is None else self._clauses(rank, cur, final)
            if clauses is None:
                free.append(rank)
            else:
                blocked[rank] = clauses
        released = reduce_graph(blocked, free)
        able = released.union(free)
        stuck = sorted(r for r in blocked if r not in released)
        unsat = {r: [c for c in blocked[r] if not any(t in able for t in c.targets)] for r in stuck}
        edges = [
            WaitEdge(r, t, c.kind, c.event, c.op, c.site, c.lock)
            for r in stuck
            for c in unsat[r]
            for t in c.targets
        ]
        self._graph = [
            self._describe(group, unsat, edges, known)
            for group in weak_components(stuck, edges)
            if any(r in unsat for r in group)
        ]
        return self.deadlocks

    def _terminal(self, rank: int, known: dict[int, Deadlock]) -> str:
        if self._finished[rank]:
            return "finished"
        if rank in self._dead:
            return f"dead ({self._dead[rank]})"
        if rank in known:
            return f"stuck ({known[rank].check}, reported separately)"
        return "not blocked"

    def _describe(
        self,
        group: list[int],
        unsat: dict[int, list[Clause]],
        all_edges: list[WaitEdge],
        known: dict[int, Deadlock],
    ) -> Deadlock:
        members = set(group)
        edges = [e for e in all_edges if e.src in members]
        cycle = find_cycle(edges)
        on_cycle = set(pairwise(cycle))
        if cycle:
            kinds = {e.kind for e in edges if (e.src, e.dst) in on_cycle}
        else:
            kinds = {c.kind for r in group for c in unsat.get(r, ())}
        sentences: list[str] = []
        nodes: dict[int, str] = {}
        events: list[tuple[int, int]] = []
        for rank in group:
            clauses = unsat.get(rank)
            if clauses is None:
                nodes[rank] = self._terminal(rank, known)
                verb = "has" if self._finished[rank] else "is"
                sentences.append(f"rank {rank} {verb} {nodes[rank]}")
                continue
            events.append(clauses[0].event)
            nodes[rank] = "; ".join(f"{c.op}{describe_site(c.site)}" for c in clauses)
            phrases = [self._phrase(c, known) for c in _merge_collective(clauses)]
            sentences.append(f"rank {rank} " + "; and ".join(phrases))
        reason = "Deadlock: " + "; ".join(sentences) + "."
        if cycle:
            reason += " Wait-for cycle: " + " -> ".join(map(str, cycle)) + "."
        return Deadlock(
            kind=classify(kinds),
            ranks=group,
            reason=reason,
            check="wait-for",
            events=sorted(set(events)),
            edges=edges,
            cycle=cycle,
            nodes=nodes,
        )

    def _phrase(self, clause: Clause, known: dict[int, Deadlock]) -> str:
        def who(t: int) -> str:
            if self._finished[t]:
                return f"{t} (finished)"
            if t in self._dead:
                return f"{t} (dead)"
            if t in known:
                return f"{t} (stuck in a reported deadlock)"
            return str(t)

        site = describe_site(clause.site)
        names = ", ".join(who(t) for t in clause.targets)
        if clause.kind == COLLECTIVE:
            plural = "s" if len(clause.targets) > 1 else ""
            return f"waits in {clause.op}{site} for rank{plural} {names} to reach it"
        if clause.kind == LOCK:
            return f"waits for {clause.op}{site}, held by rank {names}"
        if not clause.targets:
            return f"waits in {clause.op}{site}, which no other rank can satisfy"
        if len(clause.targets) == 1:
            return f"waits in {clause.op}{site} for rank {names}"
        return f"waits in {clause.op}{site} for any of ranks {names}, none of which can act"


_REQ_SPAN = 2**32  # a request of the int32 column, shifted to [0, 2**32), per rank


def _closed_in_batch(cols: ReleasedColumns, blocking: npt.NDArray[np.bool_]
                     ) -> npt.NDArray[np.bool_]:
    """For each entry: a nonblocking send or receive whose request a later wait
    of its rank in the batch names (the request opens and closes inside the
    batch).  Waits whose requests are held as dicts (odd values) close nothing
    here: their requests stay handled record by record."""
    kind = cols.kind
    out = np.zeros(len(kind), dtype=bool)
    ops = np.flatnonzero(((kind == _K_SEND) | (kind == _K_RECV)) & ~blocking)
    wait_pos = np.flatnonzero(kind == _K_WAIT)
    if not len(ops) or not len(wait_pos):
        return out
    wait_pos, counts, reqs = _wait_requests(cols, wait_pos)
    if not len(reqs):
        return out
    at = np.repeat(wait_pos, counts)
    fits = (reqs >= -(2**31)) & (reqs < 2**31)
    at, reqs = at[fits], reqs[fits]
    wkey = cols.rank[at].astype(np.int64) * _REQ_SPAN + (reqs + 2**31)
    order = np.lexsort((at, wkey))
    wkey, at = wkey[order], at[order]
    last = np.flatnonzero(np.append(wkey[1:] != wkey[:-1], True))  # latest wait per key
    keys, latest = wkey[last], at[last]
    okey = (cols.rank[ops].astype(np.int64) * _REQ_SPAN
            + (cols.column("req", ops).astype(np.int64) + 2**31))
    k = np.minimum(np.searchsorted(keys, okey), len(keys) - 1)
    out[ops] = (keys[k] == okey) & (latest[k] > ops)
    return out


def _wait_requests(cols: ReleasedColumns, wait_pos: npt.NDArray[np.intp]
                   ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The waits among batch entries ``wait_pos`` whose requests the store holds
    as arrays (:meth:`Extras.wait_buffers <mpvis.model.extras.Extras.wait_buffers>`:
    plain ints), in the same order, how many requests each has, and all their
    requests one wait after the other."""
    none = (wait_pos[:0], np.zeros(0, np.int64), np.zeros(0, np.int64))
    wg, woff, wreq = cols.store.extras.wait_buffers()
    if not wg or not len(wait_pos):
        return none
    wgv, offv = np.frombuffer(wg, dtype=np.int64), np.frombuffer(woff, dtype=np.int64)
    g = cols.gidx[wait_pos]
    row = np.minimum(np.searchsorted(wgv, g), len(wgv) - 1)
    held = wgv[row] == g
    wait_pos, row = wait_pos[held], row[held]
    counts = offv[row + 1] - offv[row]
    total = int(counts.sum())
    first = np.repeat(offv[row] - (np.cumsum(counts) - counts), counts)
    reqs = np.frombuffer(wreq, dtype=np.int64)[first + np.arange(total)] if total else none[2]
    return wait_pos, counts, reqs


def _colls(cols: ReleasedColumns, pos: npt.NDArray[np.intp]
           ) -> Iterable[tuple[int, Mapping[str, Any], int]]:
    """Of each collective entry at ``pos``: comm, arguments (the store's extras), global index."""
    return zip(cols.column("comm", pos).tolist(),
               EventArrays(cols.store, cols.gidx).extras(pos), cols.gidx[pos].tolist(), strict=True)


def _sends(cols: ReleasedColumns, pos: npt.NDArray[np.intp]
           ) -> Iterable[tuple[int, int, int, int, int | None, bool, bool, int]]:
    """Of each send at ``pos``: seq, dest, comm, tag, request (``None`` when
    blocking), synchronous, buffered (``mode``), global index."""
    flags = cols.flags[pos]
    reqs: list[int | None] = cols.column("req", pos).tolist()
    for i in np.flatnonzero(flags & F_BLOCKING).tolist():
        reqs[i] = None
    buffered = [x.get("mode") == "buffered"
                for x in EventArrays(cols.store, cols.gidx).extras(pos)]
    return zip(cols.seq[pos].tolist(), cols.column("peer", pos).tolist(),
               cols.column("comm", pos).tolist(), cols.column("tag", pos).tolist(), reqs,
               ((flags & F_SYNC) != 0).tolist(), buffered, cols.gidx[pos].tolist(),
               strict=True)


def _irecvs(cols: ReleasedColumns, pos: npt.NDArray[np.intp]
            ) -> Iterable[tuple[int, int, int]]:
    """Of each (nonblocking: the blocking ones are skipped) receive at ``pos``:
    seq, request, global index."""
    assert not (cols.flags[pos] & F_BLOCKING).any(), "blocking receives change no p2p state"
    return zip(cols.seq[pos].tolist(), cols.column("req", pos).tolist(),
               cols.gidx[pos].tolist(), strict=True)


def _consumes(cols: ReleasedColumns, pos: npt.NDArray[np.intp]
              ) -> Iterable[tuple[int, int, int, int, int]]:
    """Of each consume at ``pos``: its receive's seq, src, comm, tag and its
    send's seq (every consume has its send here: see ``feed_columns``)."""
    send_seq = EventArrays(cols.store, cols.partner[pos].astype(np.int64)).field("seq")
    return zip(cols.column("ref", pos).tolist(), cols.column("peer", pos).tolist(),
               cols.column("comm", pos).tolist(), cols.column("tag", pos).tolist(),
               send_seq.tolist(), strict=True)


def _consumed_in_batch(cols: ReleasedColumns, cons_pos: npt.NDArray[np.intp]
                       ) -> npt.NDArray[np.bool_]:
    """For each entry: a receive whose consume is among the batch's consumes ``cons_pos``."""
    out = np.zeros(len(cols.kind), dtype=bool)
    recv_pos = np.flatnonzero(cols.kind == _K_RECV)
    if not len(recv_pos) or not len(cons_pos):
        return out
    ckey = np.sort(cols.rank[cons_pos].astype(np.int64) * _REQ_SPAN
                   + cols.column("ref", cons_pos).astype(np.int64))
    rkey = cols.rank[recv_pos].astype(np.int64) * _REQ_SPAN + cols.seq[recv_pos]
    k = np.minimum(np.searchsorted(ckey, rkey), len(ckey) - 1)
    out[recv_pos] = ckey[k] == rkey
    return out


def _merge_collective(clauses: list[Clause]) -> list[Clause]:
    """One clause per collective (its per-member clauses joined), for the reason text."""
    out: list[Clause] = []
    for c in clauses:
        last = out[-1] if out else None
        if (
            c.kind == COLLECTIVE
            and last is not None
            and last.kind == COLLECTIVE
            and (last.event == c.event)
        ):
            out[-1] = Clause(last.targets + c.targets, c.kind, c.event, c.op, c.site)
        else:
            out.append(c)
    return out


def detect_deadlocks(records: Iterable[Record], nprocs: int) -> list[Deadlock]:
    """Feed a whole causally ordered, normalised event stream and finish; the deadlocks."""
    monitor = DeadlockMonitor(nprocs)
    monitor.feed(list(records))
    monitor.finish()
    return monitor.deadlocks
