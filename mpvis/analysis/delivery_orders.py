"""The delivery orders of a rank's racing receives, decomposed into subgroups to test.

Schaeli et al. test a run by re-executing it with its messages delivered in
other admissible orders and comparing the outcome (sections 3 and 6).  In an
MPI run the deliveries that could happen in another order are those of the
racing receives (wildcard receives and any/some completions whose match
could have been another message: the record's races,
:mod:`mpvis.instrument.record`).  For one rank:

* the **deliveries** are its racing receives' messages, in the order the
  rank consumed them; an ordering assigns them, in a new order, to the same
  receives (the ``k``-th consumed receive takes the ``k``-th message);
* message ``a`` must come before message ``b`` when ``b`` could not exist
  before ``a`` was delivered: the consume of ``a`` happened before the send
  of ``b`` (the model's happened-before), or both travel on one channel
  (same sender, tag and communicator), which MPI keeps in order (the FIFO
  reduction of section 4, guaranteed by MPI's non-overtaking rule);
* its orderings are the linear extensions of that order (the paper's
  "fixed message set" assumption: the same messages are sent whatever the
  order), counted exactly by :mod:`mpvis.analysis.linext`;
* deliveries that can never trade messages (no receive of one accepts the
  other's source, tag and communicator: e.g. receives naming different tags)
  are tested apart, each class with the others as recorded; each class is
  split by **subgroup partitioning** (section 3, Figure 7): the finest series
  blocks, each tested on its own while the others keep their recorded order;
* orderings in which a receive's own source or tag refuses the message it
  is given are not generated (they are still in the counts, an upper bound).

:func:`candidate_orders` lists a subgroup's orderings worth running first:
section 5's subset (each message delivered as late as possible; each pair
``a, b`` delivered back to back as early as possible), then every other
admissible ordering, never the recorded one.

:func:`completion_groups` does the same for the order in which recorded
``Waitany`` calls see their requests complete (the record's ``any`` lines):
which request completes is nondeterministic even when every message goes to
a named receive.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mpvis.analysis.linext import bits, count_subset, series_parts
from mpvis.protocol import records as R

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

__all__ = [
    "Delivery",
    "DeliveryGroup",
    "candidate_orders",
    "completion_groups",
    "delivery_groups",
    "subset_orders",
]

Key = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Delivery:
    """Receive ``recv`` (consumed at ``consume``) took ``message`` with ``tag``."""

    recv: int
    consume: int
    message: Key
    tag: int
    comm: int
    src_arg: int  # the receive's own arguments (-1: wildcard)
    tag_arg: int
    #: in a completion group: the request index the Waitany at ``recv`` returned
    index: int = -1

    def accepts(self, other: Delivery) -> bool:
        """Could this receive take ``other``'s message (its source, tag, communicator)?"""
        return (self.comm == other.comm and self.src_arg in (-1, other.message[0])
                and self.tag_arg in (-1, other.tag))


@dataclass(frozen=True)
class DeliveryGroup:
    """A subgroup of one rank's racing deliveries (module docstring)."""

    rank: int
    deliveries: tuple[Delivery, ...]  # in the recorded (consume) order
    preds: tuple[int, ...]  # message i must be delivered after the messages in preds[i]
    orderings: int
    #: ``"order"``: racing receives (``mpvis replay --order``); ``"anys"``: the
    #: completions of recorded ``Waitany`` calls (``mpvis replay --anys``)
    kind: str = "order"

    @property
    def option(self) -> str:
        """The ``mpvis replay`` option that forces one of this group's orders."""
        return "--anys" if self.kind == "anys" else "--order"

    def order_spec(self, order: tuple[int, ...]) -> str:
        """``RANK:SEQ=SRC:SEND,...`` for ``mpvis replay --order``: receive ``k`` takes
        the message of delivery ``order[k]``; for a completion group
        ``RANK:AT=INDEX,...`` for ``--anys``: the ``k``-th Waitany returns the
        request that completed ``order[k]``'s message."""
        if self.kind == "anys":
            return f"{self.rank}:" + ",".join(
                f"{d.recv}={self.deliveries[i].index}"
                for d, i in zip(self.deliveries, order, strict=True))
        items = []
        for d, i in zip(self.deliveries, order, strict=True):
            src, send = self.deliveries[i].message
            items.append(f"{d.recv}={src}:{send}")
        return f"{self.rank}:" + ",".join(items)

    def admissible(self, order: tuple[int, ...]) -> bool:
        """A linear extension whose every receive accepts the message it is given."""
        placed = 0
        for k, i in enumerate(order):
            if self.preds[i] & placed != self.preds[i]:
                return False
            if not self.deliveries[k].accepts(self.deliveries[i]):
                return False
            placed |= 1 << i
        return placed == (1 << len(order)) - 1


