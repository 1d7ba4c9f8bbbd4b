"""The base of every error mpvis raises on purpose: :class:`MpvisError`.

Each layer defines its own errors (a trace file breaking a rule, a bad
record, a refused predicate...) next to the code that raises them, each
derived from :class:`MpvisError` and, where a caller may expect it, from the
built-in class it has always been (``ValueError``, ``OSError``...), so
``except MpvisError`` catches anything mpvis reports and existing handlers
keep working.  This module imports nothing: every layer, the in-rank library
included, may import it.
"""

from __future__ import annotations

__all__ = ["MissingExtraError", "MpvisError"]


class MpvisError(Exception):
    """An error mpvis reports about its input, its environment or its use.

    ``str()`` is a message for a person; subclasses add the details a caller
    needs (a file and line, a rank and seq...)."""


class MissingExtraError(MpvisError, ImportError):
    """An optional package a feature needs is not installed (an extra such as
    ``mpvis[otf2]`` or ``mpvis[pandas]``); ``str()`` says how to install it."""
