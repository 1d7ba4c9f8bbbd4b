"""Incremental tracking of the classifier's receive pairs inside the model.

Embedded in the model as MPVisualizer embeds it in its ``Process`` class
(``mpvisualizer-race-detection.txt`` section 3.2): situations 4, 8, 12, 16 are
known when the first receive arrives, 3, 11 and some 7 when the second arrives,
15 and the other 7 when the second consume arrives.  A pair is created when its
second receive arrives (before that there is no pair) and re-evaluated when one
of its consumes, a consumed message's send, or the clock of the second send
arrives; the verdict is therefore the same whatever the arrival order, once
all records are in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpvis.model import classifier
from mpvis.model.classifier import ANY, Verdict
from mpvis.model.store import EventStore

Key = tuple[int, int]
IntArray = npt.NDArray[Any]
Scope = Literal["adjacent", "nonadjacent"]


class Race:
    """A receive pair of one rank found by the 16-case classifier.

    ``messages`` are the ``(rank, seq)`` of the sends consumed by the two
    receives, ``None`` where a receive consumed nothing.  ``settled`` is false
    while the verdict may still change as records arrive.

    The pairs of a run are many (about one per eight events of the 1M-event
    benchmark trace), so ``recvs``, ``messages`` and ``consumes`` are held as
    plain integers (-1 for ``None``) and given as tuples when read; two races
    are equal when every field is.
    """

    __slots__ = ("_c1", "_c2", "_m1r", "_m1s", "_m2r", "_m2s", "_r1", "_r2", "comm", "id",
                 "potential", "rank", "scope", "settled", "sites", "situation", "verdict")

    def __init__(
        self, rank: int, comm: int, recvs: tuple[int, int], situation: int, *,
        scope: Scope = "adjacent", potential: bool = False, verdict: Verdict = "unverified",
        messages: tuple[Key | None, Key | None] = (None, None),
        consumes: tuple[int | None, int | None] = (None, None), settled: bool = False,
        id: int = -1,
        sites: tuple[str | None, str | None] = (None, None),
    ) -> None:
        self.rank = rank
        self.comm = comm
        self.recvs = recvs
        self.situation = situation
        self.scope: Scope = scope
        self.potential = potential
        self.verdict: Verdict = verdict
        self.messages = messages
        self.consumes = consumes
        self.settled = settled
        self.id = id
        self.sites = sites

    @property
    def recvs(self) -> tuple[int, int]:
        """The seqs of the two receives, in order."""
        return self._r1, self._r2

    @recvs.setter
    def recvs(self, value: tuple[int, int]) -> None:
        self._r1, self._r2 = value

    @property
    def messages(self) -> tuple[Key | None, Key | None]:
        """The sends consumed by the two receives (``None``: nothing consumed)."""
        return ((self._m1r, self._m1s) if self._m1r >= 0 else None,
                (self._m2r, self._m2s) if self._m2r >= 0 else None)

    @messages.setter
    def messages(self, value: tuple[Key | None, Key | None]) -> None:
        m1, m2 = value
        self._m1r, self._m1s = m1 if m1 is not None else (-1, -1)
        self._m2r, self._m2s = m2 if m2 is not None else (-1, -1)

    @property
    def consumes(self) -> tuple[int | None, int | None]:
        """The seqs of the two receives' consumes (``None``: not consumed)."""
        return (self._c1 if self._c1 >= 0 else None, self._c2 if self._c2 >= 0 else None)

    @consumes.setter
    def consumes(self, value: tuple[int | None, int | None]) -> None:
        c1, c2 = value
        self._c1 = c1 if c1 is not None else -1
        self._c2 = c2 if c2 is not None else -1

    def as_tuple(self) -> tuple[object, ...]:
        """Every field, in the constructor's order."""
        return (self.rank, self.comm, self.recvs, self.situation, self.scope, self.potential,
                self.verdict, self.messages, self.consumes, self.settled, self.id, self.sites)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Race)
        return self.as_tuple() == other.as_tuple()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

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


#: What the model knows of one receive: its ``src`` and ``tag`` arguments, the
#: seq of its consume, the consumed message's ``(src, tag)`` and its send's key
#: (each ``None`` while unknown).
RecvState = tuple[int, int, int | None, tuple[int, int] | None, Key | None]


