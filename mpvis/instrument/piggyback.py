"""The piggyback of object messages: a trailer that mpi4py's pickle step adds.

mpi4py pickles every object message (``send``, ``isend``, ``recv``, ``wait``...)
with the functions of its global ``MPI.pickle``.  :func:`install` puts the C
recorder's ``dumps``/``loads`` there (``mpvis/instrument/_crecorder.c``, section
"the piggyback of object messages"): while a traced send is *armed*, ``dumps``
appends 12 bytes after the pickle, the send's ``seq`` and a magic number;
``loads`` reads them back and hands the number to the traced receive.  Since
``pickle.loads`` ignores bytes after the pickle, a receiver that is not traced
still gets the program's object; a message without the trailer (an untraced
sender) gives a ``consume`` without ``send``, which the reader infers by the
spec's non-overtaking rule.  Appending to the fresh pickle costs no copy, where
pickling the pair ``(seq, obj)`` cost a tuple on each side and its pickling:
about a sixth of a 1-byte ping-pong (``benchmarks/overhead_pingpong.py``).

The program keeps the whole ``MPI.pickle`` interface: ``MPI.pickle`` becomes a
:class:`PickleProxy`, so ``MPI.pickle.__init__(dill.dumps, dill.loads)`` (the
usual way to pickle with dill or cloudpickle) makes the trailer wrap *those*
functions, and ``PROTOCOL``/``THRESHOLD``/``dumps``/``loads`` behave as in mpi4py.

:func:`call` (C) runs an mpi4py call with a send armed and/or with every
message loaded meanwhile returned as ``(seq or None, obj[, extra])``, the form
the Python receive paths of :mod:`mpvis.instrument.traced_comm` take apart.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mpi4py import MPI

from mpvis.instrument._crecorder import bind_pickle, call, dumps, loads

__all__ = ["PickleProxy", "call", "install", "stock_pickle"]

_real: MPI.Pickle = MPI.pickle
#: mpi4py's default protocol (``MPI4PY_PICKLE_PROTOCOL`` or the highest), read at import.
_DEFAULT_PROTOCOL = _real.PROTOCOL


class PickleProxy(MPI.Pickle):
    """What the program sees as ``MPI.pickle``: mpi4py's object, with the trailer kept on."""

    def __init__(
        self,
        dumps: Callable[..., bytes] | None = None,
        loads: Callable[..., Any] | None = None,
        protocol: int | None = None,
        threshold: int | None = None,
    ) -> None:
        if protocol is None and (dumps is None or dumps is pickle.dumps):
            protocol = _DEFAULT_PROTOCOL
        _bind(dumps or pickle.dumps, loads or pickle.loads, protocol, threshold)

    def dumps(self, obj: Any) -> bytes:
        return _real.dumps(obj)

    def loads(self, data: Any) -> Any:
        return _real.loads(data)

    def dumps_oob(self, obj: Any) -> tuple[bytes, list[Any]]:
        return _real.dumps_oob(obj)

    def loads_oob(self, data: Any, buffers: Any) -> Any:
        return _real.loads_oob(data, buffers)

    @property
    def PROTOCOL(self) -> int | None:
        return _real.PROTOCOL

    @PROTOCOL.setter
    def PROTOCOL(self, protocol: int | None) -> None:
        _real.PROTOCOL = _DEFAULT_PROTOCOL if protocol is None else protocol

    @property
    def THRESHOLD(self) -> int:
        return _real.THRESHOLD

    @THRESHOLD.setter
    def THRESHOLD(self, threshold: int | None) -> None:
        _real.THRESHOLD = threshold  # type: ignore[assignment]  # mpi4py takes None: default


def _bind(
    inner_dumps: Callable[..., bytes],
    inner_loads: Callable[..., Any],
    protocol: int | None,
    threshold: int | None,
) -> None:
    bind_pickle(inner_dumps, inner_loads, pickle.loads)
    MPI.Pickle.__init__(_real, dumps, loads, protocol, threshold)


def install() -> None:
    """Put the trailer functions in mpi4py's pickle and the proxy in ``MPI.pickle``."""
    _bind(pickle.dumps, pickle.loads, _DEFAULT_PROTOCOL, None)
    MPI.pickle = PickleProxy.__new__(PickleProxy)  # type: ignore[misc]  # mpi4py's stub: Final


@contextmanager
def stock_pickle() -> Iterator[None]:
    """mpi4py's own pickle functions for the duration (for measurements: the
    untraced baseline of ``benchmarks/overhead_pingpong.py``)."""
    protocol, threshold = _real.PROTOCOL, _real.THRESHOLD
    MPI.Pickle.__init__(_real, pickle.dumps, pickle.loads, protocol, threshold)  # type: ignore[arg-type]  # stub: int; None = default
    try:
        yield
    finally:
        MPI.Pickle.__init__(_real, dumps, loads, protocol, threshold)
