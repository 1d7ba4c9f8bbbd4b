"""On-the-fly exact race detection (Cypher and Leu, sections 3.4 and 4).

:class:`ExactRaceDetector` is an analyzer of the model's stream
(:class:`~mpvis.model.stream.StreamAnalyzer`: :meth:`~ExactRaceDetector.feed_columns`);
it also takes record dicts (:meth:`~ExactRaceDetector.feed`).  It maps records
onto the paper's events as described in :mod:`mpvis.analysis.exact_events` and
reports every match (s1, r1) and send s2 it finds conflicting (the definition
before Theorem 2.2): the execution has a race if and only if it reports at
least one.

Clocks.  Every event and match gets a Type A clock (section 3.1, one 32-bit
component per rank); a record's own component is its ``seq`` + 1.  A match gets
a Type D clock (section 3.4; 0 where a rank has no entry) only if its receive
has a wildcard source, the only ones that can conflict.  The event that rule 3
of section 2.5 puts after a WR is, here, the consume itself, and after a WS the
sender's next communication record (the ``wait`` of a nonblocking send):
records in between are internal events, which order nothing else, so the tests
of Theorem 3.4 give the same answers.

Consistent order.  The paper reads events and matches in an order consistent
with R_h^+ (section 4).  The stream (``mpvis.model.stream``) is only causally
ordered, and a match is learnt from its consume, which may come long after the
match happened (a nonblocking receive waited late) and after events that depend
on it (the sender's event after a WS, later matches R_m-ordered after it).  So
the detector schedules: a match is processed once its send and receive are and
once every earlier open receive of the rank that could precede it in R_m is
matched (or known unmatched: the input ended); a record waits, with the rest of
its rank, for the matches rule 3 makes it depend on.  Knowledge of a match is
taken from a consume as soon as it arrives, even while its rank waits, which
breaks the apparent cycles.  Buffering is bounded by how late consumes come.

Storage (section 4.4).  Per rank only the open receives (posted, not completed)
and the receives open when they were posted are kept, with their matches; of
the completed wildcard-source matches only the latest per (communicator, tag)
(a short list while older open receives may still need an older one), as
Theorems 4.3 and 4.4 allow.  Unmatched sends are kept until the end: the races
they take part in are reported by :meth:`ExactRaceDetector.finish`.

Races with a matched s2 are tested when (s2, r2) is processed (Theorem 4.2):
against the matched wildcard receives open when r2 was posted and the latest
closed one per tag.  The detector may so list only some conflicting pairs;
:func:`mpvis.analysis.exact_offline.all_conflicts` lists them all.

Implementation.  The algorithm runs in C (``mpvis/analysis/_cexact.c``, built by
``pip install``): each record is read once, when it arrives, from the model's
columns (the store's arrays read as buffers; a wait's ``reqs`` from the
store's extras' arrays or dicts, a collective's ``op`` and ``root`` from its
extras) or from its dict, and
clocks are arrays of 32-bit components.  This module is its Python face: the
same contract (``feed`` any batches of the causally ordered stream, ``finish``
at the end of input), results as tuples, report entries or an array.  A record
the model's validation would refuse (a field missing or not an int) raises
``ValueError``/``TypeError`` naming the field; out of memory raises
``MemoryError`` and leaves the detector unusable.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from mpvis.analysis import _cexact
from mpvis.analysis.exact_events import ExactRace, exact_entry
from mpvis.model.collectives import ALL_TO_ALL, FROM_ROOT, TO_ROOT
from mpvis.model.stream import ReleasedColumns
from mpvis.protocol.record_types import Record

__all__ = ["ExactRaceDetector"]

Conflict = tuple[int, int, int, int, int, int]


@contextmanager
def _no_gc() -> Iterator[None]:
    """Build many acyclic objects without the cyclic collector: each of the full
    collections their number triggers walks the whole model (80% of the time
    of 230,000 report entries beside a 1M-event model)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Found(Collection[Conflict]):
    """The conflicts found so far, as a live collection (membership is a hash lookup)."""

    __slots__ = ("_det",)

    def __init__(self, det: _cexact.Detector) -> None:
        self._det = det

    def __contains__(self, key: object) -> bool:
        return self._det.contains(key)

    def __len__(self) -> int:
        return self._det.count()

    def __iter__(self) -> Iterator[Conflict]:
        return iter(self._det.found())


class ExactRaceDetector:
    """Cypher and Leu's on-the-fly race detector over the causally ordered stream."""

    def __init__(self, nprocs: int) -> None:
        self.nprocs = nprocs
        self._det = _cexact.Detector(nprocs, ALL_TO_ALL, FROM_ROOT, TO_ROOT)

    @property
    def races(self) -> list[ExactRace]:
        """The conflicting (match, send) pairs found so far, in discovery order."""
        with _no_gc():
            return [ExactRace(a, b, (c, d), (e, f)) for a, b, c, d, e, f in self._det.found()]

    def report_entries(self) -> list[dict[str, Any]]:
        """``[r.to_report() for r in self.races]``, without the intermediate objects
        (a 1M-event trace has a quarter of a million conflicts)."""
        with _no_gc():
            return [exact_entry(*key) for key in self._det.found()]

    def conflicts(self) -> Collection[Conflict]:
        """Every conflict found so far as ``(rank, recv, s1 rank, s1 seq, s2 rank,
        s2 seq)``, for membership tests (a live view: do not keep it while feeding)."""
        return _Found(self._det)

    def conflict_array(self) -> npt.NDArray[np.int64]:
        """:meth:`conflicts` as a read-only ``(n, 6)`` int64 array, in discovery order (no
        tuples: for the report's columns)."""
        return np.frombuffer(self._det.found_bytes(), dtype=np.int64).reshape(-1, 6)

    def held(self) -> int:
        """How many sends, receives, matches and records the detector holds (section 4.4)."""
        return self._det.held()

    def feed(self, batch: list[Record]) -> None:
        """Take the next records of the causally ordered stream (``stream.py``)."""
        self._det.feed(batch)

    def feed_columns(self, cols: ReleasedColumns) -> None:
        """Exactly ``feed(cols.records())``, read from the store's columns in C
        (no record dict is built)."""
        extras = cols.store.extras
        self._det.feed_columns(cols.buffers(), extras.plain(), cols.named,
                               extras.wait_buffers())

    def finish(self) -> None:
        """End of input: release what waited for unknown matches, test unmatched sends."""
        self._det.finish()
