"""Matching consumes to sends, explicit or by the non-overtaking rule.

A consume that names its ``send`` is matched to it.  One that does not is
matched by MPI's non-overtaking rule (spec, "consume"): on one channel (same
sender, receiver, communicator and tag), receives in posting order take the
channel's sends in send order.  Sends claimed explicitly are skipped.
"""

from __future__ import annotations

from array import array
from bisect import insort
from collections.abc import Callable

Key = tuple[int, int]
Channel = tuple[int, int, int, int]  # (src, dst, comm, tag)


class ChannelBook:
    """Per-channel sends and the consumes waiting for an inferred send."""

    def __init__(self, is_claimed: Callable[[Key], bool]) -> None:
        self._is_claimed = is_claimed
        self._sends: dict[Channel, array[int]] = {}  # seqs of the sender, in order
        self._inferred: dict[Channel, list[tuple[int, int]]] = {}  # (recv seq, consume seq)
        self._taken: dict[Channel, int] = {}
        self._next: dict[Channel, int] = {}  # sends before this index are claimed

    def add_send(self, chan: Channel, seq: int) -> None:
        arr = self._sends.get(chan)
        if arr is None:
            arr = self._sends[chan] = array("i")
        arr.append(seq)

    def add_inferred(self, chan: Channel, recv_seq: int, consume_seq: int) -> bool:
        """Queue a consume without ``send``; False if it would overtake one already matched."""
        q = self._inferred.setdefault(chan, [])
        taken = self._taken.get(chan, 0)
        if taken and q[taken - 1][0] > recv_seq:
            return False
        insort(q, (recv_seq, consume_seq))
        return True

    def resolve(self, chan: Channel) -> list[tuple[int, Key]]:
        """Match queued consumes of ``chan`` to unclaimed sends, in order.

        Returns ``(consume seq, send key)`` pairs newly matched; the caller
        records them so that ``is_claimed`` turns true for those sends.
        """
        q = self._inferred.get(chan)
        if not q:
            return []
        out = []
        taken = self._taken.get(chan, 0)
        sends = self._sends.get(chan, array("i"))
        src = chan[0]
        pos = self._next.get(chan, 0)
        while taken < len(q):
            while pos < len(sends) and self._is_claimed((src, sends[pos])):
                pos += 1
            if pos == len(sends):
                break
            key = (src, sends[pos])
            out.append((q[taken][1], key))
            taken += 1
            pos += 1
        self._taken[chan] = taken
        self._next[chan] = pos
        return out

    def pending_inferred(self) -> list[tuple[Channel, int]]:
        """Consumes still without a send: ``(channel, consume seq)``."""
        out = []
        for chan, q in self._inferred.items():
            for _, cseq in q[self._taken.get(chan, 0):]:
                out.append((chan, cseq))
        return out
