"""Go to an event, a rank or a program site (issue 14, item 9); Qt-free.

:func:`resolve` reads what a user types in the window's *Go to* box:

* ``3:17`` - event 17 of rank 3 (the ``rank:seq`` notation used everywhere);
* ``rank 5``, ``r5`` or ``5`` - rank 5's row;
* anything else - a program site: every event whose ``site`` ends with the
  text (``ring.py:30``) or, failing that, contains it (``ring.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from mpvis.errors import MpvisError
from mpvis.model.manager import ModelManager

__all__ = ["GotoError", "Target", "resolve"]

_EVENT = re.compile(r"\s*(\d+)\s*:\s*(\d+)\s*")
_RANK = re.compile(r"\s*(?:rank\s*|r)?(\d+)\s*", re.IGNORECASE)


class GotoError(MpvisError, ValueError):
    """The text names nothing in the run (the message says why)."""


@dataclass
class Target:
    """What to show: ``kind`` is ``"event"``, ``"rank"`` or ``"site"``."""

    kind: str
    rank: int | None = None
    events: list[int] = field(default_factory=list)  # global indices
    label: str = ""


def resolve(m: ModelManager, text: str) -> Target:
    """The :class:`Target` that ``text`` names in ``m`` (see module doc)."""
    if not text.strip():
        raise GotoError("type rank:seq, a rank, or a site such as file.py:30")
    ev = _EVENT.fullmatch(text)
    if ev is not None:
        rank, seq = int(ev.group(1)), int(ev.group(2))
        if rank >= m.nprocs:
            raise GotoError(f"no rank {rank}: the run has ranks 0..{m.nprocs - 1}")
        if seq >= m.count(rank):
            raise GotoError(f"rank {rank} has events 0..{m.count(rank) - 1}, not {seq}")
        return Target("event", rank, [m.gidx(rank, seq)], f"{rank}:{seq}")
    rk = _RANK.fullmatch(text)
    if rk is not None:
        rank = int(rk.group(1))
        if rank >= m.nprocs:
            raise GotoError(f"no rank {rank}: the run has ranks 0..{m.nprocs - 1}")
        return Target("rank", rank, [], f"rank {rank}")
    want = text.strip()
    sites = m.sites
    ids = [i for i, s in enumerate(sites) if s.endswith(want)]
    if not ids:
        ids = [i for i, s in enumerate(sites) if want in s]
    if not ids:
        raise GotoError(f"no event at a site matching {want!r}")
    codes = m.c_site.view()
    events = np.flatnonzero(np.isin(codes, np.asarray(ids, dtype=codes.dtype)))
    return Target("site", None, [int(g) for g in events], f"{len(events)} events at {want}")
