"""How far a race record is from the smallest record that still allows replay.

Netzer and Miller (netzer-miller-optimal-tracing-replay, Theorem 3) show that
a replayable trace is a vertex cover of the graph whose vertices are messages
and whose edges join racing messages, so finding the smallest one is NP-hard.
Their footnote 3 bounds it from below with a maximum matching: the edges of a
matching share no vertex, so any cover holds at least one end of each.

Per connected component the bound is sharpened where the minimum is known:
a complete component (mutually racing messages) needs all but one vertex.

The edges used here are the races the on-line check found (each traced message
and the message of the earlier receive it raced with).  They are a subgraph of
the full race graph, whose minimum cover is at least the subgraph's, so the
matching is a lower bound on the optimum either way.  When the races are
transitive (Theorem 4) the record is optimal and ``recorded == lower_bound``
is common, though equality is not guaranteed by the bound alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

__all__ = ["Message", "Optimality", "optimality"]

#: A message, named by its send event ``(rank, seq)``.
Message = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Optimality:
    """Sizes of one recording (see the module docstring)."""

    messages: int  # messages sent in the recorded run
    recorded: int  # deliveries written to the record
    lower_bound: int  # maximum matching in the graph of detected racing pairs

    @property
    def fraction(self) -> float:
        """Recorded deliveries as a fraction of all messages (0 when none were sent)."""
        return self.recorded / self.messages if self.messages else 0.0

    @property
    def optimal(self) -> bool:
        """Whether the record is proven minimal by the bound."""
        return self.recorded <= self.lower_bound

    def text(self) -> str:
        """One line for a report."""
        verdict = (
            "optimal"
            if self.optimal
            else f"at most {self.recorded - self.lower_bound} above the optimum"
        )
        return (
            f"{self.messages} messages, {self.recorded} recorded "
            f"({100 * self.fraction:.1f}%), lower bound on the minimum {self.lower_bound}: "
            f"{verdict}"
        )


def optimality(
    races: Iterable[tuple[Message, Message]], messages: int, recorded: int
) -> Optimality:
    """Sizes of a record whose detected racing pairs are ``races``.

    >>> optimality([((1, 0), (2, 0)), ((2, 0), (3, 0))], messages=3, recorded=2).lower_bound
    1
    >>> triangle = [((1, 0), (2, 0)), ((2, 0), (3, 0)), ((3, 0), (1, 0))]
    >>> optimality(triangle, messages=3, recorded=2).optimal
    True
    """
    graph: nx.Graph = nx.Graph()
    graph.add_edges_from((a, b) for a, b in races if a != b)
    return Optimality(
        messages,
        recorded,
        sum(_component_bound(graph.subgraph(c)) for c in nx.connected_components(graph)),
    )


def _component_bound(component: nx.Graph) -> int:
    """A lower bound on the minimum vertex cover of one connected component.

    A complete graph on n vertices (transitive races, Theorem 4) needs exactly
    n - 1; otherwise a maximum matching (exact for bipartite components, by
    König's theorem, so for the chains of races of a single receiver's
    successive wildcard receives).
    """
    n: int = component.number_of_nodes()
    if component.number_of_edges() == n * (n - 1) // 2:
        return n - 1
    return len(nx.max_weight_matching(component, maxcardinality=True))
