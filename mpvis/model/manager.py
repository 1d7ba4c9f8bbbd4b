"""The manager: builds the functional model incrementally from trace records.

As in MPVisualizer (``mpvisualizer-race-detection.txt`` section 2) the
manager receives records one batch at a time, in arrival order (ranks
interleaved in any way, a consume possibly before its send), and builds the
functional model: events in growable columns, messages (send to consume
links), vector clocks, process states, and the classifier's receive pairs.

:class:`ModelManager` is a facade over four rooms, each a class that owns its
state and documents its contract (``docs/model.md``, "How the model is
built"):

* :class:`~mpvis.model.store.EventStore` (:attr:`ModelManager.store`): the
  event columns and the queries over them;
* :class:`~mpvis.model.rules.RecordRules` (:attr:`ModelManager.rules`): the
  context rules of the spec, messages, early consumes, inferred sends,
  requests, collectives, finished and dead ranks, lost sends;
* :class:`~mpvis.model.causal.CausalRelease` (:attr:`ModelManager.causal`):
  events processed in causal order (vector and Lamport clocks), released to
  analyzers as columns;
* :class:`~mpvis.model.races.RaceTracker` (:attr:`ModelManager.races`, with
  :mod:`~mpvis.model.nonadjacent` and :mod:`~mpvis.model.classifier`): the
  16-case classifier's receive pairs.

The facade sequences them for each batch and tells observers; it keeps the
model's public API (the columns ``c_*``, ``by_rank``, ``done``, ``clocks``,
``finished``, ``dead``... are the rooms' own objects under their historical
names) and hands out the model's classes (:mod:`~mpvis.model.entities`).

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
  events in a causally consistent order (:mod:`mpvis.model.stream`).
"""

from __future__ import annotations

import numpy as np

from mpvis.model.causal import CausalRelease
from mpvis.model.collectives import CollectiveBook
from mpvis.model.entities import Event, Message, Process, Views, event_at
from mpvis.model.errors import ModelInputError
from mpvis.model.ingest import Batch, extract
from mpvis.model.nonadjacent import nonadjacent_races
from mpvis.model.observer import ModelChange, ModelObserver
from mpvis.model.races import Race, RaceTracker, RecvFacts
from mpvis.model.rules import RecordRules
from mpvis.model.status import DEAD, ENDED, FINISHED, RUNNING, SUSPENDED, rank_status
from mpvis.model.store import EventStore
from mpvis.model.stream import Analyzer
from mpvis.protocol import records as R
from mpvis.protocol.record_types import EventRecord, Record

__all__ = ["DEAD", "ENDED", "FINISHED", "RUNNING", "SUSPENDED", "ModelManager"]

Key = tuple[int, int]

K_SEND = R.KIND_CODE[R.SEND]