def delivery_groups(m: ModelManager, racing: Mapping[int, Set[int]]) -> list[DeliveryGroup]:
    """Subgroups of every rank's racing deliveries, in rank and then recorded order.

    ``racing[r]`` are the ``seq`` of rank ``r``'s racing receives; those with
    no consume are skipped.  Subgroups of a single delivery are left out
    (nothing to reorder).
    """
    groups: list[DeliveryGroup] = []
    for r in sorted(racing):
        found: list[Delivery] = []
        for y in sorted(racing[r]):
            c = m.consume_of(r, y)
            send = None if c is None else m.partner(r, c)
            if c is None or send is None:
                continue
            rec, crec = m.record(r, y), m.record(r, c)
            assert rec["kind"] == R.RECV and crec["kind"] == R.CONSUME  # the model's pairing
            found.append(Delivery(y, c, send, int(crec["tag"]), int(rec.get("comm", 0)),
                                  int(rec["src"]), int(rec["tag"])))
        found.sort(key=lambda d: d.consume)
        preds = _order(m, r, found)
        for cls in _classes(found):
            for block in series_parts(preds, cls):
                idx = bits(block)
                if len(idx) < 2:
                    continue
                pos = {v: k for k, v in enumerate(idx)}
                local = tuple(sum(1 << pos[u] for u in bits(preds[v] & block)) for v in idx)
                n = count_subset(local, (1 << len(idx)) - 1)
                groups.append(DeliveryGroup(r, tuple(found[v] for v in idx), local, n))
    groups.sort(key=lambda g: (g.rank, g.deliveries[0].consume))
    return groups


def completion_groups(m: ModelManager, anys: Mapping[int, Mapping[int, int]]
                      ) -> list[DeliveryGroup]:
    """Subgroups of the completion orders of recorded ``Waitany`` calls.

    ``anys[r]`` maps the event each recorded ``Waitany`` of rank ``r`` started
    at to the request index it returned (the record's ``any`` lines: calls
    with two or more active requests).  Calls of one site that each completed
    a receive form a group: an ordering hands their indices out again (the
    ``k``-th call returns the request that completed the ``order[k]``-th
    message), constrained like deliveries (causality, channel order), split
    into series blocks.  The last call of a loop, with one request left, is
    not recorded and not reordered: it takes what remains.
    """
    groups: list[DeliveryGroup] = []
    for r in sorted(anys):
        by_site: dict[str | None, list[Delivery]] = {}
        for at, index in sorted(anys[r].items()):
            if at >= m.count(r):
                continue
            rec = m.record(r, at)
            if rec["kind"] != R.CONSUME:
                continue  # a send's completion
            send = m.partner(r, at)
            if send is None:
                continue  # a message we cannot name
            by_site.setdefault(rec.get("site"), []).append(
                Delivery(at, at, send, int(rec["tag"]), int(rec.get("comm", 0)), -1, -1, index))
        for found in by_site.values():
            preds = _order(m, r, found)
            for block in series_parts(preds, (1 << len(found)) - 1):
                idx = bits(block)
                if len(idx) < 2:
                    continue
                pos = {v: k for k, v in enumerate(idx)}
                local = tuple(sum(1 << pos[u] for u in bits(preds[v] & block)) for v in idx)
                n = count_subset(local, (1 << len(idx)) - 1)
                groups.append(DeliveryGroup(r, tuple(found[v] for v in idx), local, n, "anys"))
    return groups


