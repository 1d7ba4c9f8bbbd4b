"""Columnar queries of the event store: many events at once, as NumPy arrays.

The model's classes (:mod:`mpvis.model.entities`) are the way to reach *an*
event; an analysis that looks at every event of a run, or of a rank, in one
pass asks these queries instead, so that it never builds an object per event
and never reads the store's raw ``c_*`` columns itself (docs/model.md,
"Columnar queries").

* :func:`rank_arrays` -- the events ``start:stop`` of one rank, in ``seq``
  order (:class:`EventArrays`): position ``i`` is event ``(rank, start + i)``.
* :func:`events_at` -- the events at given ``(rank, seq)`` pairs, those the
  store holds (a report's events looked up at once).
* :func:`run_arrays` -- every event of the run in rank-major order
  (:class:`RunArrays`): rank 0's events in ``seq`` order, then rank 1's...;
  position ``starts[r] + s`` is event ``(r, s)``; it also answers "the
  partner of these events" (a send's consume, a consume's send) and "the
  events whose extra field has this value" as positions, "fields of the
  partners of these events" (:meth:`RunArrays.partner_fields`), and "a field
  of these ``(rank, seq)`` events, if held" (:meth:`RunArrays.at`).
* :func:`rank_chunks` -- the same, a few whole ranks at a time (each chunk a
  :class:`RunArrays` of consecutive ranks, about a given number of events):
  a whole-run pass whose work is per rank holds one chunk's arrays, not the
  run's (``mpvis check``'s peak memory is in such passes).

Contract: a query is a snapshot of the events held when it was made (its
positions never move, later events are not in it); every array it returns is
a fresh NumPy array or a read-only view, and the extras dicts it returns are
the store's own (never change one, they may be shared); nothing in the store
is changed.  Fields are read on demand: a field no caller asks for is never
gathered, and :meth:`EventArrays.field` gathers only the positions asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mpvis.model.columns import Column
from mpvis.model.store import EventStore
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING

__all__ = ["EventArrays", "Field", "RunArrays", "events_at", "rank_arrays", "rank_chunks",
           "run_arrays"]

#: The per-event fields a query gathers (the trace record's field of that name;
#: ``kind`` as :data:`mpvis.protocol.records.KIND_CODE` codes, ``peer`` a send's
#: ``dest`` or a receive's or consume's ``src``, ``flags`` the
#: :mod:`mpvis.protocol.codes` bits, ``ref`` a receive's consume seq or a
#: consume's receive seq, ``call`` and ``req`` -1 when absent, ``site`` an id
#: into the store's ``sites``).
Field = Literal["rank", "seq", "kind", "t", "site", "comm", "peer", "tag", "flags",
                "req", "ref", "size", "call"]

Positions = npt.NDArray[np.integer[Any]]


def _column(store: EventStore, name: Field) -> Column:
    columns: dict[str, Column] = {
        "rank": store.c_rank, "seq": store.c_seq, "kind": store.c_kind, "t": store.c_t,
        "site": store.c_site, "comm": store.c_comm, "peer": store.c_peer,
        "tag": store.c_tag, "flags": store.c_flags, "req": store.c_req, "ref": store.c_ref,
        "size": store.c_size, "call": store.c_call,
    }
    return columns[name]


class EventArrays:
    """Some events of a store, in a fixed order, as arrays (module docstring).

    ``indices``: the events' global indices (arrival order), one per position,
    for the model's functions that take global indices
    (:func:`mpvis.model.record_batch.rebuild_records`), as
    :attr:`mpvis.model.entities.Views.indices` gives them (32-bit in a
    :class:`RunArrays` of fewer than 2**31 events).
    """

    def __init__(self, store: EventStore, indices: npt.NDArray[np.signedinteger[Any]]) -> None:
        self._store = store
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    @cached_property
    def kind(self) -> npt.NDArray[np.int8]:
        """Every position's kind code (:data:`mpvis.protocol.records.KIND_CODE`)."""
        return np.asarray(self.field("kind"), dtype=np.int8)

    @cached_property
    def blocking(self) -> npt.NDArray[np.bool_]:
        """Every position's ``blocking`` (false for the kinds without one)."""
        blocking: npt.NDArray[np.bool_] = (self.field("flags") & F_BLOCKING) != 0
        return blocking

    def of_kind(self, kind: str) -> npt.NDArray[np.intp]:
        """The positions of the events of ``kind`` (a record kind name), in order;
        ``KeyError`` for an unknown kind."""
        return np.flatnonzero(self.kind == R.KIND_CODE[kind])

    def field(self, name: Field, positions: Positions | None = None) -> npt.NDArray[Any]:
        """``name`` of the events at ``positions`` (every position when ``None``),
        in the column's own type."""
        g = self.indices if positions is None else self.indices[positions]
        out: npt.NDArray[Any] = _column(self._store, name).view()[g]
        return out

    def extras(self, positions: Positions) -> list[Mapping[str, Any]]:
        """The fields no column holds (collective arguments, a wait's ``reqs``,
        ``state`` variables...) of the events at ``positions``; an empty mapping
        for an event without any.  The store's own dicts: never change one."""
        return self._store.extras.get_many(self.indices[positions].tolist())


    def requests(self, positions: Positions) -> tuple[npt.NDArray[np.int64],
                                                      npt.NDArray[np.int64]]:
        """The ``reqs`` of the waits at ``positions`` (empty for other events) as
        arrays: how many each has, and all of them one wait after the other; the
        waits the store holds as arrays (:mod:`mpvis.model.extras`) are read
        from them, with no list per wait."""
        g = self.indices[positions]
        wg, woff, wreq = self._store.extras.wait_buffers()
        wgv = np.frombuffer(wg, dtype=np.int64) if len(wg) else np.zeros(0, np.int64)
        offsets = np.frombuffer(woff, dtype=np.int64)
        k = np.minimum(np.searchsorted(wgv, g), max(len(wgv) - 1, 0))
        held = (wgv[k] == g) if len(wgv) else np.zeros(len(g), dtype=bool)
        lengths = np.zeros(len(g), dtype=np.int64)
        start = np.zeros(len(g), dtype=np.int64)  # in ``source``
        lengths[held] = offsets[k[held] + 1] - offsets[k[held]]
        start[held] = offsets[k[held]]
        other: list[int] = []
        for i in np.flatnonzero(~held).tolist():  # waits held as dicts (and other events)
            extra = self._store.extras.get(int(g[i]))
            reqs = [] if extra is None else extra.get("reqs", [])
            start[i] = len(wreq) + len(other)
            lengths[i] = len(reqs)
            other.extend(reqs)
        source = np.concatenate([np.frombuffer(wreq, dtype=np.int64) if len(wreq)
                                 else np.zeros(0, np.int64), np.asarray(other, np.int64)])
        total = int(lengths.sum())
        first = np.cumsum(lengths) - lengths  # where each wait's requests go
        flat = source[np.repeat(start - first, lengths) + np.arange(total, dtype=np.int64)]
        return lengths, flat