class ModelManager:
    """Builds and holds the functional model of one run (a facade over its rooms)."""

    def __init__(self, header: Record, *, validate: bool = True) -> None:
        R.check_header(header)
        self.header = header
        self.nprocs: int = header["nprocs"]
        self.validate = validate
        n = self.nprocs
        #: Incremental analyses fed the causally ordered events (:mod:`mpvis.model.stream`).
        self.analyzers: list[Analyzer] = []
        #: Told of every batch's changes (:mod:`mpvis.model.observer`).
        self.observers: list[ModelObserver] = []
        # -- the rooms --
        #: The event columns and the queries over them.
        self.store = store = EventStore(n)
        self.colls = CollectiveBook(n)
        #: Causal order: clocks, Lamport clocks, release to analyzers.
        self.causal = causal = CausalRelease(store, self.colls, self.analyzers,
                                             lost_send_of=self._lost_send_of,
                                             named_send_of=self._named_send_of)
        #: The classifier's receive pairs.
        self.races = RaceTracker(RecvFacts(
            store=store, done=lambda: causal.done, happened_before=causal.clocks.happened_before,
            happened_before_many=causal.clocks.happened_before_many,
        ))
        #: The spec's context rules and the facts they keep.
        self.rules = rules = RecordRules(store, causal, self.races, self.colls)
        # -- the rooms' public objects under their historical names (same objects) --
        self.c_rank, self.c_seq, self.c_kind = store.c_rank, store.c_seq, store.c_kind
        self.c_t, self.c_site, self.c_comm = store.c_t, store.c_site, store.c_comm
        self.c_peer, self.c_tag, self.c_flags = store.c_peer, store.c_tag, store.c_flags
        self.c_req, self.c_ref, self.c_partner = store.c_req, store.c_ref, store.c_partner
        self.c_size, self.c_call = store.c_size, store.c_call
        #: Lamport clock of each causally processed event (-1 until processed):
        #: consistent with happened-before, for the diagram's logical layout.
        self.c_lamport = store.c_lamport
        self.extras = store.extras
        self.site_table = store.site_table
        #: Call sites by id (``c_site``).
        self.sites: list[str] = store.sites
        self.by_rank = store.by_rank
        self.clocks = causal.clocks
        #: Events of each rank causally processed (a prefix of its seqs).
        self.done = causal.done
        self.finished = rules.finished
        self.dead = rules.dead
        #: After :meth:`finish`: sends consumed but never recorded because their
        #: rank died first (send key -> the consume's gidx).
        self.lost_sends = rules.lost_sends
        #: After :meth:`finish`: consumes without ``send`` whose sender died before
        #: recording it (consume gidx -> sender rank; seq unknown).
        self.lost_unnumbered = rules.lost_unnumbered
        self.locks_held: list[dict[str, int]] = [{} for _ in range(n)]
        self._status_dirty: set[int] = set()

    @property
    def input_ended(self) -> bool:
        """The input has ended (:meth:`finish` was called)."""
        return self.causal.input_ended

    def _lost_send_of(self, g: int) -> Key | None:
        return self.rules.lost_send_of(g)

    def _named_send_of(self, g: int) -> Key | None:
        return self.rules.named_send_of(g)

    # ------------------------------------------------------------------ input
    def add(self, rec: Record) -> None:
        """Add one record (see :meth:`add_batch`)."""
        self.add_batch([rec])

    def add_batch(self, batch: list[Record]) -> None:
        """Add records in arrival order; see the module docstring for the contract."""
        cols = extract(batch, self.nprocs, self.site_table, self.validate)
        self.add_columns(cols)

    def add_columns(self, cols: Batch) -> None:
        """Add a batch already turned into columns by :func:`~mpvis.model.ingest.extract`
        (possibly in another process, see :mod:`mpvis.tracefile.parse_worker`).

        ``cols.site`` must hold ids of :attr:`site_table`.  No record dict is
        needed: the analyzers read the store (:mod:`mpvis.model.stream`).
        Same contract as :meth:`add_batch`: the error's ``index`` is in the batch.
        """
        store, rules = self.store, self.rules
        start = store.event_count
        touched: set[int] = set()
        error: ModelInputError | None = None
        try:
            if cols.error is not None:
                error = ModelInputError(str(cols.error), rank=cols.error_rank,
                                        seq=cols.error_seq, index=cols.n)
            k, seq_error = rules.sequence_prefix(cols)
            if seq_error is not None:
                error = seq_error
            if k:
                touched.update(store.append(cols, k))
                self.causal.appended(cols, k)
            ctx_error = rules.apply(cols, start, k)
            if ctx_error is not None:
                self._truncate(start + (ctx_error.index or 0))
                error = ctx_error
        finally:
            self._status_dirty.update(touched)
            self.causal.advance(touched)
            self.races.flush(final=False)
            self._notify(start)
        if error is not None:
            raise error

    def _truncate(self, g: int) -> None:
        """Drop the events from global index ``g`` on (after a context error)."""
        before = [len(events) for events in self.by_rank]
        kept = self.store.truncate(g)
        self.causal.truncated(before, kept)
        self.rules.truncated()

    def mark_rank_dead(self, rank: int, detail: str) -> None:
        """The rank crashed or was killed: its trace ends where it died."""
        self.rules.mark_dead(rank, detail)
        self._status_dirty.add(rank)
        self._notify(len(self.c_rank))

    def finish(self) -> None:
        """The input has ended: settle everything that waited for more records.

        A consume naming a send beyond the end of a rank without ``final``
        (the rank was killed before it shipped the send) is kept: the send is
        a *lost send* (:attr:`lost_sends`) and its rank is marked dead with
        what it lost; so is a consume without ``send`` left unmatched on its
        channel when its sender has no ``final`` (:attr:`lost_unnumbered`: C
        recorders omit ``send``).  Raises :class:`ModelInputError` if a consume
        names a send that cannot be lost that way (its rank finished, or the
        event is not a send) or a consume without ``send`` from a rank that
        finished has no send to infer.
        """
        self.causal.finish()
        problem = self.rules.finish()
        for r in self.rules.lost_senders():
            for a in self.analyzers:
                mark = getattr(a, "mark_dead", None)  # the deadlock monitor's
                if mark is not None:
                    mark(r, self.dead[r])
        self.races.finish()
        for a in self.analyzers:
            a.finish()
        self._status_dirty.update(range(self.nprocs))
        self._notify(len(self.c_rank), finished=True)
        if problem is not None:
            raise problem

    # ------------------------------------------------------------ notify
    def _notify(self, start: int, finished: bool = False) -> None:
        added, changed = self.races.take_changes()
        ranks = tuple(sorted(self._status_dirty))
        self._status_dirty.clear()
        msgs = tuple(self.rules.take_new_messages())
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
        return self.store.event_count

    def count(self, rank: int) -> int:
        """Number of events of ``rank`` so far."""
        return self.store.count(rank)

    def gidx(self, rank: int, seq: int) -> int:
        """Global index of event ``(rank, seq)`` (``IndexError`` if absent)."""
        return self.store.gidx(rank, seq)

    def consume_of(self, rank: int, recv_seq: int) -> int | None:
        """Seq of the consume of receive ``(rank, recv_seq)``, if any yet."""
        return self.store.consume_of(rank, recv_seq)

    def clock_ready(self, key: Key) -> bool:
        """Is the vector clock of event ``key`` known (causally processed)?"""
        return self.causal.clock_ready(key)

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

    def record(self, rank: int, seq: int) -> EventRecord:
        """Every field of an event, as the trace record it came from (typed by its
        kind: narrow it by ``rec["kind"]``)."""
        return self.store.event_record(self.by_rank[rank][seq])

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
        return nonadjacent_races(self.store, self.races.facts, rank, recv_seq,
                                 final=self.input_ended)

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

    def unconsumed_messages(self) -> Views[Message]:
        """The messages no consume has delivered (yet), in arrival order of
        their sends (one vectorised pass over the columns)."""
        partner = np.asarray(self.c_partner.view(), dtype=np.int64)
        sel = (self.c_kind.view() == K_SEND) & (partner < 0)
        return Views(np.flatnonzero(sel), lambda g: Message(self, g))

    def find(self, kind: str, *, peer: int | None = None, tag: int | None = None
             ) -> Views[Event]:
        """The events of ``kind`` (``R.RECV``...) whose ``peer`` (a send's
        ``dest``, a receive's or consume's ``src``) and ``tag`` are the ones
        given (-1: the wildcard), in arrival order (one vectorised pass).
        Raises :class:`KeyError` for a kind the trace format does not have."""
        if kind not in R.KIND_CODE:
            raise KeyError(f"no event kind {kind!r} (kinds: {', '.join(R.EVENT_KINDS)})")
        sel = self.c_kind.view() == R.KIND_CODE[kind]
        if peer is not None:
            sel &= self.c_peer.view() == peer
        if tag is not None:
            sel &= self.c_tag.view() == tag
        return Views(np.flatnonzero(sel), lambda g: event_at(self, g))

    def in_lamport_order(self) -> Views[Event]:
        """Every event by Lamport clock, ties by rank: a causal order once the
        events are processed (``.indices``: the global indices, for code that
        rebuilds records in bulk)."""
        order = np.lexsort((self.c_rank.view(), self.c_lamport.view()))
        return Views(order, lambda g: event_at(self, g))
