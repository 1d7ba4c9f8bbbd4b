"""Naming the send of a buffer message's consume by the channel rule (no I/O).

A buffer message (``Send``/``Recv`` and friends) carries no piggyback: the
trace library sends the program's bytes untouched (a second, header message
per send would double the cost of a small message).  Instead, as
:mod:`mpvis.protocol.compact` says, the sender marks the send record
``"buf": true`` and the receiver's consume carries ``"chan": k``: the message
was the ``k``-th buffer message (from 0) the receiver consumed on its channel
(same sender, receiver, communicator and tag).  MPI's non-overtaking rule
makes a channel FIFO (receives take a channel's messages in posting order,
the messages in send order), so the consume took the channel's ``k``-th buffer
send.  :class:`SendResolver` runs in the central process before the journal:
it fills ``send`` in, strips ``chan`` and ``buf``, and holds back a rank's
records (in ``seq`` order) while its first unresolved consume waits for the
sender's records, which arrive within one flush period of the sender.

Exactness: the receiver records ``chan`` only when completions on the channel
were observed in posting order (the trace library checks that no
earlier-posted receive was still pending that could take the same message;
otherwise the consume has no ``chan``, and the reader infers ``send`` by the
same rule, exactly as the spec says).  A message sent by a call the trace
library does not wrap (``Isendrecv``, partitioned sends) is invisible to the
count, so later consumes of its channel would name an earlier send: programs
mixing those with traced sends on one channel get wrong ``send`` fields on
that channel.  If the sender ended (or crashed) without the send record, the
consume is released without ``send``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["SendResolver", "resolve_sends"]

from mpvis.protocol.record_types import Record

Channel = tuple[Any, Any, Any, Any]  # (sender, receiver, comm, tag)


class SendResolver:
    """Fills ``send`` of consumes with ``chan`` (see the module docstring).

    :meth:`feed` takes records in arrival order (each rank's in ``seq``
    order) and returns those that may go on, each rank's still in ``seq``
    order.  Records it does not understand pass through untouched; checking
    them is the journal's job.
    """

    def __init__(self) -> None:
        self._sends: dict[Channel, list[Any]] = {}  # channel -> [ordinal of first, seq, ...]
        self._held: dict[Any, deque[Record]] = {}
        self._waiting: dict[Channel, set[Any]] = {}
        self._ended: set[Any] = set()

    @property
    def held_ranks(self) -> set[Any]:
        """Ranks whose records are held back."""
        return set(self._held)

    def holds(self, rank: Any) -> bool:
        """Whether records of ``rank`` are held back."""
        return rank in self._held

    def held(self) -> int:
        """How many records are held back."""
        return sum(len(q) for q in self._held.values())

    def feed(self, records: list[Any]) -> list[Any]:
        """Register sends, resolve consumes; return the records that may go on."""
        out: list[Any] = []
        woken: set[Channel] = set()
        for rec in records:
            if not isinstance(rec, dict):
                out.append(rec)
                continue
            rank = rec.get("rank")
            if rec.get("kind") == "send" and rec.pop("buf", False):
                chan = (rank, rec.get("dest"), rec.get("comm", 0), rec.get("tag"))
                self._sends.setdefault(chan, [0]).append(rec.get("seq"))
                if chan in self._waiting:
                    woken.add(chan)
            q = self._held.get(rank)
            if q is not None:
                q.append(rec)
            elif "chan" in rec and not self._resolve(rec):
                self._hold(rank, rec)
            else:
                out.append(rec)
        for chan in woken:
            self._wake(chan, out)
        return out

    def feed_plain(self, rank: Any, records: list[Any]) -> list[Any]:
        """:meth:`feed` for records of ``rank`` that the caller knows hold no buffer
        send and no consume with ``chan`` (a ``COMPACT`` batch without those
        flags): they go on as they are, or wait behind the rank's held records."""
        q = self._held.get(rank)
        if q is None:
            return records
        q.extend(records)
        return []

    def sender_ended(self, rank: Any) -> list[Any]:
        """``rank`` will send no more records: consumes waiting for it go on without ``send``."""
        self._ended.add(rank)
        out: list[Any] = []
        for chan in [c for c in self._waiting if c[0] == rank]:
            self._wake(chan, out)
        return out

    def flush(self) -> list[Any]:
        """The end of the run: release every held record (unresolved: without ``send``)."""
        out: list[Any] = []
        for q in self._held.values():
            for rec in q:
                if "chan" in rec and not self._resolve(rec):
                    del rec["chan"]
                out.append(rec)
        self._held.clear()
        self._waiting.clear()
        return out

    def _hold(self, rank: Any, rec: Record) -> None:
        self._held[rank] = deque([rec])
        self._waiting.setdefault(_channel_of(rec), set()).add(rank)

    def _wake(self, chan: Channel, out: list[Any]) -> None:
        for rank in self._waiting.pop(chan, ()):
            q = self._held.pop(rank)
            while q:
                rec = q[0]
                if "chan" in rec and not self._resolve(rec):
                    self._held[rank] = q
                    self._waiting.setdefault(_channel_of(rec), set()).add(rank)
                    break
                out.append(q.popleft())

    def _resolve(self, rec: Record) -> bool:
        """Fill ``send`` of ``rec`` if its send is known; whether ``rec`` may go on."""
        chan = _channel_of(rec)
        k = rec["chan"]
        entry = self._sends.get(chan)
        if entry is not None and type(k) is int:
            i = k - entry[0] + 1
            if 1 <= i < len(entry):
                rec["send"] = [chan[0], entry[i]]
                del rec["chan"]
                del entry[1 : i + 1]  # the channel's earlier sends can no longer match
                entry[0] = k + 1
                return True
            if i < 1:  # an ordinal already taken: not a consume of this channel's sends
                del rec["chan"]
                return True
        if chan[0] in self._ended or type(k) is not int:
            del rec["chan"]
            return True
        return False


def _channel_of(rec: Record) -> Channel:
    return (rec.get("src"), rec.get("rank"), rec.get("comm", 0), rec.get("tag"))


def resolve_sends(records: list[Any]) -> list[Any]:
    """A whole trace's events (any order, each rank's in ``seq`` order), resolved.

    For traces written rank by rank (``MPVIS_TRACE_DIR``), where no central
    process saw every rank: the same rule, applied after the fact.
    """
    resolver = SendResolver()
    out = resolver.feed(records)
    return out + resolver.flush()
