"""Incremental tracking of the classifier's receive pairs inside the model.

Embedded in the model as MPVisualizer embeds it in its ``Process`` class
(``mpvisualizer-race-detection.txt`` section 3.2): situations 4, 8, 12, 16 are
known when the first receive arrives, 3, 11 and some 7 when the second arrives,
15 and the other 7 when the second consume arrives.  A pair is created when its
second receive arrives (before that there is no pair) and re-evaluated when one
of its consumes, a consumed message's send, or the clock of the second send
arrives; the verdict is therefore the same whatever the arrival order, once
all records are in.

The pairs are many (about one per eight events of the 1M-event benchmark
trace), so they are held as columns (:class:`RaceColumns`: the global indices
of the two receives, the situation, the potential flag, the verdict, the
consumes and the sends of the consumed messages, one row per pair), created
and re-evaluated with whole-array operations once per batch
(:func:`evaluate`, the section 3.2 pseudo-code of
:func:`mpvis.model.classifier.potential_race` and the legitimacy check of
:func:`mpvis.model.classifier.verdict` over arrays).  A :class:`Race` is a
view of one row: what the analyses, the report and the GUI read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from mpvis.model.arrayops import unique
from mpvis.model.classifier import (
    ANY,
    SECOND_RECV_SITUATIONS,
    VERDICTS,
    Verdict,
    potential_races,
    situations,
    verdicts,
)
from mpvis.model.columns import Column
from mpvis.model.store import EventStore

Key = tuple[int, int]
IntArray = npt.NDArray[Any]
Scope = Literal["adjacent", "nonadjacent"]

_SECOND_ONLY = np.array(sorted(SECOND_RECV_SITUATIONS), dtype=np.int64)


def gather_gidx(by_rank: Sequence[Any], ranks: IntArray, seqs: IntArray) -> IntArray:
    """Global indices of events ``(ranks[i], seqs[i])`` (all in the store)."""
    out = np.empty(len(ranks), dtype=np.int64)
    if len(ranks) == 0:
        return out
    order = np.argsort(ranks, kind="stable")
    sr = ranks[order]
    cut = np.flatnonzero(sr[1:] != sr[:-1]) + 1
    for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), len(sr)], strict=True):
        at = order[lo:hi]
        out[at] = np.frombuffer(by_rank[int(sr[lo])], dtype=np.int64)[seqs[at]]
    return out


class RecvFacts:
    """What the tracker asks of the model: the event store (receives, consumes,
    message links, call sites), how far each rank's clocks are known (``done()``:
    per rank, the number of its events causally processed) and Lamport's
    relation between two processed events (``happened_before_many``: the same
    for arrays of pairs, ``(a_rank, a_seq, b_rank, b_seq)``)."""

    def __init__(self, *, store: EventStore, done: Callable[[], Sequence[int]],
                 happened_before: Callable[[Key, Key], bool],
                 happened_before_many: Callable[[IntArray, IntArray, IntArray, IntArray], Any]
                 ) -> None:
        self.store = store
        self.done = done
        self.happened_before = happened_before
        self.happened_before_many = happened_before_many


class Race:
    """A receive pair of one rank found by the 16-case classifier: a view of
    row :attr:`row` of a :class:`RaceColumns` (it reads the row as it is now;
    setting ``potential``, ``verdict`` or ``settled`` writes the row).

    ``messages`` are the ``(rank, seq)`` of the sends consumed by the two
    receives, ``None`` where a receive consumed nothing (or its send is not in
    yet); ``consumes`` the seqs of the receives' consumes.  ``settled`` is false
    while the verdict may still change as records arrive.  Two races are equal
    when every field is.
    """

    __slots__ = ("row", "table")

    def __init__(self, table: RaceColumns, row: int) -> None:
        self.table = table
        self.row = row

    @property
    def _store(self) -> EventStore:
        return self.table.facts.store

    @property
    def rank(self) -> int:
        return int(self._store.c_rank.data[self.table.g1.data[self.row]])

    @property
    def comm(self) -> int:
        return int(self._store.c_comm.data[self.table.g1.data[self.row]])

    @property
    def recvs(self) -> tuple[int, int]:
        """The seqs of the two receives, in order."""
        seq, t, i = self._store.c_seq.data, self.table, self.row
        return int(seq[t.g1.data[i]]), int(seq[t.g2.data[i]])

    @property
    def situation(self) -> int:
        """Row of Table 1 (1..16)."""
        return int(self.table.situation.data[self.row])

    @property
    def scope(self) -> Scope:
        return self.table.scope

    @property
    def potential(self) -> bool:
        return bool(self.table.potential.data[self.row])

    @potential.setter
    def potential(self, value: bool) -> None:
        self.table.potential.data[self.row] = int(value)

    @property
    def verdict(self) -> Verdict:
        return VERDICTS[self.table.verdict.data[self.row]]

    @verdict.setter
    def verdict(self, value: Verdict) -> None:
        self.table.verdict.data[self.row] = VERDICTS.index(value)

    @property
    def settled(self) -> bool:
        return bool(self.table.settled.data[self.row])

    @settled.setter
    def settled(self, value: bool) -> None:
        self.table.settled.data[self.row] = int(value)

    @property
    def id(self) -> int:
        """The tracker's race id (its row), -1 for a pair computed on demand."""
        return self.row if self.table.numbered else -1

    @property
    def messages(self) -> tuple[Key | None, Key | None]:
        """The sends consumed by the two receives (``None``: nothing consumed)."""
        st, t, i = self._store, self.table, self.row
        return st.key(t.send1.data[i]) if t.send1.data[i] >= 0 else None, (
            st.key(t.send2.data[i]) if t.send2.data[i] >= 0 else None)

    @property
    def consumes(self) -> tuple[int | None, int | None]:
        """The seqs of the two receives' consumes (``None``: not consumed)."""
        c1, c2 = self.table.cons1.data[self.row], self.table.cons2.data[self.row]
        return (c1 if c1 >= 0 else None, c2 if c2 >= 0 else None)

    @property
    def sites(self) -> tuple[str | None, str | None]:
        """The call sites of the two receives."""
        st, t, i = self._store, self.table, self.row
        names, site = st.sites, st.c_site.data
        s1, s2 = site[t.g1.data[i]], site[t.g2.data[i]]
        return names[s1] if s1 >= 0 else None, names[s2] if s2 >= 0 else None

    def as_tuple(self) -> tuple[object, ...]:
        """Every field: rank, comm, recvs, situation, scope, potential, verdict,
        messages, consumes, settled, id, sites."""
        return (self.rank, self.comm, self.recvs, self.situation, self.scope, self.potential,
                self.verdict, self.messages, self.consumes, self.settled, self.id, self.sites)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Race)
        return self.as_tuple() == other.as_tuple()

    __hash__ = None  # type: ignore[assignment]  # it reads a mutable row

    def __repr__(self) -> str:
        names = ("rank", "comm", "recvs", "situation", "scope", "potential", "verdict",
                 "messages", "consumes", "settled", "id", "sites")
        inner = ", ".join(f"{k}={v!r}" for k, v in zip(names, self.as_tuple(), strict=True))
        return f"Race({inner})"

    @property
    def consumption(self) -> str:
        """``RCRC``, ``RCR-``, ``R-RC`` or ``R-R-`` (section 3.1)."""
        return "".join("RC" if c is not None else "R-" for c in self.consumes)

    def to_report(self) -> dict[str, object]:
        """The spec's ``races`` entry (plus optional fields)."""
        return {
            "method": "classifier",
            "scope": self.scope,
            "rank": self.rank,
            "recvs": list(self.recvs),
            "situation": self.situation,
            "messages": [list(m) if m is not None else None for m in self.messages],
            "verdict": self.verdict,
            "comm": self.comm,
            "consumption": self.consumption,
            "sites": list(self.sites),
        }


