"""The classes users of the model see: Process, Event, Message, Consume.

They are thin views over the manager's columns (made on demand, holding only
the manager and an index), so the object API survives millions of events.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from mpvis.protocol import records as R

if TYPE_CHECKING:
    import numpy.typing as npt

    from mpvis.model.manager import ModelManager

Record = dict[str, Any]

#: A blocking standard send smaller than this (``size`` bytes) is taken to have
#: returned at once: every common MPI sends such messages eagerly (the pip
#: MPICH up to about 8 KiB through shared memory, Open MPI's sm up to 4 KiB).
#: A larger one, or one of unknown size, whose message nobody consumed may be
#: blocked in ``MPI_Send`` until its receive is posted.
EAGER_BYTES = 4096


def rebuild_record(m: ModelManager, g: int) -> Record:
    """The trace record of global event ``g``, every field included."""
    kind = R.EVENT_KINDS[m.c_kind[g]]
    rec: Record = {"rank": int(m.c_rank[g]), "seq": int(m.c_seq[g]), "kind": kind}
    t = m.c_t[g]
    if not math.isnan(t):
        rec["t"] = t
    sid = int(m.c_site[g])
    if sid >= 0:
        rec["site"] = m.sites[sid]
    comm = int(m.c_comm[g])
    if comm:
        rec["comm"] = comm
    flags = int(m.c_flags[g])
    if kind == R.SEND:
        rec.update(dest=int(m.c_peer[g]), tag=int(m.c_tag[g]), blocking=bool(flags & 1),
                   sync=bool(flags & 2))
    elif kind == R.RECV:
        rec.update(src=int(m.c_peer[g]), tag=int(m.c_tag[g]), blocking=bool(flags & 1))
    elif kind == R.CONSUME:
        rec.update(recv=int(m.c_ref[g]), src=int(m.c_peer[g]), tag=int(m.c_tag[g]))
        pg = m.c_partner[g]
        if pg >= 0:
            rec["send"] = [int(m.c_rank[pg]), int(m.c_seq[pg])]
    req = int(m.c_req[g])
    if req != -1 and kind in (R.SEND, R.RECV):
        rec["req"] = req
    rec.update(m.extras.get(g, {}))
    return rec


def rank_status(m: ModelManager, rank: int) -> tuple[str, int | None]:
    """A rank's status and, when suspended or dead, the seq where it stopped."""
    events = m.by_rank[rank]
    last = len(events) - 1
    if rank in m.dead:
        return "dead", last if last >= 0 else None
    if m.finished[rank]:
        return "finished", None
    if last >= 0:
        g = events[last]
        code = m.c_kind[g]
        kind = R.EVENT_KINDS[code]
        flags = m.c_flags[g]
        blocked = (
            (kind == R.RECV and flags & 1 and m.c_ref[g] == -1)
            or kind in (R.COLL, R.LOCK)
            or (kind == R.SEND and flags & 1 and m.c_partner[g] == -1
                and (flags & 2 or _may_block(m, g)))
        )
        if blocked:
            return "suspended", last
    return ("ended" if m.input_ended else "running"), None


def _may_block(m: ModelManager, g: int) -> bool:
    """A blocking standard send that may not have returned (see :data:`EAGER_BYTES`)."""
    if m.extras.get(g, {}).get("mode") == "buffered":
        return False
    size = int(m.c_size[g])
    return size < 0 or size >= EAGER_BYTES


@dataclass(frozen=True, repr=False)
class Event:
    """One event of the run: a view over the model's columns.

    ``index`` is the event's global index (arrival order) in the model.  Two
    views of the same event of the same model compare equal.
    """

    model: ModelManager
    index: int

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.rank}:{self.seq} {self.kind}>"

    @property
    def time(self) -> float | None:
        """The record's ``t`` (seconds), or None when the record had none."""
        t = float(self.model.c_t[self.index])
        return None if math.isnan(t) else t

    @property
    def rank(self) -> int:
        return int(self.model.c_rank[self.index])

    @property
    def seq(self) -> int:
        return int(self.model.c_seq[self.index])

    @property
    def kind(self) -> str:
        return R.EVENT_KINDS[self.model.c_kind[self.index]]

    @property
    def key(self) -> tuple[int, int]:
        return self.rank, self.seq

    @property
    def site(self) -> str | None:
        return self.model.site_of(self.rank, self.seq)

    @property
    def fields(self) -> Record:
        """Every field, as in the trace record."""
        return rebuild_record(self.model, self.index)

    @property
    def partner(self) -> Event | None:
        """The consume of a send, or the send of a consume."""
        pg = self.model.c_partner[self.index]
        return None if pg < 0 else event_at(self.model, int(pg))

    @property
    def vector_clock(self) -> list[int]:
        return self.model.vector_clock(self.rank, self.seq)

    @property
    def is_wildcard_recv(self) -> bool:
        m = self.model
        return self.kind == R.RECV and (m.c_peer[self.index] == -1 or m.c_tag[self.index] == -1)

    def happened_before(self, other: Event) -> bool:
        return self.model.happened_before(self.key, other.key)


