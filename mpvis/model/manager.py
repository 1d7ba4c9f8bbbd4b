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

import math
from array import array
from collections import deque
from typing import Any

from mpvis.model.clocks import ClockStore
from mpvis.model.collectives import ALL_TO_ALL, CollectiveBook
from mpvis.model.columns import Column
from mpvis.model.errors import ModelInputError
from mpvis.model.matching import ChannelBook
from mpvis.model.observer import ModelChange, ModelObserver
from mpvis.model.races import Race, RaceTracker, RecvFacts
from mpvis.model.stream import RecordAnalyzer
from mpvis.protocol import records as R

Record = dict[str, Any]
Key = tuple[int, int]

K_SEND, K_RECV, K_CONSUME, K_WAIT = (R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME, R.WAIT))
K_COLL, K_COLL_EXIT = R.KIND_CODE[R.COLL], R.KIND_CODE[R.COLL_EXIT]
K_LOCK, K_LOCKED, K_FINAL = R.KIND_CODE[R.LOCK], R.KIND_CODE[R.LOCKED], R.KIND_CODE[R.FINAL]

F_BLOCKING, F_SYNC = 1, 2
#: Columns hold these fields; any other field of a record goes to ``extras``.
_COLUMN_FIELDS = frozenset({
    "rank", "seq", "kind", "t", "site", "comm", "dest", "src", "tag", "blocking", "sync",
    "req", "recv", "send", "size",
})

RUNNING, SUSPENDED, FINISHED, DEAD, ENDED = "running", "suspended", "finished", "dead", "ended"


