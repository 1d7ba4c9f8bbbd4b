"""The functional model's classes: Process, Event, Consume, Message.

MPVisualizer's functional model (``mpvisualizer-race-detection.txt``
section 2) is a set of processes, events and messages.  Here they are thin
views over the model's columns (:class:`~mpvis.model.store.EventStore`): each
holds only the model and an index (``__slots__``, no copy of any field), so
making one costs about as much as a tuple and the object API survives
millions of events.  A view reads the columns when asked, so it always shows
the model as it is now (a live run's consume that arrives later shows up in
its send's :attr:`Message.consume`).

There is one way to get them: from the model
(:meth:`ModelManager.event(rank, seq) <mpvis.model.manager.ModelManager.event>`,
``model.event_at(index)``, ``model.message(rank, seq)``, ``model.processes``,
``model.events``, ``model.messages``, ``process.events``) or from
:func:`mpvis.open`'s :class:`~mpvis.api.Run`, which hands out the same views.

Contract of every view: two views of the same thing in the same model are
equal and hash alike; a view never changes the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, overload

import numpy.typing as npt

from mpvis.model.status import EAGER_BYTES
from mpvis.model.store import EventStore
from mpvis.protocol import records as R
from mpvis.protocol.codes import F_BLOCKING, F_SYNC
from mpvis.protocol.record_types import EventRecord

__all__ = ["EAGER_BYTES", "Consume", "Event", "Message", "ModelView", "Process", "Views",
           "event_at", "rebuild_record"]

Key = tuple[int, int]

_K_SEND, _K_RECV, _K_CONSUME = (R.KIND_CODE[k] for k in (R.SEND, R.RECV, R.CONSUME))


class ModelView(Protocol):
    """What the views read of a model: :class:`~mpvis.model.manager.ModelManager`
    provides it (the views import no manager, so there is no import cycle)."""

    @property
    def store(self) -> EventStore: ...
    def vector_clock(self, rank: int, seq: int) -> list[int]: ...
    def happened_before(self, a: Key, b: Key) -> bool: ...
    def status(self, rank: int) -> str: ...
    def where(self, rank: int) -> int | None: ...


def rebuild_record(m: ModelView, g: int) -> EventRecord:
    """The trace record of global event ``g``, every field included."""
    return m.store.event_record(g)


class Event:
    """One event of the run: a view over the model's columns.

    ``index`` is the event's global index (arrival order) in the model.
    """

    __slots__ = ("index", "model")

    def __init__(self, model: ModelView, index: int) -> None:
        self.model = model
        self.index = index

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.rank}:{self.seq} {self.kind}>"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Event) and other.model is self.model
                and other.index == self.index)

    def __hash__(self) -> int:
        return hash((id(self.model), self.index))

    @property
    def time(self) -> float | None:
        """The record's ``t`` (seconds), or None when the record had none."""
        t = float(self.model.store.c_t[self.index])
        return None if math.isnan(t) else t

    @property
    def rank(self) -> int:
        return int(self.model.store.c_rank[self.index])

    @property
    def seq(self) -> int:
        return int(self.model.store.c_seq[self.index])

    @property
    def kind(self) -> str:
        """The record's ``kind`` (``send``, ``recv``, ``consume``, ``coll``...)."""
        kind: str = R.EVENT_KINDS[self.model.store.c_kind[self.index]]
        return kind

    @property
    def key(self) -> Key:
        """``(rank, seq)``."""
        s = self.model.store
        return int(s.c_rank[self.index]), int(s.c_seq[self.index])

    @property
    def site(self) -> str | None:
        """The call site ``"file:line"``, or None."""
        sid = self.model.store.c_site[self.index]
        return None if sid < 0 else self.model.store.sites[int(sid)]

    @property
    def comm(self) -> int:
        """The communicator (0 when the record named none)."""
        return int(self.model.store.c_comm[self.index])

    @property
    def peer(self) -> int | None:
        """A send's ``dest``, a receive's or consume's ``src`` (-1: any), else None."""
        s = self.model.store
        return int(s.c_peer[self.index]) if s.c_kind[self.index] in _P2P else None

    @property
    def tag(self) -> int | None:
        """The tag of a send, receive (-1: any) or consume, else None."""
        s = self.model.store
        return int(s.c_tag[self.index]) if s.c_kind[self.index] in _P2P else None

    @property
    def blocking(self) -> bool:
        """A blocking send or receive (False for any other kind)."""
        s = self.model.store
        g = self.index
        return s.c_kind[g] in (_K_SEND, _K_RECV) and bool(s.c_flags[g] & F_BLOCKING)

    @property
    def sync(self) -> bool:
        """A synchronous send (False for any other kind)."""
        s = self.model.store
        return s.c_kind[self.index] == _K_SEND and bool(s.c_flags[self.index] & F_SYNC)

    @property
    def request(self) -> int | None:
        """The request of a nonblocking send or receive, else None."""
        s = self.model.store
        req = int(s.c_req[self.index])
        return req if req != -1 and s.c_kind[self.index] in (_K_SEND, _K_RECV) else None

    @property
    def size(self) -> int | None:
        """A send's ``size`` in bytes, when recorded, else None."""
        s = self.model.store
        v = int(s.c_size[self.index])
        return v if v >= 0 and s.c_kind[self.index] == _K_SEND else None

    @property
    def fields(self) -> EventRecord:
        """Every field, as in the trace record (typed by its kind: narrow by ``["kind"]``)."""
        return self.model.store.event_record(self.index)

    @property
    def partner(self) -> Event | None:
        """The consume of a send, or the send of a consume (None while unknown)."""
        pg = self.model.store.c_partner[self.index]
        return None if pg < 0 else event_at(self.model, int(pg))

    @property
    def message(self) -> Message | None:
        """The message a send sent, or a consume delivered (None while its send
        is unknown, and for other kinds)."""
        s = self.model.store
        code = s.c_kind[self.index]
        if code == _K_SEND:
            return Message(self.model, self.index)
        if code == _K_CONSUME:
            pg = s.c_partner[self.index]
            return None if pg < 0 else Message(self.model, int(pg))
        return None

    @property
    def consume(self) -> Consume | None:
        """For a receive, its consume (None until it arrives, and for other kinds)."""
        s = self.model.store
        if s.c_kind[self.index] != _K_RECV:
            return None
        c = s.c_ref[self.index]
        return None if c < 0 else Consume(self.model, s.gidx(self.rank, int(c)))

    @property
    def lamport(self) -> int | None:
        """Lamport clock (None until the event is causally processed)."""
        v = int(self.model.store.c_lamport[self.index])
        return None if v < 0 else v

    @property
    def vector_clock(self) -> list[int]:
        return self.model.vector_clock(self.rank, self.seq)

    @property
    def is_wildcard_recv(self) -> bool:
        s = self.model.store
        return bool(s.c_kind[self.index] == _K_RECV and (
            s.c_peer[self.index] == -1 or s.c_tag[self.index] == -1))

    @property
    def process(self) -> Process:
        """The rank's :class:`Process`."""
        return Process(self.model, self.rank)

    def happened_before(self, other: Event) -> bool:
        """Lamport's relation; both events must be causally processed."""
        return self.model.happened_before(self.key, other.key)


