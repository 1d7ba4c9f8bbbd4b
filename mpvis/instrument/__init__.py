"""mpvis.instrument: what runs inside the traced ranks.

``python -m mpvis.instrument.launch prog.py ARGS`` runs an unmodified mpi4py
program with every MPI call of interest traced (see
:mod:`mpvis.instrument.launch`).  This package's only public function for
programs is :func:`state`; importing it is cheap (no MPI).
"""

from __future__ import annotations

from typing import Any

__all__ = ["state"]

#: The rank's recorder while the program runs under ``launch``; else ``None``.
_recorder: list[Any] = [None]


def state(**variables: Any) -> None:
    """Record program variables for predicates: ``state(x=3, phase="update")``.

    Writes one ``state`` record (trace-format spec, "state") at the caller's
    source line; values should be JSON scalars (others are recorded as their
    ``repr``).  Does nothing when the program does not run under mpvis.
    """
    rec = _recorder[0]
    if rec is not None:
        from mpvis.instrument.recorder import clean_state

        rec.state(clean_state(variables))
