"""Local, disjunctive and conjunctive predicates over a run, and where they hold.

MPVisualizer (``mpvisualizer-race-detection.txt`` section 1) lets the user
define local predicates and evaluates their disjunctions and conjunctions on
the frontier of a causality cone.  Spec ``trace-format.md``, "Cones and
predicates", gives the meaning used here:

* a *cut* is a tuple ``k`` with ``k[r]`` events of rank ``r`` (``0 .. count``);
  it is consistent when closed under happened-before, i.e. when the clock of
  each rank's last event in it is below ``k`` componentwise;
* a local predicate is bound to one rank and evaluated on that rank's state
  after the cut's last event of the rank (its variables as last recorded by
  ``state`` records, and that event for ``kind``/``event.FIELD``), or on the
  initial state (no variables, no event) when ``k[r]`` is 0;
* a cone is the consistent cut ``vc(e)``, so its frontier values are the local
  predicates at that cut (:meth:`PredicateEvaluator.values_at`).

Beyond the paper, :func:`detect_conjunctive` finds the *least* consistent cut
in which every local predicate of a conjunction holds (weak conjunctive
predicate detection, after Garg and Waldecker): starting from the empty cut it
only makes forced moves -- a rank whose predicate is false must advance to its
next true state; a cut missing an event that the clock of one of its events
requires must take it -- so the first fixed point is the least satisfying cut,
and running out of true states proves no consistent cut satisfies it.
:func:`detect_disjunctive` finds the minimal cuts where a disjunction holds:
each is the cone of the first event after which one local predicate holds (or
the empty cut if one holds initially).

Only causally processed events (``m.done``) are used, so in live mode the
answers are about the run so far.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from mpvis.analysis.predicate_lang import (
    Expr,
    PredicateSyntaxError,
    Scalar,
    holds,
    parse,
    reads_fields,
    uses_event,
    variable_names,
)
from mpvis.errors import MpvisError
from mpvis.model.event_arrays import rank_arrays
from mpvis.protocol.records import EVENT_KINDS, STATE

if TYPE_CHECKING:
    from mpvis.model.manager import ModelManager

__all__ = [
    "Cut",
    "DisjunctiveResult",
    "GlobalPredicate",
    "LocalPredicate",
    "PredicateError",
    "PredicateEvaluator",
    "PredicateSet",
    "check_recorded",
    "detect_conjunctive",
    "detect_disjunctive",
    "is_consistent",
    "parse_definition",
]

Cut = tuple[int, ...]
BoolArray = npt.NDArray[np.bool_]
Mode = Literal["conj", "disj"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


class PredicateError(MpvisError, ValueError):
    """A predicate definition is wrong (bad name, rank, expression or reference)."""


@dataclass(frozen=True)
class LocalPredicate:
    """A named condition on one rank's variables and current event."""

    name: str
    rank: int
    source: str
    tree: Expr = field(compare=False, repr=False)

    @classmethod
    def make(cls, name: str, rank: int, source: str) -> LocalPredicate:
        """Check the name and parse ``source``; raises :class:`PredicateError`
        (for a bad expression its ``__cause__`` is the
        :class:`~mpvis.analysis.predicate_lang.PredicateSyntaxError`, whose
        ``position`` an editor can point at)."""
        if not _NAME.match(name):
            raise PredicateError(f"bad predicate name {name!r} (use letters, digits, _ . -)")
        if type(rank) is not int or rank < 0:
            raise PredicateError(f"predicate {name}: rank must be a non-negative integer")
        try:
            tree = parse(source)
        except PredicateSyntaxError as exc:
            raise PredicateError(
                f"predicate {name}: {exc.message} at column {exc.position + 1} of {source!r}"
            ) from exc
        return cls(name, rank, source, tree)


@dataclass(frozen=True)
class GlobalPredicate:
    """A conjunction (``conj``) or disjunction (``disj``) of local predicates."""

    name: str
    mode: Mode
    parts: tuple[str, ...]