_P2P = frozenset((_K_SEND, _K_RECV, _K_CONSUME))


class Consume(Event):
    """A consume event: the delivery of a message to the program."""

    __slots__ = ()

    @property
    def recv(self) -> Event:
        """The receive this consume completes."""
        s = self.model.store
        return Event(self.model, s.gidx(self.rank, int(s.c_ref[self.index])))

    @property
    def send(self) -> Event | None:
        """The send of the consumed message (None while unknown)."""
        return self.partner


class Message:
    """A message: its send and, once known, its consume (a view keyed by the
    send's global index)."""

    __slots__ = ("index", "model")

    def __init__(self, model: ModelView, index: int) -> None:
        self.model = model
        self.index = index

    def __repr__(self) -> str:
        c = self.consume
        to = f"{c.rank}:{c.seq}" if c is not None else "not consumed"
        send = self.send
        return f"<Message {send.rank}:{send.seq} -> {to} tag {self.tag}>"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Message) and other.model is self.model
                and other.index == self.index)

    def __hash__(self) -> int:
        return hash((id(self.model), self.index, "message"))

    @property
    def send(self) -> Event:
        return Event(self.model, self.index)

    @property
    def consume(self) -> Consume | None:
        pg = self.model.store.c_partner[self.index]
        return None if pg < 0 else Consume(self.model, int(pg))

    @property
    def src(self) -> int:
        return int(self.model.store.c_rank[self.index])

    @property
    def dest(self) -> int:
        return int(self.model.store.c_peer[self.index])

    @property
    def tag(self) -> int:
        return int(self.model.store.c_tag[self.index])

    @property
    def comm(self) -> int:
        return int(self.model.store.c_comm[self.index])

    @property
    def size(self) -> int | None:
        """Bytes, when the send recorded them."""
        v = int(self.model.store.c_size[self.index])
        return None if v < 0 else v


