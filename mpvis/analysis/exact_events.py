"""Trace records as Cypher and Leu's events (section 2.2), and the race entry.

Mapping of the trace format onto the events of the formal model (docs/exact-races.md):

* ``send`` is a PS (post-send).  A blocking send is a PS immediately followed by
  its wait: WS when ``sync`` is true, WB otherwise.  A nonblocking send's wait is
  the ``wait`` record that lists its ``req``.
* ``recv`` is a PR (post-receive); its wait (WR) is the ``consume`` record that
  names it (``consume.recv``).  For a nonblocking receive the consume records come
  just before the ``wait`` record listing its ``req``; only consumes lie between,
  and none of them is a PS or PR, so putting the WR at the consume or at the wait
  gives the same happened-before relation between posts and matches.
* A consume's ``send`` gives the match (s, r).  A request never completed (the
  trace ends) is unmatched.
* ``coll`` / ``coll_exit`` are internal events plus the spec's collective edges
  (:func:`exit_sources`); every other record is an internal event.

Two receives and a send are *compatible* (section 2.2) when the send's
destination is the receiver, the communicators are equal and the source and tag
are equal or ``-1`` (wildcard).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from mpvis.model.collectives import ALL_TO_ALL, FROM_ROOT, TO_ROOT

__all__ = [
    "ANY",
    "COMM_KINDS",
    "ExactRace",
    "exact_entry",
    "exit_sources",
    "resolve_sends",
    "tags_overlap",
]

from mpvis.protocol.record_types import Record

Key = tuple[int, int]

ANY: Final = -1
COMM_KINDS: Final = frozenset({"send", "recv", "consume", "wait", "coll", "coll_exit"})


@dataclass(frozen=True, order=True)
class ExactRace:
    """A match (s1, r1) and a send s2 that conflict (Cypher and Leu, before Theorem 2.2).

    ``rank`` received s1 with its receive ``recv`` (the ``seq`` of r1); ``s1`` and
    ``s2`` are ``(rank, seq)`` of the sends.  s2 could have been matched to r1.
    """

    rank: int
    recv: int
    s1: Key
    s2: Key

    def to_report(self) -> dict[str, Any]:
        """The ``exact`` entry of the ``mpvis check --json`` report (spec)."""
        return exact_entry(self.rank, self.recv, *self.s1, *self.s2)


def exact_entry(  # noqa: PLR0917 (the six numbers of a conflict, in their order)
    rank: int, recv: int, s1_rank: int, s1_seq: int, s2_rank: int, s2_seq: int
) -> dict[str, Any]:
    """The report entry of conflict (rank, recv, s1, s2) (:meth:`ExactRace.to_report`)."""
    return {
        "method": "exact",
        "rank": rank,
        "recvs": [recv],
        "messages": [[s1_rank, s1_seq], [s2_rank, s2_seq]],
        "verdict": "legitimate",
    }


def tags_overlap(a: int, b: int) -> bool:
    """Whether some message tag is accepted by both receive tags ``a`` and ``b``."""
    return a in (b, ANY) or b == ANY


def exit_sources(op: str, rank: int, root: int | None, entered: Iterable[int]) -> list[int]:
    """Ranks whose ``coll`` happened before ``rank``'s ``coll_exit`` (spec, happened-before).

    Barrier-like operations: every member's entry; bcast/scatter: the root's;
    reduce/gather: every member's at the root, none elsewhere; other operations:
    none.  ``entered`` lists the members whose entry has been seen (the stream
    contract guarantees every member needed is among them); ``root`` is a rank.
    """
    if op in ALL_TO_ALL:
        return list(entered)
    if root is None:
        return []
    if op in FROM_ROOT:
        return [root]
    if op in TO_ROOT and rank == root:
        return list(entered)
    return []


def resolve_sends(records: list[Record]) -> None:
    """Give every consume its ``send`` (in place), by the spec's non-overtaking rule.

    On one channel (sender, receiver, communicator, tag) the receives, in posting
    order, take the channel's sends in send order; sends named explicitly by a
    consume are skipped.  ``records`` must be sorted by rank then seq.
    """
    claimed: set[Key] = set()
    pending: dict[tuple[int, int, int, int], list[tuple[int, Record]]] = {}
    for rec in records:
        if rec.get("kind") != "consume":
            continue
        send = rec.get("send")
        if send is not None:
            claimed.add((send[0], send[1]))
        else:
            chan = (rec["src"], rec["rank"], rec.get("comm", 0), rec["tag"])
            pending.setdefault(chan, []).append((rec["recv"], rec))
    if not pending:
        return
    sends: dict[tuple[int, int, int, int], list[int]] = {}
    for rec in records:
        if rec.get("kind") == "send" and (rec["rank"], rec["seq"]) not in claimed:
            chan = (rec["rank"], rec["dest"], rec.get("comm", 0), rec["tag"])
            sends.setdefault(chan, []).append(rec["seq"])
    for chan, consumes in pending.items():
        seqs = sends.get(chan, [])
        consumes.sort(key=lambda item: item[0])
        for (_, rec), seq in zip(consumes, seqs, strict=False):
            rec["send"] = [chan[0], seq]