def _classes(ds: list[Delivery]) -> list[int]:
    """Masks of the deliveries that could trade messages: connected components of
    "one's receive accepts the other's message" (receives naming different tags or
    sources never do, so their orders are tested apart)."""
    left = (1 << len(ds)) - 1
    out: list[int] = []
    while left:
        comp = frontier = left & -left
        while frontier:
            grow = 0
            for i in bits(frontier):
                for j in bits(left & ~comp):
                    if ds[i].accepts(ds[j]) or ds[j].accepts(ds[i]):
                        grow |= 1 << j
            frontier = grow
            comp |= grow
        out.append(comp)
        left &= ~comp
    return out


def _order(m: ModelManager, rank: int, ds: list[Delivery]) -> list[int]:
    """Predecessor masks (closed) of the deliveries' order (module docstring)."""
    n = len(ds)
    preds = [0] * n
    for j, b in enumerate(ds):
        for i, a in enumerate(ds):
            if i == j:
                continue
            fifo = (a.message[0] == b.message[0] and a.tag == b.tag and a.comm == b.comm
                    and a.message[1] < b.message[1])
            if fifo or m.happened_before((rank, a.consume), b.message):
                preds[j] |= 1 << i
    for k in range(n):  # transitive closure (Warshall, one row at a time)
        for j in range(n):
            if preds[j] >> k & 1:
                preds[j] |= preds[k]
    return preds


def subset_orders(group: DeliveryGroup) -> list[tuple[int, ...]]:
    """Section 5's subset of the group's orderings, admissible ones only, without
    the recorded order (already run) or repeats.

    For every message ``a``: everything but ``a`` and its successors, then
    ``a``, then its successors (``a`` as late as possible).  For every pair
    ``a != b`` with ``b`` not before ``a``: the predecessors of both, then
    ``a``, ``b``, then the rest (back to back, as early as possible).  The
    other parts keep their recorded order.  So for two messages the order
    does not constrain, some ordering of this subset or the recorded one
    delivers ``a`` right before ``b``, and another ``b`` right before ``a``
    (where the receives accept them).  Each is a tuple: receive ``k`` takes
    the message of delivery ``order[k]``.
    """
    n = len(group.deliveries)
    preds = group.preds
    full = (1 << n) - 1
    succs = [0] * n
    for v in range(n):
        for u in bits(preds[v]):
            succs[u] |= 1 << v
    seen = {tuple(range(n))}
    out: list[tuple[int, ...]] = []

    def keep(order: list[int]) -> None:
        t = tuple(order)
        if t not in seen and group.admissible(t):
            seen.add(t)
            out.append(t)

    for a in range(n):  # a delivered as late as possible
        late = succs[a] | 1 << a
        keep([*bits(full & ~late), a, *bits(succs[a])])
    for a in range(n):  # a then b, as early as possible
        for b in range(n):
            if a == b or succs[b] >> a & 1:
                continue
            before = (preds[a] | preds[b]) & ~(1 << a | 1 << b)
            pair = 1 << a | 1 << b
            keep([*bits(before), a, b, *bits(full & ~before & ~pair)])
    return out


def candidate_orders(group: DeliveryGroup) -> Iterator[tuple[int, ...]]:
    """The group's admissible orderings: :func:`subset_orders` first, then every
    other one (lazily), never the recorded order nor one twice."""
    first = subset_orders(group)
    yield from first
    done = {tuple(range(len(group.deliveries))), *first}
    yield from (t for t in _all_extensions(group.preds, len(group.deliveries))
                if t not in done and group.admissible(t))


def _all_extensions(preds: tuple[int, ...], n: int) -> Iterator[tuple[int, ...]]:
    """Every linear extension, lazily, in lexicographic order."""
    order: list[int] = []

    def rec(placed: int) -> Iterator[tuple[int, ...]]:
        if len(order) == n:
            yield tuple(order)
            return
        for v in range(n):
            if not placed >> v & 1 and preds[v] & placed == preds[v]:
                order.append(v)
                yield from rec(placed | 1 << v)
                order.pop()

    yield from rec(0)