class RaceColumns(Sequence[Race]):
    """Receive pairs of one rank each as columns, one row per pair, in the order
    they were found; a ``Sequence`` of :class:`Race` views (one view object per
    row, made when first asked for, so a row always gives the same object).

    Columns: ``g1``, ``g2`` the global indices of the two receives; ``situation``;
    ``potential`` (0/1); ``verdict`` (an index of :data:`~mpvis.model.classifier.VERDICTS`);
    ``settled`` (0/1); ``cons1``, ``cons2`` the seqs of the receives' consumes and
    ``send1``, ``send2`` the global indices of the consumed messages' sends (-1:
    none known), as of the last :func:`evaluate`.  ``numbered``: a row's race id
    is its index (the tracker's pairs), else -1 (pairs computed on demand).
    """

    def __init__(self, facts: RecvFacts, scope: Scope, *, numbered: bool) -> None:
        self.facts = facts
        self.scope: Scope = scope
        self.numbered = numbered
        self.g1, self.g2 = Column("q"), Column("q")
        self.situation, self.potential = Column("b"), Column("b")
        self.verdict, self.settled = Column("b"), Column("b")
        self.cons1, self.cons2 = Column("i"), Column("i")
        self.send1, self.send2 = Column("q"), Column("q")
        self._views: dict[int, Race] = {}

    def add(self, g1: IntArray, g2: IntArray, situation: IntArray) -> None:
        """Append pairs (not evaluated yet: not potential, ``unverified``)."""
        n = len(g1)
        self.g1.extend_array(g1)
        self.g2.extend_array(g2)
        self.situation.extend_array(situation)
        zeros, none = np.zeros(n, dtype=np.int8), np.full(n, -1, dtype=np.int64)
        for col in (self.potential, self.verdict, self.settled):
            col.extend_array(zeros)
        for col in (self.cons1, self.cons2, self.send1, self.send2):
            col.extend_array(none)

    def __len__(self) -> int:
        return len(self.g1)

    @overload
    def __getitem__(self, i: int) -> Race: ...
    @overload
    def __getitem__(self, i: slice) -> list[Race]: ...
    def __getitem__(self, i: int | slice) -> Race | list[Race]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("race index out of range")
        i %= n
        view = self._views.get(i)
        if view is None:
            view = self._views[i] = Race(self, i)
        return view

    def __iter__(self) -> Iterator[Race]:
        return (self[i] for i in range(len(self)))

    def views(self, rows: IntArray) -> list[Race]:
        """The races of ``rows``, in that order."""
        return [self[i] for i in rows.tolist()]

    def receive_keys(self, rows: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """The rank and the two receives' seqs of the races of ``rows`` (arrays in
        that order): what a list of races filters on without a view per row."""
        st = self.facts.store
        c_seq = st.c_seq.view()
        g1, g2 = self.g1.view()[rows], self.g2.view()[rows]
        return st.c_rank.view()[g1], c_seq[g1], c_seq[g2]

    def report_columns(self, rows: IntArray) -> dict[str, IntArray]:
        """What the races of ``rows`` report (:meth:`Race.to_report`), as ``int64``
        columns in that order, without a :class:`Race` per row: ``rank``,
        ``comm``, ``recv1``, ``recv2``, ``situation``, ``verdict`` (codes of
        :data:`~mpvis.model.classifier.VERDICTS`), ``m1r``, ``m1s``, ``m2r``,
        ``m2s`` (the messages, -1 for ``None``), ``cons1``, ``cons2`` (the
        consumes' seqs, -1 for ``None``) and ``site1``, ``site2`` (ids of the
        store's ``sites``, -1 for ``None``); the scope is :attr:`scope`."""
        st = self.facts.store
        c_rank, c_seq = st.c_rank.view(), st.c_seq.view()
        g1, g2 = self.g1.view()[rows], self.g2.view()[rows]
        out = {"rank": c_rank[g1], "comm": st.c_comm.view()[g1], "recv1": c_seq[g1],
               "recv2": c_seq[g2], "situation": self.situation.view()[rows],
               "verdict": self.verdict.view()[rows], "cons1": self.cons1.view()[rows],
               "cons2": self.cons2.view()[rows], "site1": st.c_site.view()[g1],
               "site2": st.c_site.view()[g2]}
        for k, col in (("1", self.send1), ("2", self.send2)):
            sg = col.view()[rows].astype(np.int64)
            has = sg >= 0
            sg = np.where(has, sg, 0)
            out["m" + k + "r"] = np.where(has, c_rank[sg], -1)
            out["m" + k + "s"] = np.where(has, c_seq[sg], -1)
        return {k: v.astype(np.int64) for k, v in out.items()}


def evaluate(t: RaceColumns, rows: IntArray, final: bool) -> IntArray:
    """Re-evaluate rows ``rows`` of ``t`` in place from the model's current facts
    (section 3.2's potential race, then section 3.1's legitimacy check).

    Returns a mask over ``rows``: the pairs whose verdict waits for the clock of
    their second message's send.  With ``final`` the input has ended: what is
    missing now stays missing (every pair is settled).
    """
    n = len(rows)
    facts = t.facts
    store = facts.store
    g1, g2 = t.g1.view()[rows], t.g2.view()[rows]
    peer, tag, ref = store.c_peer.view(), store.c_tag.view(), store.c_ref.view()
    partner, c_rank, c_seq = store.c_partner.view(), store.c_rank.view(), store.c_seq.view()
    rank = c_rank[g1].astype(np.int64)
    src1, tag1, src2, tag2 = peer[g1], tag[g1], peer[g2], tag[g2]
    cons = [ref[g].astype(np.int64) for g in (g1, g2)]
    has = [c >= 0 for c in cons]
    msrc, mtag, send = [], [], []
    both = gather_gidx(store.by_rank, np.concatenate([rank[h] for h in has]),
                       np.concatenate([c[h] for c, h in zip(cons, has, strict=True)]))
    for h, got in zip(has, np.split(both, [int(has[0].sum())]), strict=True):
        cg = np.zeros(n, dtype=np.int64)
        cg[h] = got
        msrc.append(np.where(h, peer[cg], 0))
        mtag.append(np.where(h, tag[cg], 0))
        send.append(np.where(h, partner[cg], -1))
    pot = potential_races(src1, tag1, src2, tag2, has[0], msrc[0], mtag[0], has[1], mtag[1])
    need = has[0] & (send[1] >= 0)
    s2 = np.where(need, send[1], 0)
    s2rank, s2seq = c_rank[s2].astype(np.int64), c_seq[s2].astype(np.int64)
    done = np.asarray(facts.done(), dtype=np.int64)
    ready = need & (s2seq < done[s2rank])
    hb = np.zeros(n, dtype=bool)  # asked only where the verdict reads it
    ask = np.flatnonzero(ready & has[1] & (msrc[0] != msrc[1]))
    if len(ask):
        hb[ask] = facts.happened_before_many(rank[ask], cons[0][ask], s2rank[ask], s2seq[ask])
    waiting: IntArray = need & ~ready
    rows_ = rows.astype(np.int64)
    t.potential.view()[rows_] = pot
    t.verdict.view()[rows_] = verdicts(has[0], msrc[0], has[1], msrc[1], decided=ready, before=hb)
    complete = has[0] & has[1] & (send[0] >= 0) & (send[1] >= 0) & ~waiting
    t.settled.view()[rows_] = complete | final
    for col, c in ((t.cons1, cons[0]), (t.cons2, cons[1]), (t.send1, send[0]),
                   (t.send2, send[1])):
        col.view()[rows_] = c
    return waiting


class RaceTracker:
    """Adjacent receive pairs of every rank, kept up to date as records arrive
    (the model's races room, with :mod:`mpvis.model.nonadjacent` for the
    pairs computed on demand).

    It owns the pairs (:attr:`races`, columns) and which pairs wait for a
    send's clock; it learns of new receives (:meth:`on_recvs`) and of receives
    whose consume or message became known (:meth:`touch`, :meth:`touch_many`)
    from the record rules, and reads the model only through its
    :class:`RecvFacts`.  :meth:`flush` (once per batch) and :meth:`finish`
    re-evaluate the pairs touched, with whole-array operations;
    :meth:`take_changes` says what changed.
    """

    def __init__(self, facts: RecvFacts) -> None:
        self.facts = facts
        #: Every pair, in discovery order (the race id is the row).
        self.races = RaceColumns(facts, "adjacent", numbered=True)
        # (rank, comm) -> gidx of its last receive
        self._last_recv: dict[tuple[int, int], int] = {}
        self._touched: list[IntArray] = []  # receive gidx whose consume or message changed
        self._dirty: list[IntArray] = []  # rows to re-evaluate at the next flush
        self._first_g1 = np.zeros(0, dtype=np.int64)  # g1 of the rows indexed, sorted
        self._first_row = np.zeros(0, dtype=np.int64)  # their rows
        self._indexed = 0  # rows indexed by g1 so far
        self._new_from = 0  # rows from here on are new since the last flush
        self._waiting = np.zeros(0, dtype=np.int64)  # rows waiting for a send's clock
        self._announced = bytearray()  # per race id: 1 once announced as potential
        self.added: list[int] = []
        self.changed: set[int] = set()

    def on_recvs(self, g: IntArray) -> None:
        """Receives arrived (global indices, in arrival order, already in the
        store): pair each with the previous receive of its rank on its
        communicator.

        Only pairs whose first receive names no source can race (subset 1 of
        section 3.1), and situations 3 and 11 only with equal tags: only those
        pairs are kept, in arrival order of their second receive (race ids
        follow it).
        """
        n = len(g)
        if n == 0:
            return
        store = self.facts.store
        g = np.asarray(g, dtype=np.int64)
        rank = store.c_rank.view()[g].astype(np.int64)
        comm = store.c_comm.view()[g].astype(np.int64)
        cmin = int(comm.min())
        key = rank * (int(comm.max()) - cmin + 1) + (comm - cmin)
        order = np.argsort(key, kind="stable")
        sk = key[order]
        starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
        ends = np.r_[starts[1:] - 1, n - 1]
        prev = np.empty(n, dtype=np.int64)  # the previous receive, in sorted order (-1: none)
        prev[1:] = g[order[:-1]]
        last = self._last_recv
        for j, e in zip(starts.tolist(), ends.tolist(), strict=True):
            i = int(order[j])
            gkey = (int(rank[i]), int(comm[i]))
            prev[j] = last.get(gkey, -1)
            last[gkey] = int(g[order[e]])
        has = prev >= 0
        cand = order[has]
        first = prev[has]
        peer, tag = store.c_peer.view(), store.c_tag.view()
        wild = peer[first] == ANY
        cand, first = cand[wild], first[wild]
        second = g[cand]
        tag1, tag2 = tag[first], tag[second]
        sit = situations(peer[first], tag1, peer[second], tag2)
        keep = ~(np.isin(sit, _SECOND_ONLY) & (tag1 != tag2))
        cand, first, second, sit = cand[keep], first[keep], second[keep], sit[keep]
        arrival = np.argsort(cand, kind="stable")
        self.races.add(first[arrival], second[arrival], sit[arrival])

    def touch(self, recv_g: int) -> None:
        """A consume of receive ``recv_g`` (global index) arrived, or its message
        became known (or unknown)."""
        self._touched.append(np.array([recv_g], dtype=np.int64))

    def touch_many(self, recv_g: IntArray) -> None:
        """:meth:`touch` for each receive of ``recv_g``."""
        if len(recv_g):
            self._touched.append(np.asarray(recv_g, dtype=np.int64))

    def _rows_of(self, recv_g: IntArray) -> IntArray:
        """Rows of the pairs with a receive among ``recv_g`` (sorted, unique)."""
        t = self.races
        n = len(t)
        if n > self._indexed:  # index the new rows by their first receive
            new = t.g1.view()[self._indexed:n].astype(np.int64)
            order = np.argsort(new, kind="stable")
            at = np.searchsorted(self._first_g1, new[order])
            self._first_g1 = np.insert(self._first_g1, at, new[order])
            self._first_row = np.insert(self._first_row, at, order + self._indexed)
            self._indexed = n
        found = []
        g2 = t.g2.view()[:n]  # increasing: a receive is the second of at most one pair
        for sorted_g, rows in ((g2, None), (self._first_g1, self._first_row)):
            at = np.searchsorted(sorted_g, recv_g)
            ok = at < len(sorted_g)
            ok[ok] = sorted_g[at[ok]] == recv_g[ok]
            found.append(at[ok] if rows is None else rows[at[ok]])
        return unique(np.concatenate(found))

    def flush(self, final: bool) -> None:
        """Re-evaluate the pairs touched since the last flush, the new ones, and
        those whose awaited send clock is now known (called once per batch)."""
        t = self.races
        n = len(t)
        parts = [np.arange(self._new_from, n, dtype=np.int64), *self._dirty]
        self._new_from, self._dirty = n, []
        if self._touched:
            parts.append(self._rows_of(unique(np.concatenate(self._touched))))
            self._touched = []
        if len(self._waiting):
            w = self._waiting
            s2 = t.send2.view()[w]
            store = self.facts.store
            done = np.asarray(self.facts.done(), dtype=np.int64)
            ready = (store.c_seq.view()[s2].astype(np.int64)
                     < done[store.c_rank.view()[s2].astype(np.int64)])
            parts.append(w[ready])
            self._waiting = w[~ready]
        dirty = unique(np.concatenate(parts))
        if len(dirty):
            self._update(dirty, final)

    def finish(self) -> None:
        """The input ended: settle every pair with what is known."""
        self._dirty.append(np.flatnonzero(self.races.settled.view() == 0))
        self.flush(final=True)

    def _update(self, rows: IntArray, final: bool) -> None:
        t = self.races
        before = [col.view()[rows].copy() for col in (t.potential, t.verdict, t.send1, t.send2)]
        waiting = evaluate(t, rows, final)
        if waiting.any() or len(self._waiting):
            self._waiting = np.union1d(np.setdiff1d(self._waiting, rows, assume_unique=True),
                                       rows[waiting])
        after = [col.view()[rows] for col in (t.potential, t.verdict, t.send1, t.send2)]
        announced = self._announced
        if len(announced) < len(t):
            announced.extend(bytes(len(t) - len(announced)))
        was = np.frombuffer(announced, dtype=np.uint8)[rows].astype(bool)
        pot = after[0].astype(bool)
        new = pot & ~was
        differ = np.zeros(len(rows), dtype=bool)
        for b, a in zip(before, after, strict=True):
            differ |= b != a
        added = rows[new].tolist()
        for rid in added:
            announced[rid] = 1
        self.added.extend(added)
        self.changed.update(rows[was & differ].tolist())

    def take_changes(self) -> tuple[list[int], list[int]]:
        """Races that became potential, and announced races that changed, since last call."""
        added, changed = self.added, sorted(self.changed - set(self.added))
        self.added, self.changed = [], set()
        return added, changed

    def potential_rows(self) -> IntArray:
        """The ids (rows of :attr:`races`) of every pair that is a potential race
        now, in discovery order."""
        return np.flatnonzero(self.races.potential.view() != 0)

    def potential_races(self) -> list[Race]:
        """Every pair that is a potential race now, in discovery order."""
        return self.races.views(self.potential_rows())
