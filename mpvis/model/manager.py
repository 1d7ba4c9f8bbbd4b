"""The manager: builds the functional model incrementally from trace records.

As in MPVisualizer (``mpvisualizer-race-detection.txt`` section 2) the
manager receives records one batch at a time, in arrival order (ranks
interleaved in any way, a consume possibly before its send), and builds the
functional model: events in growable columns, messages (send to consume
links), vector clocks, process states, and the classifier's receive pairs.

Contract of :meth:`ModelManager.add_batch`:

* every record is checked (:func:`mpvis.protocol.records.check_record` plus the
  rules needing context: ``seq`` 0, 1, 2, ... per rank with no gaps, nothing
  after ``final``, a ``consume`` naming an earlier unconsumed ``recv`` of its
  rank whose arguments it satisfies, requests live when waited, a message
  consumed once, send and consume agreeing on tag, destination and
  communicator);
* the first bad record raises :class:`ModelInputError` with its ``index`` in
  the batch; the records before it are kept and fully processed, the bad one
  and those after it are not (the caller may resubmit the rest);
* observers get one :class:`ModelChange` per batch; analyzers get the
  records in a causally consistent order (:mod:`mpvis.model.stream`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from typing import Any

import numpy as np

from mpvis.model import context
from mpvis.model.clocks import ClockStore
from mpvis.model.collectives import ALL_TO_ALL, CollectiveBook
from mpvis.model.entities import Event, Message, Process, Views, event_at
from mpvis.model.errors import ModelInputError
from mpvis.model.ingest import F_BLOCKING, Batch, extract
from mpvis.model.matching import ChannelBook
from mpvis.model.observer import ModelChange, ModelObserver
from mpvis.model.races import Race, RaceTracker, RecvFacts
from mpvis.model.status import DEAD, ENDED, FINISHED, RUNNING, SUSPENDED, rank_status
from mpvis.model.store import EventStore
from mpvis.model.stream import RecordAnalyzer
from mpvis.protocol import records as R
from mpvis.protocol.record_types import Record

Key = tuple[int, int]

K_SEND, K_RECV, K_CONSUME, K_WAIT = (R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME, R.WAIT))
K_COLL, K_COLL_EXIT = R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT]
K_LOCK, K_LOCKED, K_FINAL = R.KIND_CODE[R.LOCK], R.KIND_CODE[R.LOCKED], R.KIND_CODE[R.FINAL]


#: Runs of events at most this long get their Lamport clocks in a Python loop.
_SHORT_RUN = 48

__all__ = ["DEAD", "ENDED", "FINISHED", "RUNNING", "SUSPENDED", "ModelManager"]


class ModelManager:
    """Builds and holds the functional model of one run."""


    def __init__(self, header: Record, *, validate: bool = True) -> None:
        R.check_header(header)
        self.header = header
        self.nprocs: int = header["nprocs"]
        self.validate = validate
        n = self.nprocs
        #: The event columns and the queries over them (the first room).
        self.store = store = EventStore(n)
        # The store's columns under their historical names (the same objects).
        self.c_rank, self.c_seq, self.c_kind = store.c_rank, store.c_seq, store.c_kind
        self.c_t, self.c_site, self.c_comm = store.c_t, store.c_site, store.c_comm
        self.c_peer, self.c_tag, self.c_flags = store.c_peer, store.c_tag, store.c_flags
        self.c_req, self.c_ref, self.c_partner = store.c_req, store.c_ref, store.c_partner
        self.c_size = store.c_size
        #: Lamport clock of each causally processed event (-1 until processed):
        #: consistent with happened-before, for the diagram's logical layout.
        self.c_lamport = store.c_lamport
        self.extras = store.extras
        self.site_table = store.site_table
        #: Call sites by id (``c_site``).
        self.sites: list[str] = store.sites
        self.by_rank = store.by_rank
        # -- context --
        self._live_reqs: list[dict[int, int]] = [{} for _ in range(n)]  # req -> seq
        self._channels = ChannelBook(self._send_claimed)
        self._early: dict[Key, int] = {}  # send key -> consume gidx awaiting that send
        #: After :meth:`finish`: sends consumed but never recorded because their
        #: rank died first (send key -> the consume's gidx).
        self.lost_sends: dict[Key, int] = {}
        self._early_of: dict[int, Key] | None = None  # consume gidx -> _early key, in finish
        self._inferring = False  # some consume lacked 'send': channels are indexed
        self._channel_upto = 0
        self.colls = CollectiveBook(n)
        self.finished = [False] * n
        self.dead: dict[int, str] = {}
        self.input_ended = False
        self.locks_held: list[dict[str, int]] = [{} for _ in range(n)]
        # -- causal processing --
        self.clocks = ClockStore(n)
        self.done = [0] * n
        self._lam_last = [-1] * n  # Lamport clock of each rank's last processed event
        #: seqs of each rank's consumes, collective entries and exits (clock merges)
        self._merge_at: list[array[int]] = [array("i") for _ in range(n)]
        self._pending: list[list[Record]] = [[] for _ in range(n)]  # arrived, not released
        self._head = [0] * n  # released prefix of each _pending list
        self._done_waiters: list[dict[int, list[int]]] = [{} for _ in range(n)]
        self._entry_of: dict[Key, int] = {}  # coll -> instance, until processed
        self._coll_processed: dict[tuple[int, int], int] = {}  # (comm, instance) -> entries
        self._wake: dict[Any, list[int]] = {}
        self.analyzers: list[RecordAnalyzer] = []
        self.observers: list[ModelObserver] = []
        self.races = RaceTracker(RecvFacts(
            receive=self.store.receive_state,
            clock_ready=self.clock_ready, happened_before=self.clocks.happened_before,
            site=self.site_of,
        ))
        self._new_messages: list[int] = []
        self._status_dirty: set[int] = set()
        self._touched_sink: set[int] = set()  # ranks woken while ingesting
        self._exit_of: dict[Key, tuple[int, str]] = {}  # coll_exit -> (instance, op)
        #: comm -> (instance, joined clock row, largest Lamport clock of its entries)
        self._coll_cache: dict[int, tuple[int, int, int]] = {}

    # ------------------------------------------------------------------ input
    def add(self, rec: Record) -> None:
        """Add one record (see :meth:`add_batch`)."""
        self.add_batch([rec])

    def add_batch(self, batch: list[Record]) -> None:
        """Add records in arrival order; see the module docstring for the contract."""
        cols = extract(batch, self.nprocs, self.site_table, self.validate)
        self.add_columns(cols, batch)

    def add_columns(self, cols: Batch, records: list[Record] | None = None) -> None:
        """Add a batch already turned into columns by :func:`~mpvis.model.ingest.extract`
        (possibly in another process, see :mod:`mpvis.tracefile.parse_worker`).

        ``cols.site`` must hold ids of :attr:`site_table`.  ``records`` are the
        batch's dicts, needed only when analyzers are attached (they get
        records); without them the records are rebuilt from the columns.
        Same contract as :meth:`add_batch`: the error's ``index`` is in the batch.
        """
        start = len(self.c_rank)
        touched: set[int] = set()
        error: ModelInputError | None = None
        try:
            if cols.error is not None:
                error = ModelInputError(str(cols.error), rank=cols.error_rank,
                                        seq=cols.error_seq, index=cols.n)
            k, seq_error = self._sequence_prefix(cols)
            if seq_error is not None:
                error = seq_error
            self._commit(cols, k, touched, records)
            ctx_error = self._apply_context(cols, start, k)
            if ctx_error is not None:
                self._truncate(start + (ctx_error.index or 0))
                error = ctx_error
        finally:
            self._status_dirty.update(touched)
            self._advance(touched)
            self.races.flush(final=False)
            self._notify(start)
        if error is not None:
            raise error

    def _sequence_prefix(self, cols: Batch) -> tuple[int, ModelInputError | None]:
        """Vectorised: ``seq`` 0, 1, 2, ... per rank, nothing after ``final``.

        Returns the length of the prefix that keeps those rules and the error
        at its end, if any."""
        n = cols.n
        if n == 0:
            return 0, None
        ranks = np.asarray(cols.rank[:n], dtype=np.int64)
        seqs = np.asarray(cols.seq[:n], dtype=np.int64)
        codes = np.asarray(cols.code[:n], dtype=np.int64)
        base = np.fromiter((len(b) for b in self.by_rank), dtype=np.int64, count=self.nprocs)
        order = np.argsort(ranks, kind="stable")
        sr = ranks[order]
        starts = np.flatnonzero(np.r_[True, sr[1:] != sr[:-1]])
        pos = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        expected = base[sr] + pos
        wrong_seq = seqs[order] != expected
        after_final = np.asarray(self.finished, dtype=bool)[sr]
        fin = codes[order] == K_FINAL
        after_final[1:] |= fin[:-1] & (sr[1:] == sr[:-1])
        bad = wrong_seq | after_final
        if not bad.any():
            return n, None
        j = int(np.flatnonzero(bad)[np.argmin(order[bad])])
        i = int(order[j])
        r, sq = int(ranks[i]), int(seqs[i])
        if after_final[j]:
            msg = f"rank {r} has an event after its 'final'"
        else:
            exp = int(expected[j])
            what = "repeats" if sq < exp else "skips"
            msg = (f"seq {sq} of rank {r} {what} (expected {exp}: seq must be 0, 1, 2, ... "
                   "in order, with no gaps)")
        return i, ModelInputError(msg, rank=r, seq=sq, index=i)

    def _commit(self, cols: Batch, k: int, touched: set[int],
                records: list[Record] | None) -> None:
        """Append the first ``k`` records of a checked batch to the columns."""
        if k == 0:
            return
        start = len(self.c_rank)
        touched.update(self.store.append(cols, k))
        codes = cols.code[:k]
        merges = np.flatnonzero((codes == K_CONSUME) | (codes == K_COLL)
                                | (codes == K_COLL_EXIT))
        if len(merges):
            mranks = cols.rank[merges]
            mseqs = cols.seq[merges]
            for r in np.unique(mranks).tolist():
                self._merge_at[r].frombytes(mseqs[mranks == r].astype(np.int32).tobytes())
        if self.analyzers:
            pending = self._pending
            if records is None:
                records = [self.store.record_at(start + i) for i in range(k)]
            for rec in records[:k]:
                if "comm" not in rec:
                    rec["comm"] = 0
                pending[rec["rank"]].append(rec)

    def _apply_context(self, cols: Batch, start: int, k: int) -> ModelInputError | None:
        """Context rules, record by record, for the kinds that have them; then
        link sends that arrived after their consumes.  Returns the first error
        (its ``index`` in the batch); records from it on must be dropped."""
        if k == 0:
            return None
        rows = context.Rows(cols, start, k)
        codes = rows.code
        limit, error = k, None
        for i in np.flatnonzero(_special_mask(cols.code[:k], cols.flags[:k])).tolist():
            try:
                _HANDLERS[codes[i]](self, rows, i)
            except ModelInputError as exc:
                exc.index = i
                limit, error = i, exc
                break
        recv = np.flatnonzero(cols.code[:limit] == K_RECV)
        self.races.on_recvs(cols.rank[recv], cols.seq[recv], cols.comm[recv], cols.peer[recv],
                            cols.tag[recv])
        if error is not None:
            return error
        early = self._early
        if not (early or self._inferring):
            return None
        rank, seq, peer, comm, tag = rows.rank, rows.seq, rows.peer, rows.comm, rows.tag
        for i in np.flatnonzero(cols.code[:k] == K_SEND).tolist():
            # sends indexed when inference started (_ensure_channels) are not added twice
            if self._inferring and start + i >= self._channel_upto:
                chan = (rank[i], peer[i], comm[i], tag[i])
                self._channels.add_send(chan, seq[i])
                context.resolve(self, chan)
            if early:
                cg = early.pop((rank[i], seq[i]), None)
                if cg is not None:
                    try:
                        context.link_checked(self, start + i, cg)
                    except ModelInputError as exc:
                        exc.index = i
                        return exc
        if self._inferring:
            self._channel_upto = start + k
        return None

    def _truncate(self, g: int) -> None:
        """Drop the events from global index ``g`` on (after a context error)."""
        before = [len(events) for events in self.by_rank]
        kept = self.store.truncate(g)
        for r, cut in enumerate(kept):
            at = self._merge_at[r]
            del at[bisect_left(at, cut):]
            if self.analyzers:
                for _ in range(before[r] - cut):
                    self._pending[r].pop()
        if self._inferring:
            self._inferring = False
            self._ensure_channels()

    def _ensure_channels(self) -> None:
        """Start inferring sends: index every send so far by channel."""
        if self._inferring:
            return
        self._inferring = True
        kinds = self.c_kind.view()
        for g in np.flatnonzero(kinds == K_SEND).tolist():
            self._channels.add_send((int(self.c_rank.data[g]), int(self.c_peer.data[g]),
                                     int(self.c_comm.data[g]), int(self.c_tag.data[g])),
                                    int(self.c_seq.data[g]))
        self._channel_upto = len(self.c_rank)

    def mark_rank_dead(self, rank: int, detail: str) -> None:
        """The rank crashed or was killed: its trace ends where it died."""
        self.dead[rank] = detail
        self._status_dirty.add(rank)
        self._notify(len(self.c_rank))

    def finish(self) -> None:
        """The input has ended: settle everything that waited for more records.

        A consume naming a send beyond the end of a rank without ``final``
        (the rank was killed before it shipped the send) is kept: the send is
        a *lost send* (:attr:`lost_sends`) and its rank is marked dead with
        what it lost.  Raises :class:`ModelInputError` if a consume names a
        send that cannot be lost that way (its rank finished, or the event is
        not a send) or a consume without ``send`` has no send to infer.
        """
        self.input_ended = True
        self._advance(set(range(self.nprocs)))
        # What still waits can never get its cause: force the stuck events one
        # at a time, so everything that can still be ordered is ordered.
        while True:
            stuck = [r for r in range(self.nprocs) if self.done[r] < len(self.by_rank[r])]
            if not stuck:
                break
            self._advance({stuck[0]}, final=True)
        problem: ModelInputError | None = None
        for key, g in self._early.items():
            r, s = key
            if not self.finished[r] and s >= len(self.by_rank[r]):
                # The sender died before shipping it (a SIGKILLed rank): a lost send.
                self.lost_sends[key] = g
                continue
            problem = ModelInputError(
                f"consume names send {list(key)}, which is not in the trace"
                + (f" (rank {r} ended with 'final' at seq {len(self.by_rank[r]) - 1})"
                   if self.finished[r] else ""),
                rank=int(self.c_rank.data[g]), seq=int(self.c_seq.data[g]))
            break
        self._mark_lost_senders_dead()
        for chan, cseq in self._channels.pending_inferred():
            problem = problem or ModelInputError(
                f"consume from rank {chan[0]} with tag {chan[3]} has no send to match "
                "(non-overtaking rule)", rank=chan[1], seq=cseq)
        self.races.finish()
        for a in self.analyzers:
            a.finish()
        self._status_dirty.update(range(self.nprocs))
        self._notify(len(self.c_rank), finished=True)
        if problem is not None:
            raise problem

    def _lost_cause(self, g: int) -> int:
        """For a consume ``g`` forced at the end of input whose named send is
        beyond the end of a rank that did not finish (a lost send): the gidx of
        that rank's last recorded event, once processed (the lost send came
        after it); else -1."""
        if self._early_of is None:
            self._early_of = {cg: key for key, cg in self._early.items()}
        key = self._early_of.get(g)
        if key is None:
            return -1
        q, qs = key
        events = self.by_rank[q]
        if self.finished[q] or not events or qs < len(events) or self.done[q] < len(events):
            return -1
        return int(events[-1])

    def _mark_lost_senders_dead(self) -> None:
        """A rank whose sends were consumed but never recorded died before it
        shipped its last records: it is dead (for the model and for analyzers
        that track dead ranks), with what it lost as the detail."""
        lost: dict[int, list[int]] = {}
        for r, s in self.lost_sends:
            lost.setdefault(r, []).append(s)
        for r, seqs in sorted(lost.items()):
            detail = (f"its trace ends at seq {len(self.by_rank[r]) - 1} but peers consumed "
                      f"{len(seqs)} message(s) it sent later (lost sends, seq "
                      f"{', '.join(map(str, sorted(seqs)[:5]))}{'...' if len(seqs) > 5 else ''})")
            self.dead.setdefault(r, detail)
            for a in self.analyzers:
                mark = getattr(a, "mark_dead", None)  # the deadlock monitor's
                if mark is not None:
                    mark(r, self.dead[r])

    # ------------------------------------------------------------ helpers
    def _wake_key(self, key: Any) -> None:
        ranks = self._wake.pop(key, None)
        if ranks:
            self._touched_sink.update(ranks)

    # ------------------------------------------------------- causal order
    def _advance(self, touched: set[int], final: bool = False) -> None:
        """Process events in causal order: clocks, then release to analyzers.

        With ``final`` (the input has ended), the first event of the first rank
        in ``touched`` is processed even though a cause is missing; everything
        after it again waits for its causes."""
        work = set(touched) | self._touched_sink
        self._touched_sink = set()
        out: list[Record] = []
        force = min(touched) if final and touched else None
        while work:
            r = work.pop()
            self._advance_rank(r, out, work, r == force)
            if r == force:
                force = None
            if self._touched_sink:
                work |= self._touched_sink
                self._touched_sink = set()
        if out:
            for a in self.analyzers:
                a.feed(out)

    def _advance_rank(self, r: int, out: list[Record], work: set[int], final: bool) -> None:
        """Advance rank ``r`` in causal order as far as its dependencies allow
        (with ``final``, its next event is processed even if a cause is missing).

        Only consumes and collective entries and exits are looked at one by
        one; the Lamport clocks of the run are then filled in with one NumPy
        operation (one more than the predecessor's, plus the jumps at merges)."""
        events = self.by_rank[r]
        a = s = self.done[r]
        n = len(events)
        if s >= n:
            return
        c_kind, c_partner, c_lamport = self.c_kind.data, self.c_partner.data, self.c_lamport.data
        c_rank, c_seq = self.c_rank.data, self.c_seq.data
        done = self.done
        merge_one = self.clocks.merge_one
        lam_base = self._lam_last[r] + 1  # Lamport clock of event a, before jumps
        jumps: list[tuple[int, int]] = []
        jumped = 0
        end = n
        analyzers = bool(self.analyzers)
        at = self._merge_at[r]
        lo = bisect_left(at, s)
        for stop in at[lo:bisect_left(at, n, lo)]:
            done[r] = stop  # everything before this event is processed
            g = events[stop]
            code = c_kind[g]
            expected = lam_base + (stop - a) + jumped
            first = expected
            if code == K_CONSUME:
                sg = c_partner[g]
                if sg < 0:
                    if not final:
                        self._wait_on(("match", r, stop), r)
                        end = stop
                        break
                    lg = self._lost_cause(g)
                    if lg >= 0:  # a lost send: after every recorded event of its rank
                        merge_one(r, stop, c_rank[lg], c_seq[lg])
                        first = max(first, c_lamport[lg] + 1)
                else:
                    q, qs = c_rank[sg], c_seq[sg]
                    if done[q] <= qs:
                        if not final:
                            self._wait_on(("done", q, qs), r)
                            end = stop
                            break
                    else:
                        merge_one(r, stop, q, qs)
                        if c_lamport[sg] >= first:
                            first = c_lamport[sg] + 1
                        if analyzers:
                            rec = self._pending[r][self._head[r] + stop - a]
                            if "send" not in rec:
                                rec["send"] = [q, qs]
            elif code == K_COLL_EXIT:
                joined = self._collective_clock(r, stop, final)
                if joined is None:
                    end = stop
                    break
                self.clocks.merge_joined(r, stop, joined[0])
                first = max(first, joined[1] + 1)
            else:
                self._entered(r, stop)
            if first > expected:
                jumps.append((stop - a, first - expected))
                jumped += first - expected
            c_lamport[g] = first
            done[r] = stop + 1
            final = False  # only the first blocked event is forced
        if end > a:
            self._release(r, a, end, out, work, lam_base=lam_base, jumps=jumps)
        else:
            done[r] = a

    def _release(self, r: int, a: int, b: int, out: list[Record], work: set[int], *,
                 lam_base: int, jumps: list[tuple[int, int]]) -> None:
        """Events ``a..b-1`` of rank ``r`` are causally processed; event ``a + i``
        gets Lamport clock ``lam_base + i`` plus the ``jumps`` at or before ``i``."""
        self.done[r] = b
        events = self.by_rank[r]
        if b - a <= _SHORT_RUN:  # NumPy's per-call cost would dominate
            c_lamport = self.c_lamport.data
            extra = 0
            it = iter(jumps)
            nxt = next(it, None)
            for i in range(b - a):
                if nxt is not None and nxt[0] == i:
                    extra += nxt[1]
                    nxt = next(it, None)
                c_lamport[events[a + i]] = lam_base + i + extra
            self._lam_last[r] = lam_base + b - a - 1 + extra
        else:
            lam = np.arange(lam_base, lam_base + b - a, dtype=np.int64)
            if jumps:
                step = np.zeros(b - a, dtype=np.int64)
                for i, j in jumps:
                    step[i] = j
                lam += np.cumsum(step)
            idx = np.frombuffer(events, dtype=np.int64)[a:b]
            self.c_lamport.view()[idx] = lam
            self._lam_last[r] = int(lam[-1])
        if self.analyzers:
            head = self._head[r]
            pend = self._pending[r]
            out.extend(pend[head:head + b - a])
            head += b - a
            if head == len(pend):  # all released: keep no record alive
                pend.clear()
                head = 0
            elif head > 4096 and head * 2 > len(pend):
                del pend[:head]
                head = 0
            self._head[r] = head
        waiters = self._done_waiters[r]
        if waiters:
            for x in [x for x in waiters if a <= x < b]:
                work.update(waiters.pop(x))

    def _entered(self, r: int, s: int) -> None:
        """A ``coll`` is processed: count it toward its instance's entries."""
        comm = self.c_comm.data[self.by_rank[r][s]]
        n_inst = self._entry_of.pop((r, s))
        cnt = self._coll_processed.get((comm, n_inst), 0) + 1
        self._coll_processed[(comm, n_inst)] = cnt
        members = self.colls.members(comm, self.input_ended)
        if members is not None and cnt >= len(members):
            self._wake_key(("colldone", comm, n_inst))

    def _collective_clock(self, r: int, s: int, final: bool) -> tuple[int, int] | None:
        """Joined clock row (:meth:`ClockStore.join`) and largest Lamport clock of the entries the
        ``coll_exit`` (r, s) depends on, or ``None`` (after registering to be
        woken) while one is not processed."""
        comm = self.c_comm.data[self.by_rank[r][s]]
        n_inst, op = self._exit_of[(r, s)]
        shared = op in ALL_TO_ALL
        if shared:
            cached = self._coll_cache.get(comm)
            if cached is not None and cached[0] == n_inst:
                del self._exit_of[(r, s)]
                return cached[1], cached[2]
            members = self.colls.members(comm, final)
            if members is not None and not final and self._coll_processed.get(
                    (comm, n_inst), 0) < len(members):
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
        lam = self.c_lamport.data
        lmax = max((lam[self.by_rank[q][qs]] for q, qs in ready), default=-1)
        if shared:
            self._coll_cache[comm] = (n_inst, vec, lmax)
        del self._exit_of[(r, s)]
        return vec, lmax

    def _wait_on(self, key: Any, r: int) -> None:
        if key[0] == "done":
            lst = self._done_waiters[key[1]].setdefault(key[2], [])
        else:
            lst = self._wake.setdefault(key, [])
        if r not in lst:
            lst.append(r)

    # ------------------------------------------------------------ notify
    def _notify(self, start: int, finished: bool = False) -> None:
        added, changed = self.races.take_changes()
        ranks = tuple(sorted(self._status_dirty))
        self._status_dirty.clear()
        msgs = tuple(self._new_messages)
        self._new_messages.clear()
        stop = len(self.c_rank)
        if stop == start and not (added or changed or ranks or msgs or finished):
            return
        change = ModelChange(events=(start, stop), messages=msgs, races_added=tuple(added),
                             races_changed=tuple(changed), ranks_changed=ranks,
                             finished=finished)
        for ob in self.observers:
            ob.model_changed(change)

    # ------------------------------------------------------------ queries
    @property
    def event_count(self) -> int:
        return len(self.c_rank)

    def count(self, rank: int) -> int:
        """Number of events of ``rank`` so far."""
        return len(self.by_rank[rank])

    def _gidx(self, key: Key) -> int:
        return self.by_rank[key[0]][key[1]]

    def gidx(self, rank: int, seq: int) -> int:
        """Global index of event ``(rank, seq)``."""
        return self.by_rank[rank][seq]

    def _send_claimed(self, key: Key) -> bool:
        return self.c_partner.data[self._gidx(key)] != -1 or key in self._early

    def consume_of(self, rank: int, recv_seq: int) -> int | None:
        """Seq of the consume of receive ``(rank, recv_seq)``, if any yet."""
        return self.store.consume_of(rank, recv_seq)

    def clock_ready(self, key: Key) -> bool:
        """Is the vector clock of event ``key`` known (causally processed)?"""
        return key[1] < self.done[key[0]]

    def site_of(self, rank: int, seq: int) -> str | None:
        """The call site of event ``(rank, seq)``, or None."""
        return self.store.site_of(rank, seq)

    def happened_before(self, a: Key, b: Key) -> bool:
        """Lamport's relation; both events must be causally processed."""
        return self.clocks.happened_before(a, b)

    def vector_clock(self, rank: int, seq: int) -> list[int]:
        """The vector clock of an event (counts of events per rank in its cone)."""
        return [int(x) for x in self.clocks.clock(rank, seq)]

    def partner(self, rank: int, seq: int) -> Key | None:
        """For a send, its consume; for a consume, its send; else None."""
        return self.store.partner(rank, seq)

    def record(self, rank: int, seq: int) -> Record:
        """Every field of an event, as the trace record it came from."""
        return self.store.record_at(self.by_rank[rank][seq])

    def status(self, rank: int) -> str:
        """``running``, ``suspended``, ``finished``, ``dead`` or ``ended``."""
        return self._status(rank)[0]

    def where(self, rank: int) -> int | None:
        """Seq of the event a suspended or dead rank stopped at."""
        return self._status(rank)[1]

    def _status(self, rank: int) -> tuple[str, int | None]:
        return rank_status(self.store, rank, dead=self.dead, finished=self.finished,
                           input_ended=self.input_ended)

    def potential_races(self) -> list[Race]:
        """Adjacent classifier races found so far."""
        return self.races.potential_races()

    def nonadjacent_races(self, rank: int, recv_seq: int) -> list[Race]:
        """On demand: pair a ``recv(-1,-1)`` with every later receive of its rank
        and communicator except the adjacent one (spec, ``scope: nonadjacent``)."""
        from mpvis.model.nonadjacent import nonadjacent_races

        return nonadjacent_races(self, rank, recv_seq)

    # ------------------------------------------------- the model's classes
    def event(self, rank: int, seq: int) -> Event:
        """The :class:`~mpvis.model.entities.Event` view of ``(rank, seq)`` (a
        :class:`~mpvis.model.entities.Consume` for a consume).

        Raises :class:`KeyError` if the model has no such event."""
        if not self.store.has(rank, seq):
            raise KeyError(f"no event {rank}:{seq} in this run")
        return event_at(self, self.by_rank[rank][seq])

    def event_at(self, index: int) -> Event:
        """The view of the event with global index ``index`` (arrival order)."""
        if not 0 <= index < len(self.c_rank):
            raise IndexError(f"no event with global index {index}")
        return event_at(self, index)

    @property
    def events(self) -> Views[Event]:
        """Every event, in arrival order (a lazy sequence of views)."""
        return Views(range(len(self.c_rank)), lambda g: event_at(self, g))

    def process(self, rank: int) -> Process:
        """The :class:`~mpvis.model.entities.Process` view of ``rank``."""
        if not 0 <= rank < self.nprocs:
            raise KeyError(f"no rank {rank} in this run of {self.nprocs} processes")
        return Process(self, rank)

    @property
    def processes(self) -> tuple[Process, ...]:
        """One :class:`~mpvis.model.entities.Process` per rank, by rank."""
        return tuple(Process(self, r) for r in range(self.nprocs))

    def message(self, rank: int, seq: int) -> Message | None:
        """The :class:`~mpvis.model.entities.Message` sent by send ``(rank, seq)``
        or delivered by consume ``(rank, seq)`` (None while a consume's send is
        unknown).  Raises :class:`KeyError` if there is no such event,
        :class:`ValueError` if it is neither a send nor a consume."""
        e = self.event(rank, seq)
        if e.kind not in (R.SEND, R.CONSUME):
            raise ValueError(f"event {rank}:{seq} is a {e.kind}, not a send or a consume")
        return e.message

    @property
    def messages(self) -> Views[Message]:
        """Every send as a :class:`~mpvis.model.entities.Message` (consumed or
        not), in arrival order."""
        sends = np.flatnonzero(self.c_kind.view() == K_SEND)
        return Views(sends, lambda g: Message(self, g))


_HANDLERS = {
    K_SEND: context.on_send,
    K_RECV: context.on_recv,
    K_CONSUME: context.on_consume,
    K_WAIT: context.on_wait,
    K_COLL: context.on_coll,
    K_COLL_EXIT: context.on_coll_exit,
    K_FINAL: context.on_final,
}
#: Kinds whose context rules run record by record (and nonblocking sends and
#: receives, for their requests; receives are paired for the classifier in bulk).
_SPECIAL_CODES = np.array(sorted(set(_HANDLERS) - {K_SEND, K_RECV}), dtype=np.int8)


def _special_mask(codes: Any, flags: Any) -> Any:
    """Records whose context rules run one by one."""
    nonblocking = ((codes == K_SEND) | (codes == K_RECV)) & ((flags & F_BLOCKING) == 0)
    return np.isin(codes, _SPECIAL_CODES) | nonblocking