def receive_state(store: EventStore, rank: int, seq: int) -> RecvState:
    """What the store knows of receive ``(rank, seq)`` (:data:`RecvState`): the
    tracker's :attr:`RecvFacts.receive` in the model."""
    by_rank = store.by_rank[rank]
    g = by_rank[seq]
    peer, tag = store.c_peer.data, store.c_tag.data
    c = store.c_ref.data[g]
    if c < 0:
        return peer[g], tag[g], None, None, None
    cg = by_rank[c]
    sg = store.c_partner.data[cg]
    send = None if sg < 0 else (store.c_rank.data[sg], store.c_seq.data[sg])
    return peer[g], tag[g], c, (peer[cg], tag[cg]), send


class RecvFacts:
    """What the tracker asks of the model about receives, consumes and clocks."""

    def __init__(
        self,
        *,
        receive: Callable[[int, int], RecvState],
        clock_ready: Callable[[Key], bool],
        happened_before: Callable[[Key, Key], bool],
        site: Callable[[int, int], str | None],
    ) -> None:
        self.receive = receive
        self.clock_ready = clock_ready
        self.happened_before = happened_before
        self.site = site


def evaluate(race: Race, facts: RecvFacts, final: bool) -> Key | None:
    """Re-evaluate ``race`` in place from the model's current facts.

    Returns the send whose clock the verdict is waiting for, if any.  With
    ``final`` the input has ended: what is missing now stays missing.
    """
    r = race.rank
    s1, s2 = race.recvs
    src1, tag1, c1, m1, send1 = facts.receive(r, s1)
    src2, tag2, c2, m2, send2 = facts.receive(r, s2)
    race.consumes = (c1, c2)
    race.messages = (send1, send2)
    race.potential = classifier.potential_race(src1, tag1, src2, tag2, cons1=m1, cons2=m2)
    waiting: Key | None = None
    hb: bool | None = None
    if c1 is not None and send2 is not None:
        if facts.clock_ready(send2):
            hb = facts.happened_before((r, c1), send2)
        else:
            waiting = send2
    race.verdict = classifier.verdict(m1[0] if m1 else None, m2[0] if m2 else None, hb)
    complete = m1 is not None and m2 is not None and send1 is not None and (
        send2 is not None and waiting is None)
    race.settled = complete or final
    return waiting