class RunArrays(EventArrays):
    """Every event of a run, rank-major (module docstring), or those of the
    consecutive ranks ``lo, lo + 1, ...`` (a chunk: :func:`rank_chunks`).

    ``counts[i]``: rank ``lo + i``'s events; ``starts``: ``len(counts) + 1``
    offsets, rank ``lo + i``'s events at positions ``starts[i]:starts[i + 1]``
    (``lo`` is 0 for the whole run: ``counts[r]`` and ``starts[r]`` of rank ``r``).
    """

    def __init__(self, store: EventStore, lo: int = 0, hi: int | None = None) -> None:
        hi = store.nprocs if hi is None else hi
        self.lo = lo
        self.counts = [store.count(r) for r in range(lo, hi)]
        # 32-bit global indices while they fit: 4 bytes an event less in every
        # whole-run pass (the potential deadlocks' pass sets mpvis check's peak)
        dtype = np.int32 if store.event_count <= 2**31 else np.int64
        parts = [np.frombuffer(store.by_rank[r], dtype=np.int64) for r in range(lo, hi)]
        indices: npt.NDArray[np.signedinteger[Any]] = (
            np.concatenate(parts, dtype=dtype, casting="same_kind") if sum(self.counts)
            else np.zeros(0, dtype=dtype))
        super().__init__(store, indices)
        self.starts = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=self.starts[1:])

    @cached_property
    def rank(self) -> npt.NDArray[np.int32]:
        """Every position's rank (computed from the offsets, no gather)."""
        lo = self.lo
        return np.repeat(np.arange(lo, lo + len(self.counts), dtype=np.int32), self.counts)

    @cached_property
    def seq(self) -> npt.NDArray[np.int32]:
        """Every position's seq (computed from the offsets, no gather)."""
        n = len(self.indices)
        if n >= 1 << 31:
            return (np.arange(n, dtype=np.int64) - np.repeat(self.starts[:-1], self.counts)
                    ).astype(np.int32)
        seq = np.arange(n, dtype=np.int32)  # 32-bit throughout: no 64-bit temporaries
        seq -= np.repeat(self.starts[:-1].astype(np.int32), self.counts)
        return seq

    def field(self, name: Field, positions: Positions | None = None) -> npt.NDArray[Any]:
        if name in {"rank", "seq"}:
            whole = self.rank if name == "rank" else self.seq
            return whole if positions is None else whole[positions]
        return super().field(name, positions)

    def position(self, rank: npt.NDArray[Any], seq: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The positions of events ``(rank[i], seq[i])`` (which must be held)."""
        return self.starts[np.asarray(rank, dtype=np.int64) - self.lo] + np.asarray(
            seq, dtype=np.int64)

    def _held(self, r: npt.NDArray[np.int64], s: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Which events ``(r[i], s[i])`` these arrays hold."""
        counts = np.asarray(self.counts, dtype=np.int64)
        i = r - self.lo
        ok = (i >= 0) & (i < len(counts)) & (s >= 0)
        ok[ok] = s[ok] < counts[i[ok]]
        return ok

    def at(self, name: Field, rank: npt.NDArray[Any], seq: npt.NDArray[Any],
           missing: int = -1) -> npt.NDArray[np.int64]:
        """``name`` of events ``(rank[i], seq[i])`` as 64-bit integers, ``missing``
        where the query holds no such event (a rank not in the run, a seq past
        the rank's last event): a report's events looked up at once."""
        r = np.asarray(rank, dtype=np.int64)
        s = np.asarray(seq, dtype=np.int64)
        ok = self._held(r, s)
        out = np.full(len(r), missing, dtype=np.int64)
        out[ok] = self.field(name, self.position(r[ok], s[ok]))
        return out

    def partner(self, positions: Positions) -> npt.NDArray[np.int64]:
        """For each event at ``positions``: the position of its partner (a send's
        consume, a consume's send: one message), -1 when it has none (yet), is
        of another kind, or (in a chunk) its partner is not held here."""
        has, (r, s) = self.partner_fields(positions, "rank", "seq")
        r, s = r.astype(np.int64), s.astype(np.int64)
        held = has & self._held(r, s)
        return np.where(held, self.position(np.where(held, r, self.lo), np.where(held, s, 0)),
                        -1)

    def partner_fields(self, positions: Positions, *names: Field
                       ) -> tuple[npt.NDArray[np.bool_], list[npt.NDArray[Any]]]:
        """Which events at ``positions`` have a partner (a send's consume, a
        consume's send), wherever it is held, and ``names`` of those partners
        (each array in its column's type; 0 where there is none)."""
        store = self._store
        pg = store.c_partner.view()[self.indices[positions]]
        has: npt.NDArray[np.bool_] = pg >= 0
        safe = np.where(has, pg, 0)
        out = []
        for name in names:
            a = _column(store, name).view()[safe]
            a[~has] = 0
            out.append(a)
        return has, out

    def with_extra(self, name: str, value: object) -> npt.NDArray[np.int64]:
        """The positions, in order, of the events whose extra field ``name`` is
        ``value`` (``mode == "buffered"`` of a buffered send): one pass over the
        sparse extras, none over the events (:func:`extra_events`, whose result a
        pass over chunks computes once and gives to :meth:`held_events`)."""
        return self.held_events(*extra_events(self._store, name, value))

    def held_events(self, rank: npt.NDArray[Any], seq: npt.NDArray[Any]
                    ) -> npt.NDArray[np.int64]:
        """The positions, in order, of the events ``(rank[i], seq[i])`` these
        arrays hold (the others are left out)."""
        r, s = np.asarray(rank, dtype=np.int64), np.asarray(seq, dtype=np.int64)
        held = self._held(r, s)
        return np.sort(self.position(r[held], s[held]))


def extra_events(store: EventStore, name: str, value: object
                 ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """``(rank, seq)`` arrays of the events whose extra field ``name`` is ``value``
    (in global index order)."""
    g = np.asarray(store.extras.with_field(name, value), dtype=np.int64)
    return store.c_rank.view()[g], store.c_seq.view()[g]


def rank_chunks(store: EventStore, events: int) -> Iterator[RunArrays]:
    """The run's events as :class:`RunArrays` of consecutive ranks, in rank order,
    each of about ``events`` events or fewer (but a rank is never split: a
    rank with more is a chunk of its own)."""
    n = store.nprocs
    lo = 0
    while lo < n:
        hi, total = lo + 1, store.count(lo)
        while hi < n and total + store.count(hi) <= events:
            total += store.count(hi)
            hi += 1
        yield RunArrays(store, lo, hi)
        lo = hi


#: Queries :func:`events_at` looks up at a time (its temporaries are a piece's).
QUERY_CHUNK = 1 << 16


def events_at(store: EventStore, rank: npt.NDArray[Any], seq: npt.NDArray[Any]
              ) -> tuple[EventArrays, npt.NDArray[np.bool_]]:
    """The events ``(rank[i], seq[i])`` the store holds, in that order, and which
    ``i`` those are (a mask: a rank not in the run, or a seq past the rank's
    last event, is not held): many events looked up at once, without the whole
    run's arrays (:data:`QUERY_CHUNK` queries at a time)."""
    n = len(rank)
    counts = np.array([store.count(q) for q in range(store.nprocs)], dtype=np.int64)
    held_all = np.zeros(n, dtype=bool)
    parts: list[npt.NDArray[np.int64]] = []
    for lo in range(0, n, QUERY_CHUNK):
        r = np.asarray(rank[lo:lo + QUERY_CHUNK], dtype=np.int64)
        s = np.asarray(seq[lo:lo + QUERY_CHUNK], dtype=np.int64)
        held = (r >= 0) & (r < len(counts)) & (s >= 0)
        held[held] = s[held] < counts[r[held]]
        held_all[lo:lo + len(held)] = held
        r, s = r[held], s[held]
        order = np.argsort(r, kind="stable")
        bounds = np.searchsorted(r[order], np.arange(len(counts) + 1))
        g = np.empty(len(r), dtype=np.int64)
        for q in np.flatnonzero(np.diff(bounds)).tolist():
            rows = order[bounds[q]:bounds[q + 1]]
            g[rows] = np.frombuffer(store.by_rank[q], dtype=np.int64)[s[rows]]
        parts.append(g)
    found = parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0, np.int64), *parts])
    return EventArrays(store, found), held_all


def rank_arrays(store: EventStore, rank: int, start: int = 0,
                stop: int | None = None) -> EventArrays:
    """Events ``start:stop`` of ``rank`` (a ``seq`` range, as a slice clips it),
    in ``seq`` order: position ``i`` is event ``(rank, start + i)``."""
    # a copy: a NumPy view would pin the rank's array, which then could not grow
    return EventArrays(store, np.frombuffer(store.by_rank[rank], dtype=np.int64)[start:stop].copy())


def run_arrays(store: EventStore) -> RunArrays:
    """Every event held, rank-major: position ``starts[r] + s`` is event ``(r, s)``."""
    return RunArrays(store)
