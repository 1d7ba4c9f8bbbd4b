"""The trace reader's error, in a module of its own so that every reader of a
format (:mod:`mpvis.tracefile.reader`, :mod:`mpvis.tracefile.otf2_load`) can
raise it without importing the others (no import cycle)."""

from __future__ import annotations

from pathlib import Path

from mpvis.errors import MpvisError
from mpvis.model.manager import ModelManager

__all__ = ["TraceFileError"]


class TraceFileError(MpvisError):
    """A trace file breaks a rule of the format.  ``str()`` is the message for a user.

    ``truncated``: the file ends early (a compressed stream cut short, as by
    an interrupted run); every complete record before the cut is in ``model``.
    """

    def __init__(self, path: Path, line: int | None, rule: str,
                 model: ModelManager | None = None, *, truncated: bool = False) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {rule}")
        self.path = path
        self.line = line
        self.rule = rule
        self.model = model
        self.truncated = truncated
