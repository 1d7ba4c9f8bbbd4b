"""mpvis: a desktop debugger for message-passing (MPI) programs.

As a library: ``run = mpvis.open("trace.jsonl")`` gives a :class:`mpvis.Run`
(``docs/python-api.md``).  ``open``, ``Run`` and ``MpvisError`` are imported on
first use, so ``import mpvis`` (and the in-rank ``mpvis.instrument``) stays
light: no NumPy, no model.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["MpvisError", "Run", "__version__", "open"]

# Type checkers read __init__.pyi (the same names, typed); import-linter reads only
# this file, so the layers see no import of mpvis.api from the package root.
_LAZY = {"open": "mpvis.api", "Run": "mpvis.api", "MpvisError": "mpvis.errors"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mpvis' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
