"""Races a user marked *intended*, shared by the window and ``mpvis check``.

The window keeps, per program, a settings file
``$XDG_CONFIG_HOME/mpvis/programs/<program>.json`` (``MPVIS_CONFIG_DIR``
overrides the directory) whose ``intended`` list holds race identities
(:func:`race_identity`: rank, communicator and both receive sites, so a mark
survives the next run).  ``mpvis check`` reads the same file for the trace's
program, and ``--suppress FILE`` names another one (CI): a JSON object with
an ``intended`` list, or plain text with one identity per line (``#``
comments).  :func:`mark_suppressed` flags the matching report entries with
``"suppressed": true`` (an optional field of the spec's race entries).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpvis.analysis.race_table import NONE, RaceTable, rows_in
from mpvis.errors import MpvisError

__all__ = [
    "SuppressFileError",
    "config_dir",
    "entry_identity",
    "load_intended",
    "mark_suppressed",
    "program_key",
    "race_identity",
    "settings_path",
]


class SuppressFileError(MpvisError, ValueError):
    """A suppressions file that cannot be read or is not in either format."""


def config_dir() -> Path:
    """The directory of per-program settings files."""
    override = os.environ.get("MPVIS_CONFIG_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mpvis" / "programs"


def program_key(header: dict[str, Any]) -> str:
    """A file-name-safe key for the traced program (its ``program`` or ``demo`` field)."""
    name = str(header.get("program") or header.get("demo") or "unnamed")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.")[:80]
    return slug or "unnamed"


def settings_path(header: dict[str, Any], directory: Path | None = None) -> Path:
    """The settings file of the program of ``header``."""
    return (directory or config_dir()) / f"{program_key(header)}.json"


def race_identity(
    rank: int, comm: object, recvs: Sequence[int], sites: Sequence[str | None]
) -> str:
    """What makes two classifier races "the same" across runs: rank, communicator
    and both receive sites (the receives' seqs when a site is unknown)."""
    s1, s2 = [*sites, None, None][:2]
    if s1 is None or s2 is None:
        return f"rank {rank} comm {comm} recvs {recvs[0]},{recvs[1]}"
    return f"rank {rank} comm {comm} {s1} / {s2}"


def entry_identity(entry: dict[str, Any]) -> str | None:
    """:func:`race_identity` of a classifier report entry; ``None`` for other methods."""
    if entry.get("method", "classifier") != "classifier":
        return None
    return race_identity(int(entry["rank"]), entry.get("comm", 0), entry["recvs"],
                         entry.get("sites") or [None, None])


def load_intended(path: Path) -> set[str]:
    """The identities listed in ``path`` (either format of the module doc)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuppressFileError(f"cannot read {path}: {exc}") from None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SuppressFileError(f"{path}: not valid JSON ({exc})") from None
        items = data.get("intended", []) if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise SuppressFileError(f"{path}: 'intended' must be a list of race identities")
        return {str(s) for s in items}
    lines = (ln.strip() for ln in text.splitlines())
    return {ln for ln in lines if ln and not ln.startswith("#")}


def mark_suppressed(races: Iterable[dict[str, Any]] | RaceTable, intended: set[str]) -> int:
    """Flag the entries whose race is intended; return how many were flagged.

    A classifier entry is intended when its identity is listed; an exact entry
    when its receive is one of an intended classifier race's receives (the
    exact test sees the same race from the receive that matched).  A
    :class:`RaceTable`'s rows are flagged in its ``suppressed`` column.
    """
    if isinstance(races, RaceTable):
        return _mark_table(races, intended)
    entries = list(races)
    covered: set[tuple[int, int]] = set()
    n = 0
    for e in entries:
        ident = entry_identity(e)
        if ident is not None and ident in intended:
            e["suppressed"] = True
            covered.update((int(e["rank"]), int(q)) for q in e["recvs"])
            n += 1
    for e in entries:
        if e.get("method") == "exact" and (int(e["rank"]), int(e["recvs"][0])) in covered:
            e["suppressed"] = True
            n += 1
    return n


def _mark_table(races: RaceTable, intended: set[str]) -> int:
    """:func:`mark_suppressed` on a table's columns."""
    c = races.cols
    rows = np.flatnonzero(c["exact"] == 0)
    names = [None, *races.strings]
    comm = c["comm"][rows].tolist()
    hit = [race_identity(rank, None if k == NONE else k, (r1, r2), (names[s1 + 1], names[s2 + 1]))
           in intended
           for rank, k, r1, r2, s1, s2 in zip(
               c["rank"][rows].tolist(), comm, c["recv1"][rows].tolist(),
               c["recv2"][rows].tolist(), c["site1"][rows].tolist(), c["site2"][rows].tolist(),
               strict=True)]
    chosen = rows[np.array(hit, dtype=bool)] if hit else rows[:0]
    c["suppressed"][chosen] = 1
    covered = np.concatenate([np.stack([c["rank"][chosen], c["recv1"][chosen]], axis=1),
                              np.stack([c["rank"][chosen], c["recv2"][chosen]], axis=1)])
    exact = np.flatnonzero(c["exact"] == 1)
    also = exact[rows_in(np.stack([c["rank"][exact], c["recv1"][exact]], axis=1), covered)]
    c["suppressed"][also] = 1
    return len(chosen) + len(also)