def parse_definition(text: str) -> LocalPredicate:
    """``NAME=RANK:EXPR`` (the form ``mpvis predicate --define`` takes)."""
    name, eq, rest = text.partition("=")
    rank, colon, expr = rest.partition(":")
    if not eq or not colon or not rank.strip().isdigit():
        raise PredicateError(f"predicate definition {text!r} is not NAME=RANK:EXPR")
    return LocalPredicate.make(name.strip(), int(rank), expr)


class PredicateSet:
    """The predicates a user defined for one program (what the panel edits and
    the program's settings save, via :meth:`to_settings`/:meth:`from_settings`)."""

    def __init__(self) -> None:
        self.locals: dict[str, LocalPredicate] = {}
        self.globals: dict[str, GlobalPredicate] = {}

    def add_local(self, pred: LocalPredicate) -> None:
        if pred.name in self.globals:
            raise PredicateError(f"{pred.name!r} already names a global predicate")
        self.locals[pred.name] = pred

    def add_global(self, pred: GlobalPredicate) -> None:
        if pred.name in self.locals:
            raise PredicateError(f"{pred.name!r} already names a local predicate")
        if not pred.parts:
            raise PredicateError(f"global predicate {pred.name!r} has no local predicate")
        missing = [p for p in pred.parts if p not in self.locals]
        if missing:
            raise PredicateError(f"unknown local predicate(s): {', '.join(missing)}")
        self.globals[pred.name] = pred

    def remove(self, name: str) -> None:
        """Remove a predicate; removing a local one removes the globals using it."""
        self.globals.pop(name, None)
        if self.locals.pop(name, None) is not None:
            for g in [g for g in self.globals.values() if name in g.parts]:
                del self.globals[g.name]

    def parts_of(self, name: str) -> list[LocalPredicate]:
        return [self.locals[p] for p in self.globals[name].parts]

    def to_settings(self) -> dict[str, Any]:
        """A JSON-able description (no parsed trees)."""
        return {
            "local": [
                {"name": p.name, "rank": p.rank, "expr": p.source} for p in self.locals.values()
            ],
            "global": [
                {"name": g.name, "mode": g.mode, "parts": list(g.parts)}
                for g in self.globals.values()
            ],
        }

    @classmethod
    def from_settings(cls, data: Any) -> PredicateSet:
        """Rebuild from :meth:`to_settings` output; raises :class:`PredicateError`."""
        out = cls()
        try:
            for d in data.get("local", []):
                out.add_local(LocalPredicate.make(str(d["name"]), d["rank"], str(d["expr"])))
            for d in data.get("global", []):
                if d["mode"] not in ("conj", "disj"):
                    raise PredicateError(f"unknown mode {d['mode']!r}")
                out.add_global(
                    GlobalPredicate(str(d["name"]), d["mode"], tuple(str(p) for p in d["parts"]))
                )
        except (KeyError, TypeError, AttributeError) as exc:
            raise PredicateError(f"malformed predicate settings ({exc!r})") from None
        return out


class _RankStates:
    """The ``state`` records of one rank: where they are and what they set."""

    def __init__(self) -> None:
        self.scanned = 0
        self.seqs: list[int] = []
        self.deltas: list[dict[str, Scalar]] = []

    def update(self, m: ModelManager, rank: int) -> None:
        n = m.count(rank)
        if n <= self.scanned:
            return
        # the rank's new events scanned for state records at once
        events = rank_arrays(m.store, rank, self.scanned, n)
        states = events.of_kind(STATE)
        for i, extra in zip(states.tolist(), events.extras(states), strict=True):
            self.seqs.append(self.scanned + i)
            self.deltas.append(dict(extra.get("vars", {})))
        self.scanned = n

    def vars_at(self, k: int) -> dict[str, Scalar]:
        """The variables after ``k`` events (state records with seq < k)."""
        out: dict[str, Scalar] = {}
        for seq, delta in zip(self.seqs, self.deltas, strict=True):
            if seq >= k:
                break
            out.update(delta)
        return out


