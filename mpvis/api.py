"""mpvis as a Python library: :func:`open` a saved trace, get a :class:`Run`.

A :class:`Run` is the functional model of one recorded execution
(MPVisualizer, ``mpvisualizer-race-detection.txt`` section 2) with the
analyses ``mpvis check`` runs beside it, reached through the model's own
classes (:mod:`mpvis.model.entities`: :class:`~mpvis.model.entities.Process`,
:class:`~mpvis.model.entities.Event`, :class:`~mpvis.model.entities.Consume`,
:class:`~mpvis.model.entities.Message`), thin views over the model's columns.

Contract:

* :func:`open` reads every format ``mpvis check`` reads (JSON Lines, plain,
  ``.gz`` or ``.zst``; an OTF2 archive with the ``otf2`` extra), checking every
  rule of the spec; a broken rule raises
  :class:`~mpvis.tracefile.reader.TraceFileError` (an
  :class:`~mpvis.errors.MpvisError`) naming the file, the line and the rule.
* :meth:`Run.races`, :meth:`Run.deadlocks` and :meth:`Run.errors` are the
  lists of the spec's report exactly as ``mpvis check --json`` prints them
  (same pipeline, :class:`~mpvis.analysis.pipeline.Analyses`), computed once.
* :meth:`Run.to_pandas` / :meth:`Run.to_arrow` give the events and messages
  tables of :mod:`mpvis.model.tables` (optional extras ``mpvis[pandas]``,
  ``mpvis[arrow]``).

``docs/python-api.md`` is a doctested session.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from mpvis.analysis.cones import Cone, cone_of
from mpvis.analysis.exact_offline import all_conflicts as all_conflicts_of
from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.predicates import (
    Cut,
    DisjunctiveResult,
    LocalPredicate,
    PredicateError,
    PredicateEvaluator,
    check_recorded,
    detect_conjunctive,
    detect_disjunctive,
    parse_definition,
)
from mpvis.analysis.race_groups import group_races, program_dir, tolerant
from mpvis.analysis.report import Report, found_races
from mpvis.model.entities import Event, Message, Process, Views
from mpvis.model.manager import ModelManager
from mpvis.model.tables import Tables, arrow_tables, pandas_tables
from mpvis.tracefile.reader import TraceFileError, iter_records, load_trace, read_header

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["Run", "open"]

EventRef = Event | tuple[int, int] | str


def open(path: str | Path, *, allow_truncated: bool = False) -> Run:
    """Read the trace at ``path`` into a :class:`Run`, as ``mpvis check`` does.

    ``allow_truncated``: a compressed trace cut short (an interrupted run)
    gives a run over every complete record before the cut, with
    ``run.complete`` false, instead of raising
    :class:`~mpvis.tracefile.reader.TraceFileError`.
    """
    p = Path(path)
    analyses = Analyses.for_header(read_header(p))
    complete = True
    try:
        load_trace(p, model=analyses.model)
    except TraceFileError as exc:
        if not (allow_truncated and exc.truncated and exc.model is analyses.model):
            raise
        complete = False
    return Run(p, analyses, complete=complete)


class Run:
    """One recorded execution: its model, its processes, messages and findings."""

    def __init__(self, path: Path, analyses: Analyses, *, complete: bool = True) -> None:
        self.path = path
        self.analyses = analyses
        #: False when the trace was cut short (``open(..., allow_truncated=True)``)
        self.complete = complete

    def __repr__(self) -> str:
        return (f"<Run {self.path.name}: {self.nprocs} processes, "
                f"{self.model.event_count} events>")

    @property
    def model(self) -> ModelManager:
        """The functional model (columns, clocks, races) the views read."""
        return self.analyses.model

    @property
    def header(self) -> dict[str, Any]:
        """The trace's header record."""
        return self.model.header

    @property
    def nprocs(self) -> int:
        return self.model.nprocs

    @cached_property
    def processes(self) -> tuple[Process, ...]:
        """One :class:`~mpvis.model.entities.Process` per rank, by rank
        (:attr:`ModelManager.processes <mpvis.model.manager.ModelManager.processes>`)."""
        return self.model.processes

    @property
    def events(self) -> Views[Event]:
        """Every event, in the order the model received them (a lazy sequence)."""
        return self.model.events

    def event(self, ref: EventRef) -> Event:
        """The event ``ref`` names: an :class:`Event`, ``(rank, seq)`` or ``"rank:seq"``
        (:meth:`ModelManager.event <mpvis.model.manager.ModelManager.event>`).

        Raises :class:`KeyError` for an event the run does not have."""
        if isinstance(ref, Event):
            if ref.model is not self.model:
                raise KeyError(f"event {ref.rank}:{ref.seq} is of another run")
            return ref
        if isinstance(ref, str):
            rank_s, colon, seq_s = ref.partition(":")
            if not (colon and rank_s.strip().isdecimal() and seq_s.strip().isdecimal()):
                raise KeyError(f"event {ref!r} is not RANK:SEQ")
            rank, seq = int(rank_s), int(seq_s)
        else:
            rank, seq = ref
        return self.model.event(rank, seq)

    @property
    def messages(self) -> Views[Message]:
        """Every send as a :class:`Message` (consumed or not), in arrival order."""
        return self.model.messages

    # ------------------------------------------------------------ findings
    @cached_property
    def report(self) -> Report:
        """The spec's report object, as ``mpvis check --json --no-settings``
        prints it: races (each with its ``group``), ``groups`` by site pair,
        deadlocks, errors, ranks.  No race is marked ``suppressed`` (the
        window's intended races are the CLI's)."""
        return self.check()

    def check(self, *, nonadjacent: bool = False, all_conflicts: bool = False) -> Report:
        """A fresh report with ``mpvis check``'s options: ``nonadjacent`` also
        pairs every ``recv(-1,-1)`` with its non-adjacent later receives;
        ``all_conflicts`` lists every conflicting (match, send) pair of the
        exact test (an off-line pass over the whole file, re-read)."""
        conflicts = None
        if all_conflicts:
            conflicts = all_conflicts_of((rec for _, rec in iter_records(self.path)),
                                         self.nprocs)
        rep = self.analyses.report(nonadjacent=nonadjacent, conflicts=conflicts)
        rep["groups"] = group_races(rep["races"], site_of=tolerant(self.model.site_of),
                                    base=program_dir(self.header))
        return rep

    def groups(self) -> list[dict[str, Any]]:
        """The races grouped by site pair (``mpvis check --summary``), largest first."""
        return list(self.report["groups"])

    def races(self, method: Literal["classifier", "exact"] | None = None, *,
              shown: bool = False) -> list[dict[str, Any]]:
        """The report's race entries (spec, "Analysis report"): the 16-case
        classifier's, with ``confirmed`` by the exact test, then the exact
        test's (Cypher and Leu).  ``method`` keeps one method's; ``shown``
        keeps only the races ``mpvis check`` shows and counts (``legitimate``
        and ``unverified``)."""
        races = found_races(self.report) if shown else self.report["races"]
        return [r for r in races if method is None or r["method"] == method]

    def deadlocks(self) -> list[dict[str, Any]]:
        """The report's deadlock entries: proven ones, then potential ones."""
        return list(self.report["deadlocks"])

    def errors(self) -> list[dict[str, Any]]:
        """The report's ``errors``: collective mismatches, request leaks, lost messages."""
        return list(self.report["errors"])

    def cone(self, event: EventRef) -> Cone:
        """The causality cone and future cone of ``event`` (as ``mpvis cone``)."""
        e = self.event(event)
        return cone_of(self.model, e.rank, e.seq)

    @overload
    def predicate(self, *definitions: str, mode: Literal["conj"] = "conj") -> Cut | None: ...
    @overload
    def predicate(self, *definitions: str, mode: Literal["disj"]) -> DisjunctiveResult: ...
    def predicate(self, *definitions: str, mode: Literal["conj", "disj"] = "conj"
                  ) -> Cut | DisjunctiveResult | None:
        """Where a global predicate first holds, as ``mpvis predicate`` finds it.

        Each definition is ``NAME=RANK:EXPR`` (language:
        :mod:`mpvis.analysis.predicate_lang`).  ``mode="conj"``: the least
        consistent cut where all hold (events per rank), or None.
        ``mode="disj"``: every minimal cut where one holds
        (:class:`~mpvis.analysis.predicates.DisjunctiveResult`).  Raises
        :class:`~mpvis.analysis.predicates.PredicateError` for a bad
        definition, a rank not in the run or a variable its rank never records.
        """
        preds: dict[str, LocalPredicate] = {}
        for text in definitions:
            p = parse_definition(text)
            if p.name in preds:
                raise PredicateError(f"predicate {p.name!r} is defined twice")
            preds[p.name] = p
        if not preds:
            raise PredicateError("no predicate given")
        ev = PredicateEvaluator(self.model)
        chosen = list(preds.values())
        check_recorded(ev, chosen)
        if mode == "disj":
            return detect_disjunctive(ev, chosen)
        return detect_conjunctive(ev, chosen)

    # ------------------------------------------------------------ tables
    def to_pandas(self) -> Tables[pd.DataFrame]:
        """``(events, messages)`` as pandas data frames (needs ``mpvis[pandas]``)."""
        return pandas_tables(self.model)

    def to_arrow(self) -> Tables[pa.Table]:
        """``(events, messages)`` as Arrow tables (needs ``mpvis[arrow]``)."""
        return arrow_tables(self.model)