class Process:
    """One rank of the run."""

    __slots__ = ("model", "rank")

    def __init__(self, model: ModelView, rank: int) -> None:
        self.model = model
        self.rank = rank

    def __repr__(self) -> str:
        at = self.stopped_at
        where = "" if at is None else f" at {self.rank}:{at}"
        return f"<Process {self.rank} {self.status}{where}, {self.event_count} events>"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Process) and other.model is self.model
                and other.rank == self.rank)

    def __hash__(self) -> int:
        return hash((id(self.model), self.rank, "process"))

    @property
    def events(self) -> Views[Event]:
        """The rank's events in ``seq`` order (a lazy sequence of views)."""
        m = self.model
        return Views(m.store.by_rank[self.rank], lambda g: event_at(m, g))

    def __iter__(self) -> Iterator[Event]:
        """The rank's events in ``seq`` order."""
        return iter(self.events)

    @property
    def event_count(self) -> int:
        return len(self.model.store.by_rank[self.rank])

    def event(self, seq: int) -> Event:
        """Event ``seq`` of this rank (``IndexError`` if it has no such event)."""
        events = self.model.store.by_rank[self.rank]
        if not 0 <= seq < len(events):
            raise IndexError(f"rank {self.rank} has no event {seq}")
        return event_at(self.model, events[seq])

    @property
    def status(self) -> str:
        """``running``, ``suspended``, ``finished``, ``dead`` or ``ended``."""
        return self.model.status(self.rank)

    @property
    def stopped_at(self) -> int | None:
        """Seq of the event a suspended or dead rank stopped at."""
        return self.model.where(self.rank)

    @property
    def stopped_event(self) -> Event | None:
        """The event a suspended or dead rank stopped at (see :attr:`stopped_at`)."""
        at = self.stopped_at
        return None if at is None else self.event(at)


def event_at(m: ModelView, g: int) -> Event:
    """The view of global event ``g``: a :class:`Consume` for a consume, else an :class:`Event`."""
    if m.store.c_kind.data[g] == _K_CONSUME:
        return Consume(m, g)
    return Event(m, g)


T = TypeVar("T")


class Views(Sequence[T]):
    """A read-only sequence that makes a view per item on access.

    ``indices`` holds global event indices (any integer sequence: an
    ``array``, a NumPy array, a ``range``); nothing is built until an item is
    read, so a rank's million events cost no objects until iterated.
    """

    __slots__ = ("_indices", "_make")

    def __init__(self, indices: Sequence[int] | npt.NDArray[Any], make: Callable[[int], T]
                 ) -> None:
        self._indices = indices
        self._make = make

    @property
    def indices(self) -> Sequence[int] | npt.NDArray[Any]:
        """The global indices behind the views (for vectorised code)."""
        return self._indices

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
