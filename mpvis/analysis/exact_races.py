"""On-the-fly exact race detection (Cypher and Leu, sections 3.4 and 4).

:class:`ExactRaceDetector` is a :class:`~mpvis.model.stream.RecordAnalyzer`.  It
maps records onto the paper's events as described in
:mod:`mpvis.analysis.exact_events` and reports every match (s1, r1) and send s2
it finds conflicting (the definition before Theorem 2.2): the execution has a
race if and only if it reports at least one.

Clocks.  Every event and match gets a Type A clock (section 3.1, packed ints of
:mod:`mpvis.analysis.exact_clocks`); a record's own component is its ``seq`` + 1.
A match gets a Type D clock (section 3.4), kept sparse (rank -> value) and only
for matches whose receive has a wildcard source, the only ones that can
conflict.  The event that rule 3 of section 2.5 puts after a WR is, here, the
consume itself, and after a WS the sender's next communication record (the
``wait`` of a nonblocking send): records in between are internal events, which
order nothing else, so the tests of Theorem 3.4 give the same answers.

Consistent order.  The paper reads events and matches in an order consistent
with R_h^+ (section 4).  The stream (``mpvis.model.stream``) is only causally
ordered, and a match is learnt from its consume, which may come long after the
match happened (a nonblocking receive waited late) and after events that depend
on it (the sender's event after a WS, later matches R_m-ordered after it).  So
the detector schedules: a match is processed once its send and receive are and
once every earlier open receive of the rank that could precede it in R_m is
matched (or known unmatched: the input ended); a record waits, with the rest of
its rank, for the matches rule 3 makes it depend on.  Knowledge of a match is
taken from a consume as soon as it arrives, even while its rank waits, which
breaks the apparent cycles.  Buffering is bounded by how late consumes come.

Storage (section 4.4).  Per rank only the open receives (posted, not completed)
and the receives open when they were posted are kept, with their matches; of
the completed wildcard-source matches only the latest per (communicator, tag)
(a short list while older open receives may still need an older one), as
Theorems 4.3 and 4.4 allow.  Unmatched sends are kept until the end: the races
they take part in are reported by :meth:`ExactRaceDetector.finish`.

Races with a matched s2 are tested when (s2, r2) is processed (Theorem 4.2):
against the matched wildcard receives open when r2 was posted and the latest
closed one per tag.  The detector may so list only some conflicting pairs;
:func:`mpvis.analysis.exact_offline.all_conflicts` lists them all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import Any

from mpvis.analysis.exact_clocks import FIELD, MASK, make_sup
from mpvis.analysis.exact_events import ANY, COMM_KINDS, ExactRace, exact_entry, exit_sources

__all__ = ["ExactRaceDetector"]

from mpvis.protocol.record_types import Record

Key = tuple[int, int]
_INF = 1 << 62


class _Send:
    """A processed PS; ``match`` is its receive once the match is processed."""

    __slots__ = ("clock", "comm", "dest", "match", "rank", "seq", "sync", "tag")

    def __init__(  # noqa: PLR0917 (positional: built once per send, on the hot path)
        self, rank: int, seq: int, dest: int, tag: int, comm: int, sync: bool, clock: int
    ) -> None:
        self.rank = rank
        self.seq = seq
        self.dest = dest
        self.tag = tag
        self.comm = comm
        self.sync = sync
        self.clock = clock
        self.match: _Recv | None = None


class _Recv:
    """A processed PR, and its match (s, r) once known and processed."""

    __slots__ = (
        "anc",
        "clock",
        "comm",
        "cseq",
        "dclock",
        "dropped",
        "fast",
        "later",
        "matched",
        "mclock",
        "mtag",
        "prior",
        "rank",
        "seq",
        "skey",
        "src",
        "ssync",
        "tag",
    )

    def __init__(  # noqa: PLR0917 (positional: built once per receive, on the hot path)
        self, rank: int, seq: int, src: int, tag: int, comm: int, clock: int, prior: list[_Recv]
    ) -> None:
        self.rank = rank
        self.seq = seq
        self.src = src
        self.tag = tag
        self.comm = comm
        self.clock = clock  # A^r
        self.prior = prior  # receives of the rank open when this one was posted
        self.later = False  # a receive was posted while this one was open
        self.skey: Key | None = None  # the send matched, once its consume arrived
        self.mtag = 0  # the tag of that message
        self.cseq = _INF  # seq of the consume (the WR)
        self.matched = False
        self.dropped = False  # inconsistent input: treated as unmatched
        self.ssync = False  # whether the send matched (``skey``, once matched) is synchronous
        self.mclock = 0  # A^(s,r) (only A^s while ``fast``: see _process_match)
        self.fast = False
        # wildcard matches whose D clock events after this update, besides this one's
        # own for a wildcard source (see _ancestors: no self-reference, so no cycle)
        self.anc: list[_Recv] = []
        self.dclock: dict[int, int] = {}  # D^(s,r), sparse, for wildcard sources


def _ancestors(r: _Recv) -> list[_Recv]:
    """The wildcard matches whose D clock the events after r's match update: its own
    (a wildcard source) and ``r.anc``.

    Kept implicit so that no object refers to itself: ``load_trace`` builds with the
    cyclic garbage collector off and freezes what is left, so a cycle is never freed.
    """
    return [r, *r.anc] if r.src == ANY else r.anc


class _Collective:
    """One collective instance: entries seen, their clocks once processed."""

    __slots__ = ("clocks", "entered", "exits", "joined", "op", "root")

    def __init__(self, op: str, root: int | None) -> None:
        self.op = op
        self.root = root
        self.entered: list[int] = []
        self.clocks: dict[int, int] = {}
        self.exits = 0
        self.joined: tuple[int, int] | None = None  # (number of sources, their sup)


class ExactRaceDetector:
    """Cypher and Leu's on-the-fly race detector over the causally ordered stream."""

    def __init__(self, nprocs: int) -> None:
        n = nprocs
        self.nprocs = n
        self._sup = make_sup(n)
        self._cur = [0] * n  # current Type A clock of each rank
        self._own = [0] * n  # its own component (seq + 1 of the last record processed)
        self._queues: list[deque[Record]] = [deque() for _ in range(n)]
        self._sends: list[dict[int, _Send]] = [{} for _ in range(n)]  # unmatched
        self._reqs: list[dict[int, _Send]] = [{} for _ in range(n)]
        self._recvs: list[dict[int, _Recv]] = [{} for _ in range(n)]  # open
        self._open: list[list[_Recv]] = [[] for _ in range(n)]
        self._join: list[_Send | None] = [None] * n  # blocking Ssend awaiting its match
        self._tables: list[dict[Key, list[_Recv]]] = [{} for _ in range(n)]
        self._early: dict[Key, Record] = {}  # consumes whose receive is not processed yet
        self._claimed: set[Key] = set()  # at the end: sends named by an unread match
        self._colls: dict[Key, _Collective] = {}
        self._coll_seen: dict[Key, int] = {}  # (comm, rank) -> colls arrived
        self._coll_done: dict[Key, int] = {}  # (comm, rank) -> colls processed
        self._members: dict[int, set[int]] = {}
        self._waiters: dict[tuple[Any, ...], list[int | _Recv]] = {}
        self._ready: deque[int | _Recv] = deque()
        self._final = False
        self._lenient = False
        self._found: dict[tuple[int, int, int, int, int, int], None] = {}

    @property
    def races(self) -> list[ExactRace]:
        """The conflicting (match, send) pairs found so far, in discovery order."""
        return [ExactRace(a, b, (c, d), (e, f)) for a, b, c, d, e, f in self._found]

    def report_entries(self) -> list[dict[str, Any]]:
        """``[r.to_report() for r in self.races]``, without the intermediate objects
        (a 1M-event trace has a quarter of a million conflicts)."""
        return [exact_entry(*key) for key in self._found]

    def conflicts(self) -> Collection[tuple[int, int, int, int, int, int]]:
        """Every conflict found so far as ``(rank, recv, s1 rank, s1 seq, s2 rank,
        s2 seq)``, for membership tests (a live view: do not keep it while feeding)."""
        return self._found.keys()

    def held(self) -> int:
        """How many sends, receives, matches and records the detector holds (section 4.4)."""
        tables = sum(len(entries) for t in self._tables for entries in t.values())
        return (
            sum(map(len, self._sends))
            + sum(map(len, self._recvs))
            + sum(map(len, self._queues))
            + tables
            + len(self._early)
            + len(self._colls)
        )

    # -- input ------------------------------------------------------------------

    def feed(self, batch: list[Record]) -> None:
        """Take the next records of the causally ordered stream (``stream.py``)."""
        kinds = COMM_KINDS
        queues = self._queues
        n = self.nprocs
        for rec in batch:
            kind = rec.get("kind")
            if kind not in kinds:
                continue
            rank = rec["rank"]
            if not 0 <= rank < n:
                continue
            if kind == "consume":
                self._learn(rec, rank)
            elif kind == "coll":
                self._announce(rec, rank)
            q = queues[rank]
            if q or not self._step(rec, kind, rank):
                q.append(rec)
            if self._ready:
                self._run()

    def finish(self) -> None:
        """End of input: release what waited for unknown matches, test unmatched sends."""
        self._final = True
        self._claimed = {
            r.skey
            for rs in self._recvs
            for r in rs.values()
            if r.skey is not None and not r.matched and not r.dropped
        }
        self._claimed.update((e["send"][0], e["send"][1]) for e in self._early.values())
        while True:
            for items in self._waiters.values():
                self._ready.extend(items)
            self._waiters.clear()
            self._run()
            if not self._waiters:
                break
            self._force_one()
        for sends in self._sends:
            for s in sends.values():
                self._test_unmatched(s)

    # -- scheduling -------------------------------------------------------------

    def _wait(self, key: tuple[Any, ...], item: int | _Recv) -> None:
        self._waiters.setdefault(key, []).append(item)

    def _fire(self, key: tuple[Any, ...]) -> None:
        items = self._waiters.pop(key, None)
        if items:
            self._ready.extend(items)

    def _run(self) -> None:
        ready = self._ready
        while ready:
            item = ready.popleft()
            if isinstance(item, int):
                self._drain(item)
            else:
                self._try_match(item)

    def _drain(self, rank: int) -> None:
        q = self._queues[rank]
        while q:
            rec = q[0]
            if not self._step(rec, rec["kind"], rank):
                return
            q.popleft()

    def _force_one(self) -> None:
        """Break a wait that cannot end (inconsistent input): drop a match, or skip a need."""
        items = [item for items in self._waiters.values() for item in items]
        self._waiters.clear()
        self._ready.extend(items)
        for item in items:
            if not isinstance(item, int):
                self._drop(item)
                return
        rank = items[0]
        assert isinstance(rank, int)
        q = self._queues[rank]
        if q:
            self._lenient = True
            self._step(q[0], q[0]["kind"], rank)
            self._lenient = False
            q.popleft()

    def _drop(self, r: _Recv) -> None:
        r.dropped = True
        if r.skey is not None:
            self._claimed.discard(r.skey)
            self._fire(("ms", *r.skey))
        self._fire(("m", r.rank, r.seq))

    # -- records ----------------------------------------------------------------

    def _needs_match(self, s: _Send) -> bool:
        """Whether a WS's successor must still wait for the match of ``s``."""
        if s.match is not None or self._lenient:
            return False
        return not self._final or (s.rank, s.seq) in self._claimed

    def _step(self, rec: Record, kind: str, rank: int) -> bool:
        """Process one communication record if its R_h predecessors are processed."""
        join = self._join[rank]
        if join is not None and self._needs_match(join):
            self._wait(("ms", join.rank, join.seq), rank)
            return False
        if kind == "send":
            return self._on_send(rec, rank, join)
        if kind == "recv":
            return self._on_recv(rec, rank, join)
        if kind == "consume":
            return self._on_consume(rec, rank, join)
        if kind == "wait":
            return self._on_wait(rec, rank, join)
        if kind == "coll":
            return self._on_coll(rec, rank, join)
        return self._on_exit(rec, rank, join)

    def _complete(self, s: _Send, rank: int, seq: int) -> None:
        """The event after the WS of ``s`` (rule 3): inherit A^(s,r), update D clocks."""
        r = s.match
        if r is None:
            return
        self._cur[rank] = self._sup(self._cur[rank], r.mclock)
        value = seq + 1
        for a in _ancestors(r):
            a.dclock.setdefault(rank, value)

    def _begin(self, rank: int, seq: int, join: _Send | None) -> None:
        self._cur[rank] += (seq + 1 - self._own[rank]) << (FIELD * rank)
        self._own[rank] = seq + 1
        if join is not None:
            self._join[rank] = None
            self._complete(join, rank, seq)

    def _on_send(self, rec: Record, rank: int, join: _Send | None) -> bool:
        seq = rec["seq"]
        self._begin(rank, seq, join)
        sync = bool(rec.get("sync", False))
        s = _Send(rank, seq, rec["dest"], rec["tag"], rec.get("comm", 0), sync, self._cur[rank])
        self._sends[rank][seq] = s
        if rec.get("blocking", True):
            if sync:
                self._join[rank] = s
        else:
            self._reqs[rank][rec["req"]] = s
        if self._waiters:
            self._fire(("s", rank, seq))
        return True

    def _on_recv(self, rec: Record, rank: int, join: _Send | None) -> bool:
        seq = rec["seq"]
        self._begin(rank, seq, join)
        opened = self._open[rank]
        prior: list[_Recv] = []
        if opened:
            prior = opened.copy()
            sup = self._sup
            for p in opened:
                if not p.later:
                    p.later = True
                    if p.fast:
                        p.mclock = sup(p.mclock, p.clock)
                        p.fast = False
        r = _Recv(rank, seq, rec["src"], rec["tag"], rec.get("comm", 0), self._cur[rank], prior)
        opened.append(r)
        self._recvs[rank][seq] = r
        if self._early:
            early = self._early.pop((rank, seq), None)
            if early is not None:
                self._know(r, early)
        return True

    def _on_consume(self, rec: Record, rank: int, join: _Send | None) -> bool:
        r = self._recvs[rank].get(rec["recv"])
        if r is not None and not r.matched and not r.dropped and not self._lenient:
            self._wait(("m", rank, r.seq), rank)
            return False
        seq = rec["seq"]
        self._begin(rank, seq, join)
        if r is None:
            return True
        opened = self._open[rank]
        opened.remove(r)
        del self._recvs[rank][r.seq]
        if r.matched:
            self._cur[rank] = self._sup(self._cur[rank], r.mclock)
            value = seq + 1
            anc = _ancestors(r)
            for a in anc:
                a.dclock.setdefault(rank, value)
            if len(anc) > 1 and not r.ssync:
                # Later matches read r.anc only through receives still unmatched, and
                # keep from it only receives open when those were posted.
                oldest = min((p.seq for p in opened if not p.matched), default=seq)
                r.anc = [a for a in r.anc if a.cseq > oldest]
        return True

    def _on_wait(self, rec: Record, rank: int, join: _Send | None) -> bool:
        reqs = self._reqs[rank]
        done = [(q, s) for q in rec.get("reqs", ()) if (s := reqs.get(q)) is not None]
        for _, s in done:
            if s.sync and self._needs_match(s):
                self._wait(("ms", s.rank, s.seq), rank)
                return False
        seq = rec["seq"]
        self._begin(rank, seq, join)
        for q, s in done:
            del reqs[q]
            if s.sync:
                self._complete(s, rank, seq)
        return True

    def _on_coll(self, rec: Record, rank: int, join: _Send | None) -> bool:
        seq = rec["seq"]
        self._begin(rank, seq, join)
        key = (rec.get("comm", 0), rank)
        n = self._coll_done.get(key, 0)
        self._coll_done[key] = n + 1
        inst = self._colls.get((key[0], n))
        if inst is not None:
            inst.clocks[rank] = self._cur[rank]
            if self._waiters:
                self._fire(("c", key[0], n))
        return True

    def _on_exit(self, rec: Record, rank: int, join: _Send | None) -> bool:
        comm = rec.get("comm", 0)
        n = self._coll_done.get((comm, rank), 0) - 1
        inst = self._colls.get((comm, n))
        if inst is not None:
            sources = exit_sources(inst.op, rank, inst.root, inst.entered)
            if self._final:  # an entry that never arrived orders nothing
                sources = [q for q in sources if q in inst.entered]
            if not self._lenient and not all(q in inst.clocks for q in sources):
                self._wait(("c", comm, n), rank)
                return False
        self._begin(rank, rec["seq"], join)
        if inst is None:
            return True
        if sources:
            joined = inst.joined
            if joined is None or joined[0] != len(sources):
                acc = 0
                for q in sources:
                    acc = self._sup(acc, inst.clocks.get(q, 0))
                joined = inst.joined = (len(sources), acc)
            self._cur[rank] = self._sup(self._cur[rank], joined[1])
        inst.exits += 1
        members = self.nprocs if comm == 0 else len(self._members.get(comm, ()))
        if inst.exits >= len(inst.entered) >= members:
            del self._colls[(comm, n)]
        return True

    def _announce(self, rec: Record, rank: int) -> None:
        """A ``coll`` arrived: its rank is a member of the collective instance."""
        comm = rec.get("comm", 0)
        n = self._coll_seen.get((comm, rank), 0)
        self._coll_seen[(comm, rank)] = n + 1
        inst = self._colls.get((comm, n))
        if inst is None:
            inst = self._colls[(comm, n)] = _Collective(rec.get("op", ""), rec.get("root"))
        inst.entered.append(rank)
        self._members.setdefault(comm, set()).add(rank)

    # -- matches ----------------------------------------------------------------

    def _learn(self, rec: Record, rank: int) -> None:
        """A consume arrived: its match (s, r) is known from now on."""
        send = rec.get("send")
        if send is None:
            return
        r = self._recvs[rank].get(rec["recv"])
        if r is None:
            self._early[(rank, rec["recv"])] = rec
        else:
            self._know(r, rec)

    def _know(self, r: _Recv, rec: Record) -> None:
        send = rec["send"]
        r.skey = (send[0], send[1])
        r.mtag = rec["tag"]
        r.cseq = rec["seq"]
        self._try_match(r)
        if not r.matched and self._waiters:
            self._fire(("m", r.rank, r.seq))

    def _related(self, p: _Recv, r: _Recv, srank: int, sseq: int, stag: int) -> bool:
        """R_m((s', p), (s, r)) for p before r, p matched to s' (known), r to s."""
        if p.comm != r.comm or p.skey is None:
            return False
        if (p.src in (ANY, srank)) and (p.tag in (ANY, stag)):
            return True
        return p.skey[0] == srank and p.skey[1] < sseq and (r.tag in (ANY, p.mtag))

    def _try_match(self, r: _Recv) -> None:
        if r.matched or r.dropped or r.skey is None:
            return
        srank, sseq = r.skey
        sends = self._sends[srank] if 0 <= srank < self.nprocs else {}
        s = sends.get(sseq)
        if s is None or s.dest != r.rank:
            unseen = s is None and 0 <= srank < self.nprocs and sseq >= self._own[srank]
            if unseen and not self._lenient:  # the send is not processed yet
                self._wait(("s", srank, sseq), r)
                return
            self._drop(r)  # names a send that is not there or already matched
            return
        preds: list[_Recv] = []
        for p in r.prior:
            if p.matched:
                if self._related(p, r, srank, sseq, s.tag):
                    preds.append(p)
            elif p.dropped or self._lenient:
                continue
            elif p.skey is None:
                if (
                    not self._final
                    and p.comm == r.comm
                    and (p.src in (ANY, srank))
                    and (ANY in (p.tag, r.tag) or p.tag == r.tag)
                ):
                    self._wait(("m", r.rank, p.seq), r)
                    return
            elif self._related(p, r, srank, sseq, s.tag):
                self._wait(("m", r.rank, p.seq), r)
                return
        self._process_match(r, s, preds)

    def _process_match(self, r: _Recv, s: _Send, preds: list[_Recv]) -> None:
        """Read the match (s, r): Type A clock, D-clock ancestors, race tests."""
        rank = r.rank
        r.matched = True
        r.ssync = s.sync
        s.match = r
        del self._sends[s.rank][s.seq]
        if self._final:
            self._claimed.discard((s.rank, s.seq))
        sup = self._sup
        if preds or r.later or s.sync:
            acc = sup(s.clock, r.clock)
            for p in preds:
                acc = sup(acc, p.mclock)
            r.mclock = acc
        else:  # A^r is below the rank's clock at the consume; only A^s is new there
            r.mclock = s.clock
            r.fast = True
        wild = r.src == ANY
        anc: list[_Recv] = []  # r itself is implicit (_ancestors)
        for p in preds:
            for a in _ancestors(p):
                if a not in anc and any(a is q for q in r.prior):
                    anc.append(a)
        r.anc = anc
        tables = self._tables[rank]
        prior = r.prior
        r.prior = []  # only needed until the match is read
        if tables or anc or wild:
            self._test_matched(r, s, prior, tables)
        if wild:
            self._tabulate(r, tables)
        if self._waiters:
            self._fire(("m", rank, r.seq))
            self._fire(("ms", s.rank, s.seq))

    # -- race tests -------------------------------------------------------------

    def _conflict(self, c: _Recv, s2: _Send) -> None:
        """Report (c's match, s2) if they conflict (s2 not matched before c)."""
        s1 = c.skey
        if not c.matched or s1 is None or s1[0] == s2.rank or c.comm != s2.comm:
            return
        if c.tag not in (ANY, s2.tag):
            return
        clock = s2.clock
        for j, v in c.dclock.items():
            if (clock >> (FIELD * j)) & MASK >= v:
                return  # R_h+((s1, r1), s2), Theorem 3.4
        self._found[(c.rank, c.seq, s1[0], s1[1], s2.rank, s2.seq)] = None

    def _test_matched(
        self, r2: _Recv, s2: _Send, prior: list[_Recv], tables: dict[Key, list[_Recv]]
    ) -> None:
        """Theorem 4.2: a match conflicting with s2 precedes (s2, r2) in R_m."""
        for c in prior:
            if c.matched and c.src == ANY:
                self._conflict(c, s2)
        for key in ((s2.comm, s2.tag), (s2.comm, ANY)):
            for c in reversed(tables.get(key, ())):
                if c.cseq < r2.seq:  # the latest closed before r2 was posted
                    self._conflict(c, s2)
                    break

    def _test_unmatched(self, s2: _Send) -> None:
        """Theorem 4.4: an unmatched s2 against the latest wildcard match per tag."""
        if not 0 <= s2.dest < self.nprocs:
            return
        tables = self._tables[s2.dest]
        for key in ((s2.comm, s2.tag), (s2.comm, ANY)):
            entries = tables.get(key)
            if entries:
                self._conflict(entries[-1], s2)

    def _tabulate(self, r: _Recv, tables: dict[Key, list[_Recv]]) -> None:
        """Keep the wildcard match in T (section 4.4), pruning dominated entries."""
        entries = tables.setdefault((r.comm, r.tag), [])
        at = len(entries)
        while at and entries[at - 1].seq > r.seq:
            at -= 1
        entries.insert(at, r)
        # Pending queries: unmatched open receives, and receives not yet posted.
        oldest = min(
            (p.seq for p in self._open[r.rank] if not p.matched), default=self._own[r.rank]
        )
        keep = 0
        for k, c in enumerate(entries):
            if c.cseq < oldest:
                keep = k
        if keep:
            del entries[:keep]