@dataclass(frozen=True, repr=False)
class Consume(Event):
    """A consume event: the delivery of a message to the program."""

    @property
    def recv(self) -> Event:
        return Event(self.model, self.model.gidx(self.rank, int(self.model.c_ref[self.index])))


@dataclass(frozen=True, repr=False)
class Message:
    """A message: its send and, once known, its consume."""

    send: Event

    def __repr__(self) -> str:
        c = self.consume
        to = f"{c.rank}:{c.seq}" if c is not None else "not consumed"
        return f"<Message {self.send.rank}:{self.send.seq} -> {to} tag {self.tag}>"

    @property
    def consume(self) -> Consume | None:
        pg = self.send.model.c_partner[self.send.index]
        return None if pg < 0 else Consume(self.send.model, int(pg))

    @property
    def src(self) -> int:
        return self.send.rank

    @property
    def dest(self) -> int:
        return int(self.send.model.c_peer[self.send.index])

    @property
    def tag(self) -> int:
        return int(self.send.model.c_tag[self.send.index])


@dataclass(frozen=True, repr=False)
class Process:
    """One rank of the run."""

    model: ModelManager
    rank: int

    def __repr__(self) -> str:
        at = self.stopped_at
        where = "" if at is None else f" at {self.rank}:{at}"
        return f"<Process {self.rank} {self.status}{where}, {self.event_count} events>"

    @property
    def events(self) -> Views[Event]:
        """The rank's events in ``seq`` order (a lazy sequence of views)."""
        return Views(self.model.by_rank[self.rank], lambda g: event_at(self.model, g))

    @property
    def event_count(self) -> int:
        return self.model.count(self.rank)

    def event(self, seq: int) -> Event:
        return event_at(self.model, self.model.gidx(self.rank, seq))

    @property
    def status(self) -> str:
        return self.model.status(self.rank)

    @property
    def stopped_at(self) -> int | None:
        return self.model.where(self.rank)

    @property
    def stopped_event(self) -> Event | None:
        """The event a suspended or dead rank stopped at (see :attr:`stopped_at`)."""
        at = self.stopped_at
        return None if at is None else self.event(at)


def event_at(m: ModelManager, g: int) -> Event:
    """The view of global event ``g``: a :class:`Consume` for a consume, else an :class:`Event`."""
    if m.c_kind[g] == R.KIND_CODE[R.CONSUME]:
        return Consume(m, g)
    return Event(m, g)


T = TypeVar("T")


class Views(Sequence[T]):
    """A read-only sequence that makes a view per item on access.

    ``indices`` holds global event indices (any integer sequence: an
    ``array``, a NumPy array); nothing is built until an item is read, so a
    rank's million events cost no objects until iterated.
    """

    __slots__ = ("_indices", "_make")

    def __init__(self, indices: Sequence[int] | npt.NDArray[Any], make: Callable[[int], T]
                 ) -> None:
        self._indices = indices
        self._make = make

    def __len__(self) -> int:
        return len(self._indices)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> Views[T]: ...
    def __getitem__(self, i: int | slice) -> T | Views[T]:
        if isinstance(i, slice):
            return Views(self._indices[i], self._make)
        return self._make(int(self._indices[i]))

    def __iter__(self) -> Iterator[T]:
        make = self._make
        for g in self._indices:
            yield make(int(g))

    def __repr__(self) -> str:
        n = len(self)
        shown = ", ".join(repr(v) for v in self[:3])
        return f"[{shown}{', ...' if n > 3 else ''}] ({n} items)"