class RaceTracker:
    """Adjacent receive pairs of every rank, kept up to date as records arrive
    (the model's races room, with :mod:`mpvis.model.nonadjacent` for the
    pairs computed on demand).

    It owns the pairs and which pair waits for what; it learns of new
    receives (:meth:`on_recvs`) and of receives whose consume or message
    became known (:meth:`touch_recv`) from the record rules, and reads the
    model only through its :class:`RecvFacts`.  :meth:`flush` (once per batch)
    and :meth:`finish` re-evaluate; :meth:`take_changes` says what changed.
    """

    def __init__(self, facts: RecvFacts) -> None:
        self.facts = facts
        self.races: list[Race] = []
        self._last_recv: dict[tuple[int, int], tuple[int, int, int]] = {}  # -> seq, src, tag
        # receive (rank << 32 | seq) -> the id of its pair, or a list of both ids (a
        # receive is the second of at most one pair and the first of at most one)
        self._by_recv: dict[int, int | list[int]] = {}
        self._site_pairs: dict[tuple[str | None, str | None], tuple[str | None, str | None]] = {}
        self._by_send: dict[Key, list[int]] = {}
        self._announced = bytearray()  # per race id: 1 once announced as potential
        self._dirty: set[int] = set()
        self.added: list[int] = []
        self.changed: set[int] = set()

    def on_recvs(self, rank: IntArray, seq: IntArray, comm: IntArray, src: IntArray,
                 tag: IntArray) -> None:
        """Receives arrived (arrays in arrival order): pair each with the
        previous receive of its rank on its communicator.

        Only pairs whose first receive names no source can race (subset 1 of
        section 3.1), so those are found with whole-array operations and only
        they are looked at one by one, in arrival order (race ids follow it).
        """
        n = len(rank)
        if n == 0:
            return
        key = rank.astype(np.int64) * (int(comm.max()) + 1) + comm
        order = np.argsort(key, kind="stable")
        sk = key[order]
        starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
        ends = np.r_[starts[1:] - 1, n - 1]
        # the previous receive of each, in sorted order (-2: there is none)
        p_seq, p_src, p_tag = (np.empty(n, dtype=np.int64) for _ in range(3))
        for prev, col in ((p_seq, seq), (p_src, src), (p_tag, tag)):
            prev[1:] = col[order[:-1]]
        last = self._last_recv
        for j, e in zip(starts.tolist(), ends.tolist(), strict=True):
            i, k = int(order[j]), int(order[e])
            gkey = (int(rank[i]), int(comm[i]))
            before = last.get(gkey)
            p_seq[j], p_src[j], p_tag[j] = before if before is not None else (-2, -2, -2)
            last[gkey] = (int(seq[k]), int(src[k]), int(tag[k]))
        cand = np.flatnonzero(p_src == ANY)
        cand = cand[np.argsort(order[cand], kind="stable")]
        for j, i in zip(cand.tolist(), order[cand].tolist(), strict=True):
            self._pair(int(rank[i]), int(comm[i]), int(p_seq[j]), int(p_tag[j]),
                       int(seq[i]), int(src[i]), int(tag[i]))

    def _pair(self, rank: int, comm: int, prev: int, tag1: int,  # noqa: PLR0917
              seq: int, src: int, tag: int) -> None:
        """Receive ``seq`` follows ``recv(-1, tag1)`` ``prev`` on its communicator."""
        sit = classifier.situation(ANY, tag1, src, tag)
        if sit in classifier.SECOND_RECV_SITUATIONS and tag1 != tag:
            return
        race = Race(rank=rank, comm=comm, recvs=(prev, seq), situation=sit)
        race.id = rid = len(self.races)
        sites = (self.facts.site(rank, prev), self.facts.site(rank, seq))
        race.sites = self._site_pairs.setdefault(sites, sites)  # one tuple per site pair
        self.races.append(race)
        by_recv = self._by_recv
        for s in (prev, seq):
            key = rank << 32 | s
            held = by_recv.get(key)
            if held is None:
                by_recv[key] = rid
            elif isinstance(held, int):
                by_recv[key] = [held, rid]
            else:
                held.append(rid)
        self._dirty.add(rid)

    def touch_recv(self, rank: int, recv_seq: int) -> None:
        """A consume of this receive arrived, or its message became known."""
        ids = self._by_recv.get(rank << 32 | recv_seq)
        if ids is not None:
            if isinstance(ids, int):
                self._dirty.add(ids)
            else:
                self._dirty.update(ids)

    def touch_recvs(self, ranks: list[int], recv_seqs: list[int]) -> None:
        """:meth:`touch_recv` for each receive ``(ranks[i], recv_seqs[i])``."""
        by_recv = self._by_recv
        if by_recv:
            get, dirty = by_recv.get, self._dirty
            for r, s in zip(ranks, recv_seqs, strict=True):
                ids = get(r << 32 | s)
                if ids is not None:
                    if isinstance(ids, int):
                        dirty.add(ids)
                    else:
                        dirty.update(ids)

    def flush(self, final: bool) -> None:
        """Re-evaluate the pairs touched since the last flush, and those whose
        awaited send clock is now known (called once per batch)."""
        ready = [k for k in self._by_send if self.facts.clock_ready(k)]
        for key in ready:
            self._dirty.update(self._by_send.pop(key))
        dirty, self._dirty = self._dirty, set()
        for rid in sorted(dirty):
            self._update(rid, final)

    def finish(self) -> None:
        """The input ended: settle every pair with what is known."""
        self._dirty.update(rid for rid, race in enumerate(self.races) if not race.settled)
        self.flush(final=True)

    def _update(self, rid: int, final: bool = False) -> None:
        race = self.races[rid]
        before = (race.potential, race.verdict, race.messages)
        waiting = evaluate(race, self.facts, final)
        if waiting is not None:
            self._by_send.setdefault(waiting, []).append(rid)
        announced = self._announced
        if len(announced) <= rid:
            announced.extend(bytes(len(self.races) - len(announced)))
        if race.potential and not announced[rid]:
            announced[rid] = 1
            self.added.append(rid)
        elif announced[rid] and before != (race.potential, race.verdict, race.messages):
            self.changed.add(rid)

    def take_changes(self) -> tuple[list[int], list[int]]:
        """Races that became potential, and announced races that changed, since last call."""
        added, changed = self.added, sorted(self.changed - set(self.added))
        self.added, self.changed = [], set()
        return added, changed

    def potential_races(self) -> list[Race]:
        """Every pair that is a potential race now, in discovery order."""
        return [r for r in self.races if r.potential]