class PredicateEvaluator:
    """Evaluates local predicates on one model, caching per-rank state."""

    def __init__(self, model: ModelManager) -> None:
        self.model = model
        self._states = [_RankStates() for _ in range(model.nprocs)]
        self._truth: dict[tuple[int, str], BoolArray] = {}

    def _check(self, pred: LocalPredicate) -> None:
        if pred.rank >= self.model.nprocs:
            raise PredicateError(
                f"predicate {pred.name}: rank {pred.rank} is not in the run "
                f"(ranks 0..{self.model.nprocs - 1})"
            )

    def _state(self, rank: int) -> _RankStates:
        st = self._states[rank]
        st.update(self.model, rank)
        return st

    def recorded_names(self, rank: int) -> set[str]:
        """Every variable some ``state`` record of ``rank`` sets."""
        return {name for delta in self._state(rank).deltas for name in delta}

    def value(self, pred: LocalPredicate, k: int) -> bool:
        """The predicate on its rank's state after ``k`` events."""
        self._check(pred)
        m, r = self.model, pred.rank
        if k == 0:
            return holds(pred.tree, {}, None, None)
        last = m.event(r, k - 1)
        event = last.fields if reads_fields(pred.tree) else None
        return holds(pred.tree, self._state(r).vars_at(k), last.kind, event)

    def values_at(self, preds: list[LocalPredicate], cut: Cut) -> dict[str, bool]:
        """Each predicate's value at ``cut`` (e.g. a cone's ``past``)."""
        return {p.name: self.value(p, cut[p.rank]) for p in preds}

    def truth(self, pred: LocalPredicate) -> BoolArray:
        """``t[k]`` = the predicate after ``k`` events, for ``k = 0 .. count``."""
        self._check(pred)
        m, r = self.model, pred.rank
        n = m.count(r)
        key = (r, pred.source)
        cached = self._truth.get(key)
        if cached is not None and len(cached) == n + 1:
            return cached
        st = self._state(r)
        kinds = rank_arrays(m.store, r, 0, n).kind  # the truth table's every event
        out = np.empty(n + 1, dtype=np.bool_)
        out[0] = holds(pred.tree, {}, None, None)
        if uses_event(pred.tree):
            _fill_per_event(m, pred, kinds, st, out)
        else:
            _fill_per_state(pred, n, st, out)
        self._truth[key] = out
        return out


def _fill_per_state(pred: LocalPredicate, n: int, st: _RankStates, out: BoolArray) -> None:
    """Without ``kind``/``event`` the value changes only after ``state`` events."""
    vars_: dict[str, Scalar] = {}
    start = 1
    value = holds(pred.tree, vars_, None, None)
    for seq, delta in zip(st.seqs, st.deltas, strict=True):
        out[start : seq + 1] = value
        vars_.update(delta)
        value = holds(pred.tree, vars_, None, None)
        start = seq + 1
    out[start : n + 1] = value


def _fill_per_event(
    m: ModelManager,
    pred: LocalPredicate,
    kinds: npt.NDArray[np.int8],
    st: _RankStates,
    out: BoolArray,
) -> None:
    """With ``kind`` only, memoise by (state version, kind); with ``event.FIELD``,
    evaluate at every event."""
    r = pred.rank
    fields = reads_fields(pred.tree)
    vars_: dict[str, Scalar] = {}
    memo: dict[int, bool] = {}
    state_seqs = set(st.seqs)
    deltas = iter(st.deltas)
    for seq in range(len(kinds)):
        code = int(kinds[seq])
        if seq in state_seqs:
            vars_.update(next(deltas))
            memo.clear()
        if fields:
            out[seq + 1] = holds(pred.tree, vars_, EVENT_KINDS[code], m.record(r, seq))
        else:
            v = memo.get(code)
            if v is None:
                v = memo[code] = holds(pred.tree, vars_, EVENT_KINDS[code], None)
            out[seq + 1] = v


