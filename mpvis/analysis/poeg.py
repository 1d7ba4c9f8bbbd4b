"""The Partial Order Execution Graph (POEG) of a run, as Schaeli et al. build it for MPI.

Schaeli, Gerlach and Hersch, "Decomposing Partial Order Execution Graphs to
Improve Message Race Detection", section 7: the POEG's nodes are the *send*
and *receive* events of the run; its edges connect each send to its matching
receive, and the events of a blocking MPI call to those of the process's
next call; the two halves of one ``MPI_Sendrecv`` stay unordered.  Its
linear extensions are the orderings of the run's events that the program
admits (section 3).

Here a node is a ``send`` record (the send event) or a ``consume`` record
(the receive event: the delivery), named by its ``(rank, seq)``.  Edges:

* each send before the consume of its message (the model's matching,
  including the sends the reader infers by non-overtaking);
* within a rank, event ``e`` before ``f`` iff ``e``'s call completed before
  ``f``'s call started (:mod:`mpvis.analysis.poeg_calls`);
* collectives order what their data dependencies order (the spec's
  "Happened-before and adjacency": a barrier-like call puts every member's
  earlier events before every member's later ones; bcast and scatter the
  root's; reduce and gather everyone's before the root's later ones).  They
  are not nodes: they only add paths.

Locks, probes and synchronous-send completion add no edge (as in the spec's
happened-before), so such a POEG can admit orderings the run could not have:
the counts are then upper bounds.

:class:`Poeg` stores the order transitively closed, one bitmask of
predecessors per node (``preds[i]``), which is what the counting
(:mod:`mpvis.analysis.linext`) and the decomposition
(:mod:`mpvis.analysis.poeg_decompose`) need.  Building costs about
``E * N / 64`` word operations for ``N`` nodes and ``E`` edges;
:data:`MAX_NODES` bounds ``N``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from mpvis.analysis.poeg_calls import NEVER, RankCalls, rank_calls
from mpvis.errors import MpvisError
from mpvis.protocol.record_types import EventRecord

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

__all__ = ["MAX_NODES", "Poeg", "PoegError", "poeg_of"]

Key = tuple[int, int]

#: Largest POEG built (nodes: sends and consumes).
MAX_NODES: Final = 20_000


class PoegError(MpvisError):
    """The trace cannot give a POEG (too large, or an order with a cycle)."""


@dataclass(frozen=True)
class Poeg:
    """A run's POEG (module docstring).  Node ``i`` is the event ``nodes[i]``."""

    nprocs: int
    nodes: tuple[Key, ...]
    kinds: tuple[str, ...]  # "send" or "consume" per node
    preds: tuple[int, ...]  # bitmask of every node strictly before node i
    #: per rank, ``"call"`` (its ``call`` fields) or ``"site"`` (derived pairing)
    pairing: tuple[str, ...]
    _index: dict[Key, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update((k, i) for i, k in enumerate(self.nodes))

    def index(self, rank: int, seq: int) -> int:
        """The node of event ``(rank, seq)``; ``KeyError`` if it is no send or consume."""
        try:
            return self._index[(rank, seq)]
        except KeyError:
            raise KeyError(f"event {rank}:{seq} is not a send or consume of the trace") from None

    def before(self, a: int, b: int) -> bool:
        """Is node ``a`` before node ``b`` in the POEG?"""
        return bool(self.preds[b] >> a & 1)

    def rank_nodes(self, rank: int) -> list[int]:
        """The nodes of ``rank``, in ``seq`` order."""
        return [i for i, (r, _) in enumerate(self.nodes) if r == rank]


def poeg_of(m: ModelManager) -> Poeg:
    """The POEG of the model's run (module docstring); raises :class:`PoegError`."""
    records = [[m.record(r, s) for s in range(m.count(r))] for r in range(m.nprocs)]
    calls = [rank_calls(recs) for recs in records]
    nodes: list[Key] = []
    kinds: list[str] = []
    for r, rc in enumerate(calls):
        for sp in rc.spans:
            nodes.append((r, sp.seq))
            kinds.append(sp.kind)
    if len(nodes) > MAX_NODES:
        raise PoegError(f"the trace has {len(nodes):,} sends and consumes; "
                        f"the POEG is built for at most {MAX_NODES:,}")
    graph = _Graph(len(nodes))
    index = {k: i for i, k in enumerate(nodes)}
    boundaries = [_rank_chain(graph, r, rc, index) for r, rc in enumerate(calls)]
    for i, (r, s) in enumerate(nodes):
        if kinds[i] == "consume":
            send = m.partner(r, s)
            if send is not None and send in index:
                graph.edge(index[send], i)
    _collective_paths(graph, m, records, calls, boundaries)
    preds = graph.closure()
    return Poeg(m.nprocs, tuple(nodes), tuple(kinds), tuple(preds),
                tuple(rc.pairing for rc in calls))


class _Graph:
    """Nodes ``0 .. visible-1`` are events; later ones are hidden junctions."""

    def __init__(self, visible: int) -> None:
        self.visible = visible
        self.size = visible
        self.out: list[list[int]] = [[] for _ in range(visible)]

    def hidden(self) -> int:
        self.out.append([])
        self.size += 1
        return self.size - 1

    def edge(self, a: int, b: int) -> None:
        self.out[a].append(b)

    def closure(self) -> list[int]:
        """Predecessor masks (events only) in a topological order; a cycle is an error."""
        indeg = [0] * self.size
        for succ in self.out:
            for b in succ:
                indeg[b] += 1
        masks = [0] * self.size
        todo = deque(i for i in range(self.size) if indeg[i] == 0)
        seen = 0
        while todo:
            a = todo.popleft()
            seen += 1
            carry = masks[a] | (1 << a if a < self.visible else 0)
            for b in self.out[a]:
                masks[b] |= carry
                indeg[b] -= 1
                if indeg[b] == 0:
                    todo.append(b)
        if seen != self.size:
            raise PoegError("the trace's events are ordered in a cycle (inconsistent trace)")
        return masks[: self.visible]


@dataclass
class _Boundaries:
    """A rank's junctions: ``after[k]`` stands for "call ``calls[k]`` has returned"."""

    calls: list[int]
    after: list[int]

    def before_call(self, call: int) -> int | None:
        """The junction of the last boundary strictly before ``call``."""
        k = bisect_left(self.calls, call) - 1
        return self.after[k] if k >= 0 else None

    def at(self, call: int) -> int:
        return self.after[bisect_left(self.calls, call)]


def _rank_chain(graph: _Graph, rank: int, rc: RankCalls, index: dict[Key, int]) -> _Boundaries:
    """The interval order of one rank, with one junction per completing call.

    Event ``e`` leads to the junction of ``complete(e)``; the junctions form a
    chain; the last junction before ``post(f)`` leads to ``f``.  So ``e``
    reaches ``f`` iff ``complete(e) < post(f)``, with ``O(events)`` edges.
    """
    points = sorted({sp.complete for sp in rc.spans if sp.complete != NEVER}
                    | set(rc.colls.values()))
    b = _Boundaries(points, [graph.hidden() for _ in points])
    for x, y in zip(b.after, b.after[1:], strict=False):
        graph.edge(x, y)
    for sp in rc.spans:
        node = index[(rank, sp.seq)]
        before = b.before_call(sp.post)
        if before is not None:
            graph.edge(before, node)
        if sp.complete != NEVER:
            graph.edge(node, b.at(sp.complete))
    return b


def _collective_paths(graph: _Graph, m: ModelManager, records: list[list[EventRecord]],
                      calls: list[RankCalls], boundaries: list[_Boundaries]) -> None:
    """Junctions for collectives' data dependencies (module docstring).

    One hub per distinct set of entries an exit depends on (one per instance
    for barrier-like calls): the entries' earlier events lead to the hub, the
    hub to the exit's rank's later events.
    """
    book = m.colls
    exited = [_exited_colls(recs) for recs in records]
    for (comm, n), inst in book.instances.items():
        hubs: dict[tuple[Key, ...], int] = {}
        for r, seq in inst.entries.items():
            if seq not in exited[r]:
                continue
            deps = book.exit_deps(r, comm, n, inst.ops[r], True)
            if not deps:
                continue
            key = tuple(sorted(deps))
            hub = hubs.get(key)
            if hub is None:
                hub = hubs[key] = graph.hidden()
                for q, s in key:
                    before = boundaries[q].before_call(calls[q].colls[s])
                    if before is not None:
                        graph.edge(before, hub)
            graph.edge(hub, boundaries[r].at(calls[r].colls[seq]))


def _exited_colls(records: list[EventRecord]) -> set[int]:
    """Seqs of the rank's ``coll`` records that a ``coll_exit`` closed."""
    open_at: dict[int, int] = {}  # comm -> seq of the open coll
    done: set[int] = set()
    for s, rec in enumerate(records):
        kind = rec.get("kind")
        if kind == "coll":
            open_at[rec.get("comm", 0)] = s
        elif kind == "coll_exit":
            c = open_at.pop(rec.get("comm", 0), None)
            if c is not None:
                done.add(c)
    return done