class ModelManager:
    """Builds and holds the functional model of one run."""

    def __init__(self, header: Record, *, validate: bool = True) -> None:
        R.check_header(header)
        self.header = header
        self.nprocs: int = header["nprocs"]
        self.validate = validate
        n = self.nprocs
        # -- event columns, by global index in arrival order --
        self.c_rank, self.c_seq, self.c_kind = Column("i"), Column("i"), Column("b")
        self.c_t, self.c_site, self.c_comm = Column("d"), Column("i"), Column("i")
        self.c_peer, self.c_tag, self.c_flags = Column("i"), Column("i"), Column("b")
        self.c_req, self.c_ref, self.c_partner = Column("i"), Column("i"), Column("q")
        self.c_size = Column("q")
        self._appenders: tuple[Any, ...] = tuple(c.data.append for c in (
            self.c_rank, self.c_seq, self.c_kind, self.c_t, self.c_site, self.c_comm,
            self.c_peer, self.c_tag, self.c_flags, self.c_req, self.c_ref, self.c_partner,
            self.c_size))
        self.extras: dict[int, dict[str, Any]] = {}
        self.sites: list[str] = []
        self._site_ids: dict[str, int] = {}
        self.by_rank: list[array[int]] = [array("q") for _ in range(n)]
        # -- context --
        self._live_reqs: list[dict[int, int]] = [{} for _ in range(n)]  # req -> seq
        self._channels = ChannelBook(self._send_claimed)
        self._early: dict[Key, int] = {}  # send key -> consume gidx awaiting that send
        self.colls = CollectiveBook(n)
        self.finished = [False] * n
        self.dead: dict[int, str] = {}
        self.input_ended = False
        self.locks_held: list[dict[str, int]] = [{} for _ in range(n)]
        # -- causal processing --
        self.clocks = ClockStore(n)
        self.done = [0] * n
        self._pending: list[deque[Record]] = [deque() for _ in range(n)]
        self._wake: dict[Any, list[int]] = {}
        self.analyzers: list[RecordAnalyzer] = []
        self.observers: list[ModelObserver] = []
        self.races = RaceTracker(RecvFacts(
            recv_args=self._recv_args, consume_of=self.consume_of, consumed=self._consumed,
            clock_ready=self.clock_ready, happened_before=self.clocks.happened_before,
            site=self.site_of,
        ))
        self._new_messages: list[int] = []
        self._status_dirty: set[int] = set()
        self._touched_sink: set[int] = set()  # ranks woken while ingesting
        self._exit_of: dict[Key, tuple[int, str]] = {}  # coll_exit -> (instance, op)
        self._coll_cache: dict[int, tuple[int, Any]] = {}  # comm -> (instance, joined clock)

    # ------------------------------------------------------------------ input
    def add(self, rec: Record) -> None:
        """Add one record (see :meth:`add_batch`)."""
        self.add_batch([rec])

    def add_batch(self, batch: list[Record]) -> None:
        """Add records in arrival order; see the module docstring for the contract."""
        start = len(self.c_rank)
        touched: set[int] = set()
        try:
            for i, rec in enumerate(batch):
                try:
                    self._ingest(rec, touched)
                except R.RecordError as exc:
                    raise ModelInputError(str(exc), rank=_int_or_none(rec, "rank"),
                                          seq=_int_or_none(rec, "seq"), index=i) from None
                except ModelInputError as exc:
                    exc.index = i
                    raise
        finally:
            self._status_dirty.update(touched)
            self._advance(touched)
            self.races.flush(final=False)
            self._notify(start)

    def mark_rank_dead(self, rank: int, detail: str) -> None:
        """The rank crashed or was killed: its trace ends where it died."""
        self.dead[rank] = detail
        self._status_dirty.add(rank)
        self._notify(len(self.c_rank))

    def finish(self) -> None:
        """The input has ended: settle everything that waited for more records.

        Raises :class:`ModelInputError` if a consume names a send that never
        arrived or a consume without ``send`` has no send to infer.
        """
        self.input_ended = True
        self._advance(set(range(self.nprocs)), final=True)
        problem: ModelInputError | None = None
        for key, g in self._early.items():
            problem = ModelInputError(
                f"consume names send {list(key)}, which is not in the trace",
                rank=int(self.c_rank[g]), seq=int(self.c_seq[g]))
            break
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

    # ------------------------------------------------------------ ingestion
    def _ingest(self, rec: Record, touched: set[int]) -> None:
        if self.validate:
            R.check_record(rec, self.nprocs)
        r = rec["rank"]
        s = rec["seq"]
        events = self.by_rank[r]
        if s != len(events):
            what = "repeats" if s < len(events) else "skips"
            raise ModelInputError(
                f"seq {s} of rank {r} {what} (expected {len(events)}: seq must be 0, 1, 2, ... "
                "in order, with no gaps)", rank=r, seq=s)
        if self.finished[r]:
            raise ModelInputError(f"rank {r} has an event after its 'final'", rank=r, seq=s)
        kind = rec["kind"]
        code = R.KIND_CODE[kind]
        comm = rec.get("comm", 0)
        g = len(self.c_rank)
        handler = _HANDLERS.get(code)
        post = handler(self, rec, r, s, g, comm) if handler else None  # checks, may raise
        # -- all checks passed: commit the record --
        (ap_rank, ap_seq, ap_kind, ap_t, ap_site, ap_comm, ap_peer, ap_tag, ap_flags, ap_req,
         ap_ref, ap_partner, ap_size) = self._appenders
        ap_rank(r)
        ap_seq(s)
        ap_kind(code)
        t = rec.get("t")
        ap_t(math.nan if t is None else t)
        site = rec.get("site")
        if site is None:
            ap_site(-1)
        else:
            sid = self._site_ids.get(site)
            ap_site(self._site_id(site) if sid is None else sid)
        ap_comm(comm)
        ap_peer(rec.get("dest", rec.get("src", -1)))
        ap_tag(rec.get("tag", -1))
        ap_flags((F_BLOCKING if rec.get("blocking") else 0) | (F_SYNC if rec.get("sync") else 0))
        ap_req(rec.get("req", -1))
        ap_ref(rec.get("recv", -1))
        ap_partner(-1)
        ap_size(rec.get("size", -1))
        if rec.keys() - _COLUMN_FIELDS:
            self.extras[g] = {k: v for k, v in rec.items() if k not in _COLUMN_FIELDS}
        events.append(g)
        if self.analyzers:
            if "comm" not in rec:
                rec["comm"] = 0
            self._pending[r].append(rec)
        touched.add(r)
        if post is not None:
            post()

    def _site_id(self, site: str) -> int:
        i = self._site_ids.get(site)
        if i is None:
            i = self._site_ids[site] = len(self.sites)
            self.sites.append(site)
        return i

    def _wake_key(self, key: Any, touched: set[int]) -> None:
        ranks = self._wake.pop(key, None)
        if ranks:
            touched.update(ranks)

    # Handlers check a record against the model and return a commit action.
    def _on_send(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        if not rec["blocking"]:
            self._check_new_req(rec, r, s)

        def commit() -> None:
            if not rec["blocking"]:
                self._live_reqs[r][rec["req"]] = s
            chan = (r, rec["dest"], comm, rec["tag"])
            self._channels.add_send(chan, s)
            cg = self._early.pop((r, s), None)
            if cg is not None:
                self._link(g, cg, check=True)
            for cseq, key in self._channels.resolve(chan):
                self._link(self._gidx(key), self.by_rank[rec["dest"]][cseq], check=True)
        return commit

    def _on_recv(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        if not rec["blocking"]:
            self._check_new_req(rec, r, s)

        def commit() -> None:
            if not rec["blocking"]:
                self._live_reqs[r][rec["req"]] = s
            self.races.on_recv(r, s, comm, rec["src"], rec["tag"])
        return commit

    def _on_consume(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        rs = rec["recv"]
        events = self.by_rank[r]
        if rs >= s:
            raise ModelInputError(f"consume's 'recv' {rs} is not an earlier event", rank=r, seq=s)
        rg = events[rs]
        if self.c_kind[rg] != K_RECV:
            raise ModelInputError(f"consume's 'recv' {rs} is not a recv event", rank=r, seq=s)
        if self.c_ref[rg] != -1:
            raise ModelInputError(f"recv {rs} is consumed twice", rank=r, seq=s)
        if self.c_comm[rg] != comm:
            raise ModelInputError(f"consume's communicator differs from recv {rs}'s", rank=r, seq=s)
        if self.c_flags[rg] & F_BLOCKING and rs != s - 1:
            raise ModelInputError(
                f"the consume of blocking recv {rs} must be the event just after it", rank=r, seq=s)
        src, tag = self.c_peer[rg], self.c_tag[rg]
        if src not in (-1, rec["src"]) or tag not in (-1, rec["tag"]):
            raise ModelInputError(
                f"consumed message (src {rec['src']}, tag {rec['tag']}) does not match "
                f"recv {rs} (src {src}, tag {tag})", rank=r, seq=s)
        send = rec.get("send")
        if send is not None:
            key = (send[0], send[1])
            if self._has(key):
                self._check_pair(self._gidx(key), rec, r, s)
            elif key in self._early:
                raise ModelInputError(f"send {send} is consumed twice", rank=r, seq=s)

        def commit() -> None:
            self.c_ref[rg] = s
            if send is not None:
                key = (send[0], send[1])
                if self._has(key):
                    self._link(self._gidx(key), g, check=False)
                else:
                    self._early[key] = g
            else:
                chan = (rec["src"], r, comm, rec["tag"])
                if not self._channels.add_inferred(chan, rs, s):
                    raise ModelInputError(
                        "cannot infer the send of this consume: its receive was posted before "
                        "one already matched on the channel; give the 'send' field", rank=r, seq=s)
                for cseq, key in self._channels.resolve(chan):
                    self._link(self._gidx(key), events[cseq], check=True)
            self.races.touch_recv(r, rs)
        return commit

    def _on_wait(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        live = self._live_reqs[r]
        for q in rec["reqs"]:
            if q not in live:
                raise ModelInputError(f"wait names request {q}, which is not live", rank=r, seq=s)
            pg = self.by_rank[r][live[q]]
            if self.c_kind[pg] == K_RECV and self.c_ref[pg] == -1:
                raise ModelInputError(
                    f"wait completes receive request {q} but no consume of it came before",
                    rank=r, seq=s)
        if len(set(rec["reqs"])) != len(rec["reqs"]):
            raise ModelInputError("wait names a request twice", rank=r, seq=s)

        def commit() -> None:
            for q in rec["reqs"]:
                del live[q]
        return commit

    def _on_coll(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        if self.colls.open_collective(r, comm) is not None:
            raise ModelInputError("coll while the previous collective has no coll_exit",
                                  rank=r, seq=s)
        group = rec.get("group")
        if group is not None and not (isinstance(group, list) and r in group):
            raise ModelInputError("'group' must list the ranks of the communicator, this one "
                                  "included", rank=r, seq=s)

        def commit() -> None:
            n = self.colls.enter(r, s, comm, rec["op"], root=rec.get("root"), group=group)
            self._wake_key(("coll", comm, n, r), self._touched_sink)
        return commit

    def _on_coll_exit(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        open_ = self.colls.open_collective(r, comm)
        if open_ is None:
            raise ModelInputError("coll_exit without a coll", rank=r, seq=s)
        if open_[2] != rec["op"]:
            raise ModelInputError(f"coll_exit op '{rec['op']}' differs from its coll's "
                                  f"'{open_[2]}'", rank=r, seq=s)

        def commit() -> None:
            self._exit_of[(r, s)] = (self.colls.leave(r, comm), open_[2])
        return commit

    def _on_lock(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        return None

    def _on_final(self, rec: Record, r: int, s: int, g: int, comm: int) -> Any:
        def commit() -> None:
            self.finished[r] = True
        return commit

    def _check_new_req(self, rec: Record, r: int, s: int) -> None:
        if rec["req"] in self._live_reqs[r]:
            raise ModelInputError(f"request {rec['req']} is already live", rank=r, seq=s)

    def _check_pair(self, sg: int, rec: Record, r: int, s: int) -> None:
        """Send ``sg`` and consume ``rec`` must describe the same message."""
        if self.c_kind[sg] != K_SEND:
            raise ModelInputError(f"consume names {rec['send']}, which is not a send",
                                  rank=r, seq=s)
        if self.c_partner[sg] != -1:
            raise ModelInputError(f"send {rec['send']} is consumed twice", rank=r, seq=s)
        if self.c_peer[sg] != r or self.c_tag[sg] != rec["tag"] or self.c_comm[sg] != rec.get(
                "comm", 0):
            raise ModelInputError(
                f"consume names send {rec['send']} whose destination, tag or communicator "
                "differs", rank=r, seq=s)

    def _link(self, sg: int, cg: int, *, check: bool) -> None:
        if check:
            rec = {"send": [int(self.c_rank[sg]), int(self.c_seq[sg])],
                   "tag": int(self.c_tag[cg]), "comm": int(self.c_comm[cg])}
            self._check_pair(sg, rec, int(self.c_rank[cg]), int(self.c_seq[cg]))
        self.c_partner[sg] = cg
        self.c_partner[cg] = sg
        self._new_messages.append(sg)
        r, s = int(self.c_rank[cg]), int(self.c_seq[cg])
        self._wake_key(("match", r, s), self._touched_sink)
        self.races.touch_recv(r, int(self.c_ref[cg]))

    # ------------------------------------------------------- causal order
    def _advance(self, touched: set[int], final: bool = False) -> None:
        """Process events in causal order: clocks, then release to analyzers."""
        work = set(touched) | self._touched_sink
        self._touched_sink = set()
        out: list[Record] = []
        while work:
            r = work.pop()
            self._advance_rank(r, out, work, final)
            if self._touched_sink:
                work |= self._touched_sink
                self._touched_sink = set()
        if out:
            for a in self.analyzers:
                a.feed(out)

    def _advance_rank(self, r: int, out: list[Record], work: set[int], final: bool) -> None:
        events = self.by_rank[r]
        pending = self._pending[r]
        s = self.done[r]
        n = len(events)
        c_kind = self.c_kind.data
        keep = bool(self.analyzers)
        rec: Record = {}
        while s < n:
            g = events[s]
            code = c_kind[g]
            if keep:
                rec = pending[0]
            if code == K_CONSUME:
                sg = self.c_partner[g]
                if sg < 0:
                    if not final:
                        self._wait_on(("match", r, s), r)
                        break
                else:
                    key = (int(self.c_rank[sg]), int(self.c_seq[sg]))
                    if self.done[key[0]] <= key[1]:
                        if not final:
                            self._wait_on(("done", *key), r)
                            break
                    else:
                        self.clocks.merge(r, s, [key])
                        if keep and "send" not in rec:
                            rec["send"] = list(key)
            elif code == K_COLL_EXIT:
                vec = self._collective_clock(r, s, final)
                if vec is None:
                    break
                self.clocks.merge_vector(r, s, vec)
            if keep:
                pending.popleft()
                out.append(rec)
            s += 1
            self.done[r] = s
            woken = self._wake.pop(("done", r, s - 1), None)
            if woken:
                work.update(woken)

    def _collective_clock(self, r: int, s: int, final: bool) -> Any:
        """Joined clock of the entries the ``coll_exit`` (r, s) depends on, or
        ``None`` (after registering to be woken) while one is not processed."""
        comm = self.c_comm[self.by_rank[r][s]]
        n_inst, op = self._exit_of.pop((r, s))
        shared = op in ALL_TO_ALL
        if shared:
            cached = self._coll_cache.get(comm)
            if cached is not None and cached[0] == n_inst:
                return cached[1]
        deps = self.colls.exit_deps(r, comm, n_inst, op, final)
        if deps is None:
            for q in range(self.nprocs):
                self._wait_on(("coll", comm, n_inst, q), r)
            self._exit_of[(r, s)] = (n_inst, op)
            return None
        late = [k for k in deps if self.done[k[0]] <= k[1]]
        if late and not final:
            self._wait_on(("done", *late[0]), r)
            self._exit_of[(r, s)] = (n_inst, op)
            return None
        vec = self.clocks.joined([k for k in deps if k not in late])
        if shared:
            self._coll_cache[comm] = (n_inst, vec)
        return vec

    def _wait_on(self, key: Any, r: int) -> None:
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

    def _has(self, key: Key) -> bool:
        return 0 <= key[0] < self.nprocs and key[1] < len(self.by_rank[key[0]])

    def _send_claimed(self, key: Key) -> bool:
        return self.c_partner[self._gidx(key)] != -1 or key in self._early

    def _recv_args(self, rank: int, seq: int) -> tuple[int, int]:
        g = self.by_rank[rank][seq]
        return int(self.c_peer[g]), int(self.c_tag[g])

    def consume_of(self, rank: int, recv_seq: int) -> int | None:
        """Seq of the consume of receive ``(rank, recv_seq)``, if any yet."""
        ref = int(self.c_ref[self.by_rank[rank][recv_seq]])
        return None if ref < 0 else ref

    def _consumed(self, rank: int, consume_seq: int) -> tuple[int, int, Key | None]:
        g = self.by_rank[rank][consume_seq]
        sg = self.c_partner[g]
        key = None if sg < 0 else (int(self.c_rank[sg]), int(self.c_seq[sg]))
        return int(self.c_peer[g]), int(self.c_tag[g]), key

    def clock_ready(self, key: Key) -> bool:
        """Is the vector clock of event ``key`` known (causally processed)?"""
        return key[1] < self.done[key[0]]

    def site_of(self, rank: int, seq: int) -> str | None:
        sid = self.c_site[self.by_rank[rank][seq]]
        return None if sid < 0 else self.sites[int(sid)]

    def happened_before(self, a: Key, b: Key) -> bool:
        """Lamport's relation; both events must be causally processed."""
        return self.clocks.happened_before(a, b)

    def vector_clock(self, rank: int, seq: int) -> list[int]:
        """The vector clock of an event (counts of events per rank in its cone)."""
        return [int(x) for x in self.clocks.clock(rank, seq)]

    def partner(self, rank: int, seq: int) -> Key | None:
        """For a send, its consume; for a consume, its send; else None."""
        pg = self.c_partner[self.by_rank[rank][seq]]
        return None if pg < 0 else (int(self.c_rank[pg]), int(self.c_seq[pg]))

    def record(self, rank: int, seq: int) -> Record:
        """Every field of an event, as the trace record it came from."""
        return _rebuild(self, self.by_rank[rank][seq])

    def status(self, rank: int) -> str:
        """``running``, ``suspended``, ``finished``, ``dead`` or ``ended``."""
        return _status(self, rank)[0]

    def where(self, rank: int) -> int | None:
        """Seq of the event a suspended or dead rank stopped at."""
        return _status(self, rank)[1]

    def potential_races(self) -> list[Race]:
        """Adjacent classifier races found so far."""
        return self.races.potential_races()

    def nonadjacent_races(self, rank: int, recv_seq: int) -> list[Race]:
        """On demand: pair a ``recv(-1,-1)`` with every later receive of its rank
        and communicator except the adjacent one (spec, ``scope: nonadjacent``)."""
        from mpvis.model.nonadjacent import nonadjacent_races

        return nonadjacent_races(self, rank, recv_seq)


def _int_or_none(rec: object, field: str) -> int | None:
    if isinstance(rec, dict):
        v = rec.get(field)
        if type(v) is int:
            return v
    return None


def _rebuild(m: ModelManager, g: int) -> Record:
    from mpvis.model.entities import rebuild_record

    return rebuild_record(m, g)


def _status(m: ModelManager, rank: int) -> tuple[str, int | None]:
    from mpvis.model.entities import rank_status

    return rank_status(m, rank)


_HANDLERS = {
    K_SEND: ModelManager._on_send,
    K_RECV: ModelManager._on_recv,
    K_CONSUME: ModelManager._on_consume,
    K_WAIT: ModelManager._on_wait,
    K_COLL: ModelManager._on_coll,
    K_COLL_EXIT: ModelManager._on_coll_exit,
    K_FINAL: ModelManager._on_final,
}
