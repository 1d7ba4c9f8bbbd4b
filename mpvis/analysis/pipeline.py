"""The analyses that run beside the model, composed once for every front end.

``mpvis check``, the headless central process of ``mpvis run``, the demo and
the window all build a model the same way: :class:`Analyses` attaches the
exact race detector (Cypher and Leu) and the deadlock monitor (Roy et al.) as
analyzers of the model's causally ordered stream, and :meth:`Analyses.report`
assembles the spec's report from the model and from them, adding, once the
input has ended, the checks that need the whole run: deadlocks if sends were
not buffered (:mod:`~mpvis.analysis.unsafe_sends`), and the ``errors``:
collective mismatches (:mod:`~mpvis.analysis.coll_mismatch`), request leaks
(:mod:`~mpvis.analysis.request_leaks`) and lost messages
(:mod:`~mpvis.analysis.lost_messages`).

Each classifier race in the report carries ``confirmed``: whether the exact
test finds the same conflict (the match of the first receive with the second
message).  It is decided from the full list of conflicts when the caller
supplies it (``conflicts``, e.g. from
:func:`mpvis.analysis.exact_offline.all_conflicts`), otherwise from what the
on-the-fly detector listed (which keeps only the latest wildcard match per tag,
so ``False`` there means "not shown by the on-the-fly test").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.analysis.coll_mismatch import MISMATCH_CHECKS, completed, mismatch_errors
from mpvis.analysis.deadlock_monitor import DeadlockMonitor
from mpvis.analysis.exact_events import ExactRace
from mpvis.analysis.exact_races import ExactRaceDetector
from mpvis.analysis.lost_messages import lost_messages
from mpvis.analysis.race_table import RaceTable
from mpvis.analysis.report import Report, build_report, confirm
from mpvis.analysis.request_leaks import request_leaks
from mpvis.analysis.unsafe_sends import potential_deadlocks
from mpvis.model.heap import release_freed_memory, trim_freed_memory
from mpvis.model.manager import ModelManager
from mpvis.model.stream import ReleasedColumns

__all__ = ["Analyses"]


def _narrow(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.signedinteger[Any]]:
    """The exact conflicts' ``(n, 6)`` keys as 32-bit integers when they fit
    (ranks and seqs: half the memory while the whole-run passes run)."""
    if len(keys) and (int(keys.min()) < -(2**31) or int(keys.max()) >= 2**31):
        return keys
    return keys.astype(np.int32)


class Analyses:
    """A model with its incremental analyses attached."""

    def __init__(self, model: ModelManager, *, exact: bool = True, deadlocks: bool = True
                 ) -> None:
        self.model = model
        self.exact = ExactRaceDetector(model.nprocs) if exact else None
        self.deadlock = DeadlockMonitor(model.nprocs) if deadlocks else None
        for a in (self.exact, self.deadlock):
            if a is not None:
                model.analyzers.append(a)

    @classmethod
    def for_header(
        cls, header: dict[str, Any], *, validate: bool = True, **kw: bool
    ) -> Analyses:
        """A fresh model for a run with this header, with analyses attached.

        ``validate=False`` when the records come from the central process's
        journal, which has checked every per-record rule already (the model
        still checks the rules that need context)."""
        return cls(ModelManager(header, validate=validate), **kw)

    def add_exact_afterwards(
        self, batch: int = 50_000, progress: Callable[[int, int], object] | None = None
    ) -> ExactRaceDetector:
        """Run the exact detector over a model already built without it.

        For a model built without analyzers (an imported OTF2 archive, a
        benchmark of the pass alone).  The model's events are fed in
        Lamport-clock order, a linear extension of happened-before, so the
        detector sees a causally consistent stream (``mpvis.model.stream``).
        ``progress(done, total)`` is called after every batch of events.
        """
        self.add_afterwards(deadlocks=False, batch=batch, progress=progress)
        assert self.exact is not None
        return self.exact

    def add_afterwards(
        self, *, exact: bool = True, deadlocks: bool = True, batch: int = 50_000,
        progress: Callable[[int, int], object] | None = None,
    ) -> None:
        """Run the exact detector and/or the deadlock monitor over a built model.

        One pass over the model's events in Lamport-clock order (a linear
        extension of happened-before: a causally consistent stream), fed as
        the model feeds its analyzers: columns, a batch at a time
        (:class:`~mpvis.model.stream.ReleasedColumns`).  The window builds
        an OTF2 archive's model without analyzers, and the part of a trace read
        before an error, then runs this (trace files get the analyzers attached
        while they load, as ``mpvis check`` does).  The deadlocks are those of
        the wait-for graph at the end of the input, as with the analyzers
        attached; the on-the-fly exact list may differ in which conflicts it
        keeps (never in whether there is one), so ``mpvis check`` attaches them.
        """
        m = self.model
        todo: list[ExactRaceDetector | DeadlockMonitor] = []
        if exact:
            todo.append(ExactRaceDetector(m.nprocs))
        if deadlocks:
            todo.append(DeadlockMonitor(m.nprocs))
        order = np.asarray(m.in_lamport_order().indices, dtype=np.int64)
        n = len(order)
        for lo in range(0, n, batch):
            cols = ReleasedColumns.of(m.store, order[lo:lo + batch],
                                      m.rules.named_send_of if m.input_ended else None)
            for a in todo:
                a.feed_columns(cols)
            if progress is not None:
                progress(min(lo + batch, n), n)
        for a in todo:
            a.finish()
            if isinstance(a, ExactRaceDetector):
                self.exact = a
            else:
                self.deadlock = a

    def mark_rank_dead(self, rank: int, detail: str) -> None:
        """A rank crashed or was killed: tell the model and the deadlock monitor."""
        self.model.mark_rank_dead(rank, detail)
        if self.deadlock is not None:
            self.deadlock.mark_dead(rank, detail)

    def stuck(self) -> list[dict[str, Any]]:
        """Live: the deadlocks the records so far prove, if the ranks are all idle."""
        if self.deadlock is None:
            return []
        return [d.to_report() for d in self.deadlock.check(final=False)]

    def _deadlocks_and_errors(self, release: bool = False
                              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Deadlock entries (proven, then potential ones: unsafe sends) and errors.

        A collective mismatch is an error; it stays a deadlock only while a rank
        never got past it.  Potential deadlocks, request leaks and lost messages
        need the whole run: they are decided once the input has ended.
        ``release``: the heap's free space is returned after each whole-run pass
        (what a pass frees would otherwise stay resident under the next one's).
        """
        done = trim_freed_memory if release else (lambda: False)
        m = self.model
        found = self.deadlock.deadlocks if self.deadlock is not None else []
        dl: list[dict[str, Any]] = [d.to_report() for d in found
                                    if d.check not in MISMATCH_CHECKS or not completed(m, d)]
        errors: list[dict[str, Any]] = list(mismatch_errors(m, found))
        if m.input_ended:
            if self.deadlock is not None:
                dl += potential_deadlocks(m)
                done()
            errors += request_leaks(m)
            done()
            errors += lost_messages(m)
        return dl, errors

    def report(
        self, *, nonadjacent: bool = False, conflicts: list[ExactRace] | None = None,
        columns: bool = False, release: bool = False,
    ) -> Report:
        """The spec's report; ``conflicts`` replaces the on-the-fly exact list;
        ``columns``: its ``races`` as a :class:`RaceTable` (same entries);
        ``release``: a one-shot report (``mpvis check``): the exact detector is
        dropped (``self.exact`` becomes ``None``) once its conflicts are taken,
        before the passes over the whole run (about 45 MB on 1M events), and
        once the report's entries are made the store's event columns are
        emptied but the sites (:meth:`EventStore.release_all_but_sites`: about 60 MB
        on 1M events, not held while the races are confirmed, grouped and
        printed): the model then answers only what the site-pair groups ask
        (:func:`mpvis.analysis.race_groups.model_event_sites`)."""
        if release:  # what the load freed, returned before the conflicts are copied out
            release_freed_memory()  # (and the whole-run passes' arrays mapped from now on)
        exact: RaceTable | Callable[[], RaceTable] | None = None
        if conflicts is not None:
            exact = RaceTable.from_conflicts((r.rank, r.recv, *r.s1, *r.s2) for r in conflicts)
        elif self.exact is not None:  # no tuple per conflict: a quarter million on 1M events
            held = [_narrow(self.exact.conflict_array())]

            def exact_table() -> RaceTable:  # made when joined: the keys let go then
                return RaceTable.from_conflicts(held.pop())
            exact = exact_table
        if release and self.exact is not None:
            self.model.analyzers.remove(self.exact)
            self.exact = None
        if release:  # and the detector's memory
            trim_freed_memory()
        dl, errors = self._deadlocks_and_errors(release)
        store = self.model.store

        def read() -> None:
            """One shot: the store's columns but what the site-pair groups read
            (see above), once the report has read the model."""
            store.release_all_but_sites()
            trim_freed_memory()

        rep = build_report(self.model, nonadjacent=nonadjacent, extra_races=exact,
                           deadlocks=dl, errors=errors, columns=True, consume=True,
                           read=read if release else None)
        if exact is not None:
            exact = None  # its rows are in the report's table (emptied by build_report)
            confirm(rep["races"])
        if not columns:
            rep["races"] = rep["races"].entries()
        return rep
