"""Which races a user does not want to be told about again (no Qt here).

MPVisualizer opens a pop-up for every adjacent race and warns that "an
overwhelming volume of information can be displayed" (paper, section 4);
Xmdb lets users list harmless races in advance.  :class:`RaceSettings` keeps,
per program, the receive sites, ranks and tags muted and the races marked
*intended*, in a small JSON file: ``$XDG_CONFIG_HOME/mpvis/programs/<name>.json``
(``~/.config`` by default; ``MPVIS_CONFIG_DIR`` overrides the directory).

A race pops up when :meth:`RaceSettings.should_notify` says so: its verdict is
``legitimate`` or ``unverified`` (``spurious`` and ``false`` stay in the list
only), it is not intended, and none of its sites, its rank or its tags is muted.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpvis.analysis.race_suppress import config_dir, program_key
from mpvis.analysis.race_suppress import race_identity as _identity
from mpvis.model.races import Race

__all__ = ["RaceSettings", "config_dir", "program_key", "race_identity"]

#: Verdicts that pop up by default (trace format: shown to a user as races).
NOTIFY_VERDICTS = frozenset({"legitimate", "unverified"})


def race_identity(race: Race) -> str:
    """What makes two races "the same" across runs (shared with ``mpvis check``)."""
    return _identity(race.rank, race.comm, race.recvs, race.sites)


@dataclass
class RaceSettings:
    """Muted sites, ranks and tags and intended races of one program."""

    program: str = "unnamed"
    muted_sites: set[str] = field(default_factory=set)
    muted_ranks: set[int] = field(default_factory=set)
    muted_tags: set[int] = field(default_factory=set)
    intended: set[str] = field(default_factory=set)
    path: Path | None = None

    @classmethod
    def load(cls, header: dict[str, Any], directory: Path | None = None) -> RaceSettings:
        """The settings of the program of ``header`` (empty if none saved or unreadable)."""
        key = program_key(header)
        path = (directory or config_dir()) / f"{key}.json"
        out = cls(program=key, path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return out
        if isinstance(data, dict):
            out.muted_sites = {str(s) for s in data.get("muted_sites", [])}
            out.muted_ranks = {int(r) for r in data.get("muted_ranks", []) if _is_int(r)}
            out.muted_tags = {int(t) for t in data.get("muted_tags", []) if _is_int(t)}
            out.intended = {str(s) for s in data.get("intended", [])}
        return out

    def save(self) -> None:
        """Write the file (atomically); errors are ignored: settings are a convenience."""
        if self.path is None:
            return
        data = {
            "program": self.program,
            "muted_sites": sorted(self.muted_sites),
            "muted_ranks": sorted(self.muted_ranks),
            "muted_tags": sorted(self.muted_tags),
            "intended": sorted(self.intended),
        }
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)

    def summary(self) -> str:
        """One line for the status bar: what is muted and where it is saved."""
        return (f"race notifications for {self.program}: {len(self.muted_sites)} sites, "
                f"{len(self.muted_ranks)} ranks, {len(self.muted_tags)} tags muted, "
                f"{len(self.intended)} intended (saved in {self.path})")

    def is_intended(self, race: Race) -> bool:
        return bool(self.intended) and race_identity(race) in self.intended

    def should_notify(self, race: Race, tags: set[int]) -> bool:
        """Pop this race up? ``tags``: the tags of its receives and messages (see module doc)."""
        if race.verdict not in NOTIFY_VERDICTS or self.is_intended(race):
            return False
        # (each setting read only when it silences something: every race of a
        # 1M-event trace is asked while it loads)
        if (self.muted_ranks and race.rank in self.muted_ranks) or tags & self.muted_tags:
            return False
        return not self.muted_sites or not any(
            s is not None and s in self.muted_sites for s in race.sites)


def _is_int(v: object) -> bool:
    return type(v) is int