def check_recorded(ev: PredicateEvaluator, preds: list[LocalPredicate]) -> None:
    """Refuse predicates that could only be "never holds": a rank not in the
    run, or a variable the rank never records.  Raises :class:`PredicateError`
    naming it (and the variables the rank does record)."""
    n = ev.model.nprocs
    for p in preds:
        if p.rank >= n:
            raise PredicateError(
                f"predicate {p.name}: rank {p.rank} is not in the run (ranks 0..{n - 1})")
        recorded = ev.recorded_names(p.rank)
        unknown = sorted(variable_names(p.tree) - recorded)
        if unknown:
            known = (", ".join(sorted(recorded))
                     or "none: the program never calls mpvis.instrument.state()")
            raise PredicateError(
                f"predicate {p.name}: rank {p.rank} never records "
                f"{', '.join(repr(n) for n in unknown)} (variables it records: {known})"
            )


# ---------------------------------------------------------------- cuts
def is_consistent(m: ModelManager, cut: Cut) -> bool:
    """Is ``cut`` closed under happened-before?  Its events must have clocks."""
    for r, k in enumerate(cut):
        if k > 0 and np.any(m.clocks.clock(r, k - 1) > np.asarray(cut)):
            return False
    return True


def _combined_truth(ev: PredicateEvaluator, preds: list[LocalPredicate]) -> dict[int, BoolArray]:
    """Per constrained rank, the AND of its predicates over causally known states."""
    out: dict[int, BoolArray] = {}
    for p in preds:
        t = ev.truth(p)[: ev.model.done[p.rank] + 1]
        out[p.rank] = t if p.rank not in out else out[p.rank] & t
    return out


def detect_conjunctive(ev: PredicateEvaluator, preds: list[LocalPredicate]) -> Cut | None:
    """The least consistent cut where every predicate holds, or ``None``."""
    m = ev.model
    positions = {r: np.flatnonzero(t) for r, t in _combined_truth(ev, preds).items()}
    cut = np.zeros(m.nprocs, dtype=np.int64)
    while True:
        for r, pos in positions.items():
            i = int(np.searchsorted(pos, cut[r]))
            if i == len(pos):
                return None
            cut[r] = pos[i]
        closed = cut.copy()
        for r in range(m.nprocs):
            if cut[r] > 0:
                np.maximum(closed, m.clocks.clock(r, int(cut[r]) - 1), out=closed)
        if np.array_equal(closed, cut):
            return tuple(int(k) for k in cut)
        cut = closed


@dataclass(frozen=True)
class DisjunctiveResult:
    """Where a disjunction first holds.

    ``minimal`` lists every minimal consistent cut where it holds, each with
    the predicate that holds there and the event after which it holds
    (``None`` in the initial state), by cut size then definition order;
    ``minimal[0]`` is the answer shown.  Empty when it never holds.
    """

    minimal: tuple[tuple[str, tuple[int, int] | None, Cut], ...]

    @property
    def holds(self) -> bool:
        return bool(self.minimal)

    @property
    def cut(self) -> Cut | None:
        return self.minimal[0][2] if self.minimal else None


def detect_disjunctive(ev: PredicateEvaluator, preds: list[LocalPredicate]) -> DisjunctiveResult:
    """The minimal consistent cuts where at least one predicate holds.

    Any consistent cut where predicate ``p`` of rank ``r`` holds contains the
    first event after which ``p`` holds, hence that event's cone; and that
    cone (a consistent cut) satisfies ``p``.  So the minimal satisfying cuts
    are the minimal cones among these first events.
    """
    m = ev.model
    found: list[tuple[str, tuple[int, int] | None, Cut]] = []
    for p in preds:
        t = ev.truth(p)[: m.done[p.rank] + 1]
        pos = np.flatnonzero(t)
        if len(pos) == 0:
            continue
        k = int(pos[0])
        if k == 0:
            found.append((p.name, None, (0,) * m.nprocs))
        else:
            clock = m.clocks.clock(p.rank, k - 1)
            found.append((p.name, (p.rank, k - 1), tuple(int(x) for x in clock)))
    minimal = []
    seen: set[Cut] = set()
    for item in found:
        cut = item[2]
        dominated = any(
            all(a <= b for a, b in zip(o[2], cut, strict=True)) and o[2] != cut for o in found
        )
        if not dominated and cut not in seen:
            seen.add(cut)
            minimal.append(item)
    minimal.sort(key=lambda it: sum(it[2]))
    return DisjunctiveResult(tuple(minimal))
