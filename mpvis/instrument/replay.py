"""Replay mode: collate the race record, force the traced deliveries, check the run.

Netzer and Miller, section 4.2: only the traced (racing) deliveries need to be
enforced; untraced messages reach the right receive by themselves (Theorem 1).
The record is kept per receiver, but forcing needs the *sender* to tag a
traced message, so the records are first collated by sender (:func:`plan_for`).

How the tagging and buffering of section 4.2 map onto MPI here
(:mod:`mpvis.instrument.replay_route` does the MPI side):

* a traced message is sent on a *replay channel*, a duplicate of
  ``COMM_WORLD`` that carries nothing else, so no untraced receive can take it
  (the paper's tag);
* the traced receive is posted on that channel with the recorded source and
  tag (the "source/tag-specific receive"); the channel is FIFO per source and
  tag, and traced receives post in the recorded order, so it takes exactly the
  recorded message; a traced message that arrives early waits in MPI's
  unexpected-message queue (the paper's buffer);
* every other receive is posted unchanged.

:class:`ReplayHooks` also checks the replay while it runs: a forced receive
must get the recorded ``[src, send]``, and the chain of consumed messages must
equal the recorded one at every ``check`` line and at the end
(:mod:`mpvis.instrument.record_file`).  The first difference is reported with
the receive where it was seen.

A *flip* (``RANK:SEQ``) replays up to one race and resolves it the other way:
the earlier receive ``PrevRecv`` of the race is forced to take the traced
message instead of its own.  Everything before the flipped receive must stay
as recorded, so every traced message keeps its route on the channel, even the
ones whose recorded receive comes after the flip: on ``COMM_WORLD`` such a
message (sent concurrently with the receives before the flip, which is why it
was traced) could be taken by one of those unforced receives.  The message the
flipped receive took in the recording moves to the channel as well.  World then
carries exactly the untraced messages of the recording, so the receives before
the flip get what they got (Theorem 1).  From the flipped receive on, that
rank's deliveries are no longer pinned: a receive that the recording forced is
still posted on the channel, with the program's own source and tag (*unpinned*),
so the channel keeps one receive for each message it carries.  Every rank that
this receive happened before (known at run time: a flag travels on every
message) is *free* from then on: its blocking receives take the first matching
message from either communicator, and a send still uses the channel when it
goes where the recorded send of that event went, so that a rank the flip has
not reached yet gets what it waits for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpvis.instrument.hooks import MessageHooks
from mpvis.instrument.record_file import RaceEntry, RankRecord, ReplayRecordError, chain

__all__ = [
    "Flip", "ReplayHooks", "ReplayPlan", "find_flip", "find_order", "parse_anys", "parse_order",
    "plan_for",
]

#: Where a receive is posted (see :meth:`ReplayHooks.route_recv`).
USER, CHANNEL, POLL = 0, 1, 2
#: A routed send whose recorded tag is not known (the flipped receive's own message).
ANY_TAG = -1
#: Replayed consumes kept to show the window in which a chain check failed.
_WINDOW = 16


@dataclass(frozen=True, slots=True)
class Flip:
    """Receive ``recv`` of ``rank`` takes ``[src, send]`` (tag ``tag``) instead.

    An *order* (:func:`find_order`) forces several receives of one rank at
    once: ``recv`` is the first, ``more`` the later ones, each
    ``(recv, src, tag, send)``, and ``more_was`` the messages they took in
    the recording.  The rank stays pinned until the last of them (:attr:`last`).
    """

    rank: int
    recv: int
    src: int
    tag: int
    send: int
    was: tuple[int, int]  # the message it took in the recording
    more: tuple[tuple[int, int, int, int], ...] = ()
    more_was: tuple[tuple[int, int], ...] = ()

    @property
    def last(self) -> int:
        """The last receive this flip or order forces."""
        return max([self.recv, *(m[0] for m in self.more)])


@dataclass(slots=True)
class ReplayPlan:
    """What one rank forces and checks (section 4.2's collated trace file)."""

    rank: int
    forced: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # recv -> src,tag,send
    routed_sends: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> dest, tag
    unpinned: set[int] = field(default_factory=set)  # flipped run: channel, own source
    checks: dict[int, tuple[int, int]] = field(default_factory=dict)  # n -> (recv, digest)
    anys: dict[int, int] = field(default_factory=dict)  # Waitany start seq -> index
    consumes: int = 0
    digest: int = 0
    flip: Flip | None = None
    unforceable: int = 0  # races on communicators other than COMM_WORLD
    any_changes: dict[int, int] = field(default_factory=dict)  # Waitany start -> other index


def find_flip(records: list[RankRecord], rank: int, seq: int) -> Flip:
    """The flip named by ``RANK:SEQ``: either receive of a recorded race.

    ``SEQ`` names a receive.  If it is the earlier receive (``prev``) of a
    recorded race, it takes that race's traced message instead of its own;
    otherwise, if it is the traced receive of a race, that race is reversed:
    its earlier receive takes this receive's message.
    """
    if not 0 <= rank < len(records):
        raise ReplayRecordError(f"rank {rank} is not in the record ({len(records)} ranks)")
    races = [e for e in records[rank].races if e.prev is not None and e.comm == 0]
    hit: RaceEntry | None = next((e for e in races if e.prev and e.prev[0] == seq), None)
    if hit is None:
        hit = next((e for e in races if e.recv == seq), None)
    if hit is None or hit.prev is None:
        known = ", ".join(f"{rank}:{e.prev[0]}/{e.recv}" for e in races if e.prev) or "none"
        raise ReplayRecordError(
            f"{rank}:{seq} is not a receive of a recorded race "
            f"(races of rank {rank}, earlier/later receive: {known})"
        )
    return Flip(rank, hit.prev[0], hit.src, hit.tag, hit.send, (hit.prev[1], hit.prev[2]))


def parse_order(text: str) -> tuple[int, list[tuple[int, int, int]]]:
    """``RANK:SEQ=SRC:SEND[,SEQ=SRC:SEND...]`` as ``(rank, [(seq, src, send), ...])``.

    Raises ``ValueError`` naming the expected form.
    """
    form = "an order is RANK:SEQ=SRC:SEND[,SEQ=SRC:SEND...] (numbers)"
    rank_text, colon, rest = text.strip().partition(":")
    if not colon or not rank_text.isdigit():
        raise ValueError(f"{form}, not {text!r}")
    moves: list[tuple[int, int, int]] = []
    for item in rest.split(","):
        seq, eq, msg = item.strip().partition("=")
        src, colon2, send = msg.partition(":")
        if not (eq and colon2 and seq.isdigit() and src.isdigit() and send.isdigit()):
            raise ValueError(f"{form}, not {text!r}")
        moves.append((int(seq), int(src), int(send)))
    if len({m[0] for m in moves}) != len(moves):
        raise ValueError(f"an order names each receive once: {text!r}")
    return int(rank_text), moves


def find_order(records: list[RankRecord], rank: int, moves: list[tuple[int, int, int]]) -> Flip:
    """The order ``moves`` (receive ``seq`` of ``rank`` takes ``[src, send]``) as a :class:`Flip`.

    Every receive must be one of a recorded race on ``COMM_WORLD`` (the
    receives the record knows the message of); a message's tag comes from
    the record when it was traced, else any tag on the replay channel.
    """
    if not 0 <= rank < len(records):
        raise ReplayRecordError(f"rank {rank} is not in the record ({len(records)} ranks)")
    took: dict[int, tuple[int, int]] = {}
    for e in records[rank].races:
        if e.comm == 0:
            took[e.recv] = (e.src, e.send)
            if e.prev is not None:
                took.setdefault(e.prev[0], (e.prev[1], e.prev[2]))
    tags = {(e.src, e.send): e.tag for rec in records for e in rec.races if e.comm == 0}
    for seq, _, _ in moves:
        if seq not in took:
            known = ", ".join(str(y) for y in sorted(took)) or "none"
            raise ReplayRecordError(f"{rank}:{seq} is not a receive of a recorded race "
                              f"(racing receives of rank {rank}: {known})")
    ordered = sorted(moves)
    full = [(y, s, tags.get((s, x), ANY_TAG), x) for y, s, x in ordered]
    (y0, s0, t0, x0), rest = full[0], full[1:]
    return Flip(rank, y0, s0, t0, x0, took[y0], tuple(rest), tuple(took[m[0]] for m in rest))


def parse_anys(text: str) -> tuple[int, dict[int, int]]:
    """``RANK:AT=INDEX[,AT=INDEX...]`` as ``(rank, {at: index})`` (``ValueError`` otherwise).

    ``AT`` is the event a recorded ``Waitany`` starts at (the record's ``any``
    lines), ``INDEX`` the request it must return instead.
    """
    form = "a completion order is RANK:AT=INDEX[,AT=INDEX...] (numbers)"
    rank_text, colon, rest = text.strip().partition(":")
    if not colon or not rank_text.isdigit():
        raise ValueError(f"{form}, not {text!r}")
    out: dict[int, int] = {}
    for item in rest.split(","):
        at, eq, index = item.strip().partition("=")
        if not (eq and at.isdigit() and index.isdigit()) or int(at) in out:
            raise ValueError(f"{form}, not {text!r}")
        out[int(at)] = int(index)
    return int(rank_text), out


def plan_for(records: list[RankRecord], rank: int, flip: Flip | None = None,
             anys: tuple[int, dict[int, int]] | None = None) -> ReplayPlan:
    """Collate ``records`` (one per rank) into the plan of ``rank``.

    ``anys`` (``mpvis replay --anys``): ``(rank, {at: index})``, recorded
    ``Waitany`` calls of that rank made to return other requests; the
    deliveries stay as recorded, only the order the program sees them in
    changes.
    """
    mine = records[rank]
    plan = ReplayPlan(rank, consumes=mine.consumes, digest=mine.digest, flip=flip)
    for e in mine.races:
        if e.comm == 0:
            plan.forced[e.recv] = (e.src, e.tag, e.send)
        else:
            plan.unforceable += 1
    for receiver, other in enumerate(records):
        for e in other.races:
            if e.comm == 0 and e.src == rank:
                plan.routed_sends[e.send] = (receiver, e.tag)
    plan.checks = {n: (recv, digest) for n, recv, digest in mine.checks}
    plan.anys = dict(mine.anys)
    if anys is not None and anys[0] == rank:
        unknown = sorted(set(anys[1]) - set(plan.anys))
        if unknown:
            raise ReplayRecordError(f"{rank}:{unknown[0]} is not a recorded Waitany of rank {rank} "
                              f"(recorded: {', '.join(map(str, sorted(plan.anys))) or 'none'})")
        plan.any_changes = dict(anys[1])
        plan.anys.update(anys[1])
    if flip is not None:
        if flip.src == rank:
            plan.routed_sends[flip.send] = (flip.rank, flip.tag)
        if flip.was[0] == rank:
            # Off COMM_WORLD too: no receive before the flip took it when recorded.
            plan.routed_sends.setdefault(flip.was[1], (flip.rank, ANY_TAG))
        for _, src, tag, send in flip.more:
            if src == rank:
                plan.routed_sends[send] = (flip.rank, tag)
        for src, send in flip.more_was:
            if src == rank:
                plan.routed_sends.setdefault(send, (flip.rank, ANY_TAG))
        if flip.rank == rank:
            moved = {m[0] for m in flip.more}
            plan.unpinned = {y for y in plan.forced if y > flip.recv and y not in moved}
            plan.forced = {y: f for y, f in plan.forced.items() if y < flip.recv}
            plan.forced[flip.recv] = (flip.src, flip.tag, flip.send)
            for y, src, tag, send in flip.more:
                plan.forced[y] = (src, tag, send)
    return plan


class ReplayHooks(MessageHooks):
    """Replay mode in one rank: routing decisions, forcing, on-line checks."""

    def __init__(self, plan: ReplayPlan) -> None:
        self.plan = plan
        self.flipping = plan.flip is not None or bool(plan.any_changes)
        self.free = False  # the flipped receive happened before this point
        self.reordered = False  # this rank passed the first receive of its flip or order
        self.next_force: tuple[int, int] | None = None
        self._posted: dict[int, tuple[int, int, int]] = {}
        self.consumes = 0
        self.digest = 0
        self.forced_ok = 0
        self.divergence: str | None = None
        self._window: list[tuple[int, int, int]] = []

    # -- routing (asked by replay_route before each call) -------------------------

    def route_send(self, seq: int, dest: int, tag: int) -> bool:
        """Whether the send about to be event ``seq`` goes on the replay channel.

        Only if it goes where the recorded one went: after a flip a free rank's
        event ``seq`` may be another message.
        """
        routed = self.plan.routed_sends.get(seq)
        return routed is not None and routed[0] == dest and routed[1] in (tag, ANY_TAG)

    def recorded_any(self, seq: int) -> int | None:
        """The request the ``Waitany`` starting at event ``seq`` must return, if forced."""
        if seq in self.plan.any_changes:
            self.reordered = True  # the rank sees its completions in another order now
        return None if self.free else self.plan.anys.get(seq)

    def route_recv(self, seq: int, blocking: bool) -> int:
        """``USER``, ``CHANNEL`` (forced) or ``POLL`` for the receive about to be ``seq``."""
        if self.free and blocking:
            return POLL
        forced = self.plan.forced.get(seq)
        if forced is None:
            return CHANNEL if seq in self.plan.unpinned else USER
        self._posted[seq] = forced
        return CHANNEL

    # -- hooks ------------------------------------------------------------------------

    def outgoing(self, comm: int, dest: int, tag: int, send_seq: int) -> Any:
        return [send_seq, 1 if self.free else 0]

    def force_source(self, comm: int, recv_seq: int, src: int, tag: int) -> tuple[int, int]:
        nf = self.next_force
        if nf is not None:
            self.next_force = None
            return nf
        forced = self._posted.get(recv_seq)
        return (src, tag) if forced is None or comm != 0 else (forced[0], forced[1])

    def incoming(  # noqa: PLR0917 (the hook's signature)
        self, comm: int, recv_seq: int, src: int, tag: int, send_seq: int | None, extra: Any
    ) -> None:
        if not isinstance(extra, list):
            return
        sseq, sender_free = extra[0], extra[1]
        forced = self._posted.pop(recv_seq, None)
        flip = self.plan.flip
        if forced is not None and not (self.flipping and self.free):
            if (src, sseq) == (forced[0], forced[2]):
                self.forced_ok += 1
            else:
                self._diverge(
                    f"receive {self.plan.rank}:{recv_seq} took message [{src}, {sseq}]"
                    f" instead of the recorded [{forced[0]}, {forced[2]}]"
                )
        self.consumes += 1
        self.digest = chain(self.digest, src, sseq)
        if sender_free or (
            flip is not None and flip.rank == self.plan.rank and recv_seq == flip.last
        ):
            self.free = True
        if flip is not None and flip.rank == self.plan.rank and recv_seq == flip.recv:
            self.reordered = True
        if not self.free and not self.reordered:
            self._window.append((recv_seq, src, sseq))
            del self._window[:-_WINDOW]
            check = self.plan.checks.get(self.consumes)
            if check is not None and check[1] != self.digest:
                self._diverge(
                    f"rank {self.plan.rank}: the consumes up to #{self.consumes} "
                    f"(receive {self.plan.rank}:{check[0]}) differ from the "
                    f"recording; replayed: {self._window_text()}"
                )

    def _window_text(self) -> str:
        return ", ".join(f"{y}<-[{s}, {x}]" for y, s, x in self._window)

    def _diverge(self, text: str) -> None:
        if self.divergence is None:
            self.divergence = text

    def verdict(self) -> dict[str, Any]:
        """This rank's result, once the program has finished."""
        p = self.plan
        if (
            not self.flipping
            and self.divergence is None
            and (self.consumes, self.digest) != (p.consumes, p.digest)
        ):
            self._diverge(
                f"rank {p.rank}: {self.consumes} messages consumed (recorded "
                f"{p.consumes}) or a different order after the last check; "
                f"last replayed: {self._window_text()}"
            )
        return {
            "rank": p.rank,
            "consumes": self.consumes,
            "digest": self.digest,
            "recorded_consumes": p.consumes,
            "recorded_digest": p.digest,
            "forced": len(p.forced),
            "forced_ok": self.forced_ok,
            "unforceable": p.unforceable,
            "free": self.free,
            "divergence": self.divergence,
        }

    def write_verdict(self, directory: Path) -> None:
        """Write :meth:`verdict` to ``DIR/rank-<r>.json``."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"rank-{self.plan.rank}.json").write_text(json.dumps(self.verdict()))
