"""The race list's rows as arrays, made into objects only when shown (issue 16).

A 1M-event trace has about 330,000 potential classifier races and a quarter
of a million exact ones.  Listing them as Python objects cost about 150 ms of
the GUI thread per listing (a pass over every race to filter it) and some
100 bytes per event (a :class:`~mpvis.model.races.Race` view and an
:class:`~mpvis.analysis.exact_events.ExactRace` per race, kept).  Here:

* :class:`RaceRows`: classifier races as row ids of the model's
  :class:`~mpvis.model.races.RaceColumns`; :meth:`RaceRows.where` filters them
  with NumPy on the columns (verdict, rank, situation, receives);
* :class:`ExactRows`: exact races as the detector's ``(n, 6)`` conflict array
  (:meth:`~mpvis.analysis.exact_races.ExactRaceDetector.conflict_array`);
* :class:`ShownRows`: what the table shows, a ``Sequence`` of the three parts
  (filtered classifier rows, the on-demand non-adjacent races, exact rows)
  whose items are made when the table asks for them (a ``Race`` view is the
  model's, one per row; an ``ExactRace`` is a small value).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import numpy.typing as npt

from mpvis.analysis.exact_events import ExactRace
from mpvis.model.classifier import VERDICTS
from mpvis.model.races import Race, RaceColumns

IntArray = npt.NDArray[np.int64]
Row = Race | ExactRace
_NONE = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class RaceRows:
    """Rows ``rows`` (ids, in order) of ``table``; ``table`` is ``None`` only when empty."""

    table: RaceColumns | None
    rows: IntArray

    @classmethod
    def of(cls, races: Sequence[Race] | RaceRows) -> RaceRows:
        """``races`` as rows: views of one table (a list of the model's races)."""
        if isinstance(races, RaceRows):
            return races
        if not races:
            return cls(None, _NONE)
        table = races[0].table
        if any(r.table is not table for r in races):
            raise ValueError("races of several tables cannot be listed as rows of one")
        return cls(table, np.fromiter((r.row for r in races), dtype=np.int64, count=len(races)))

    def __len__(self) -> int:
        return len(self.rows)

    def views(self) -> list[Race]:
        """Every row's :class:`Race` view (made now if not yet)."""
        return [] if self.table is None else [self.table[int(i)] for i in self.rows]

    def where(self, verdicts: set[str], rank: int | None, situation: int | None,
              scope: str | None, receive: tuple[int, int] | None = None) -> RaceRows:
        """The rows whose verdict is in ``verdicts``, of ``rank`` and ``situation``
        and ``scope`` (``None``: any), and (``receive`` = ``(rank, seq)``) with that
        receive as one of their two; the columns are read as they are now."""
        t, rows = self.table, self.rows
        if t is None or not len(rows) or (scope is not None and t.scope != scope):
            return RaceRows(t, _NONE)
        codes = [i for i, v in enumerate(VERDICTS) if v in verdicts]
        keep = np.isin(t.verdict.view()[rows], codes)
        if rank is not None or receive is not None:
            ranks, seq1, seq2 = t.receive_keys(rows)
            if rank is not None:
                keep &= ranks == rank
            if receive is not None:
                keep &= (ranks == receive[0]) & ((seq1 == receive[1]) | (seq2 == receive[1]))
        if situation is not None:
            keep &= t.situation.view()[rows] == situation
        return RaceRows(t, rows[keep])


class ExactRows(Sequence[ExactRace]):
    """Exact races as rows of a conflict array (``rank, recv, s1 rank, s1 seq, s2
    rank, s2 seq``), an :class:`ExactRace` made per item asked for.  The array is
    held as ``int32`` when every value fits (ranks and sequence numbers are
    32-bit in the model: the detector's ``int64`` array of a 1M-event trace's
    races was 11 MB of the window)."""

    def __init__(self, conflicts: npt.NDArray[np.integer]) -> None:
        c = conflicts.reshape(-1, 6)
        if c.dtype != np.int32 and (not len(c) or (int(c.min()) >= -(2**31)
                                                   and int(c.max()) < 2**31)):
            c = c.astype(np.int32)
        self.conflicts = c

    def __len__(self) -> int:
        return len(self.conflicts)

    @overload
    def __getitem__(self, i: int) -> ExactRace: ...
    @overload
    def __getitem__(self, i: slice) -> ExactRows: ...
    def __getitem__(self, i: int | slice) -> ExactRace | ExactRows:
        if isinstance(i, slice):
            return ExactRows(self.conflicts[i])
        a, b, c, d, e, f = (int(v) for v in self.conflicts[i])
        return ExactRace(a, b, (c, d), (e, f))

    def __iter__(self) -> Iterator[ExactRace]:
        for a, b, c, d, e, f in self.conflicts.tolist():
            yield ExactRace(a, b, (c, d), (e, f))

    def where(self, rank: int | None, receive: tuple[int, int] | None) -> ExactRows:
        """The races of ``rank`` (``None``: any) and of ``receive`` ``(rank, seq)``."""
        c = self.conflicts
        keep = np.ones(len(c), dtype=bool)
        if rank is not None:
            keep &= c[:, 0] == rank
        if receive is not None:
            keep &= (c[:, 0] == receive[0]) & (c[:, 1] == receive[1])
        return ExactRows(c[keep])

    def position(self, race: ExactRace) -> int:
        """Index of ``race`` (-1: absent)."""
        key = (race.rank, race.recv, *race.s1, *race.s2)
        hit = np.flatnonzero((self.conflicts == np.array(key, dtype=np.int64)).all(axis=1))
        return int(hit[0]) if len(hit) else -1


class ShownRows(Sequence[Row]):
    """The table's rows: classifier rows, then ``extra`` races, then exact rows."""

    def __init__(self, classifier: RaceRows, extra: list[Race], exact: ExactRows) -> None:
        self.classifier, self.extra, self.exact = classifier, extra, exact
        self._n1 = len(classifier)
        self._n2 = self._n1 + len(extra)

    def __len__(self) -> int:
        return self._n2 + len(self.exact)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | list[Row]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("row out of range")
        i %= n
        if i < self._n1:
            assert self.classifier.table is not None
            return self.classifier.table[int(self.classifier.rows[i])]
        if i < self._n2:
            return self.extra[i - self._n1]
        return self.exact[i - self._n2]

    def __iter__(self) -> Iterator[Row]:
        yield from self.classifier.views()
        yield from self.extra
        yield from self.exact

    def position(self, race: Row) -> int:
        """The row showing ``race`` (-1: none); a classifier race is found by its row."""
        if isinstance(race, ExactRace):
            at = self.exact.position(race)
            return -1 if at < 0 else self._n2 + at
        for i, r in enumerate(self.extra):
            if r is race:
                return self._n1 + i
        if race.table is self.classifier.table:
            hit = np.flatnonzero(self.classifier.rows == race.row)
            if len(hit):
                return int(hit[0])
        return -1
