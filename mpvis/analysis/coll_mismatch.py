"""Collective argument mismatches as report errors, whether or not the run hung.

The comparison itself is :mod:`mpvis.analysis.deadlock_collectives` (the
n-th collective of every rank on a communicator against the first rank's:
Roy et al., Sec. III, cases 1 and 2; :func:`signature_differences`).  MPI
does not always hang on a mismatch (MPICH may finish a root or reduction-op
mismatch with wrong data, see ``shared/guides/mpi.md``), so every mismatch
is an error (``collective_mismatch``), and it is also a deadlock only while
one of its ranks never got past the mismatched call (:func:`completed`).
"""

from __future__ import annotations

from collections.abc import Iterable

from mpvis.analysis.deadlock_report import Deadlock
from mpvis.model.manager import ModelManager

__all__ = ["MISMATCH_CHECKS", "completed", "mismatch_errors"]

#: ``Deadlock.check`` values of argument and order mismatches.
MISMATCH_CHECKS = frozenset({"collective-order", "collective-args"})


def completed(m: ModelManager, d: Deadlock) -> bool:
    """Whether every rank of the mismatch got past its call (a later event, or ``final``)."""
    return all(m.finished[r] or m.count(r) > s + 1 for r, s in d.events)


def mismatch_errors(m: ModelManager, found: Iterable[Deadlock]) -> list[dict[str, object]]:
    """One ``collective_mismatch`` error per mismatch the deadlock monitor found.

    Each: ``kind``, ``ranks``, ``events`` (``["rank:seq"]`` of every rank's
    ``coll``), ``check`` (``collective-order`` or ``collective-args``),
    ``completed`` (the run got past it) and ``reason``.
    """
    out: list[dict[str, object]] = []
    for d in found:
        if d.check not in MISMATCH_CHECKS:
            continue
        out.append({
            "kind": "collective_mismatch",
            "ranks": list(d.ranks),
            "events": [f"{r}:{s}" for r, s in d.events],
            "check": d.check,
            "completed": completed(m, d),
            "reason": d.reason,
        })
    return out
