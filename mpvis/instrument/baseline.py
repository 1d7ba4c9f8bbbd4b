"""The untraced baseline, in a traced rank: for measuring the trace library's cost.

``benchmarks/overhead_pingpong.py`` alternates rounds on the traced
``COMM_WORLD`` with rounds on an untraced copy of it in the same processes, so
that each pair of rounds shares the machine's state of the moment.  For the
untraced rounds to cost what a run without mpvis costs, everything the trace
library does in the background must stop too: :func:`untraced` restores
mpi4py's own pickle functions (:func:`mpvis.instrument.piggyback.stock_pickle`)
and pauses the flusher thread (:meth:`mpvis.instrument.transport.Flusher.paused`),
which otherwise wakes every few milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from mpvis.instrument.piggyback import stock_pickle
from mpvis.instrument.runtime import current

__all__ = ["untraced"]


@contextmanager
def untraced() -> Iterator[None]:
    """Stock pickle functions and no flusher activity for the duration."""
    with ExitStack() as stack:
        stack.enter_context(stock_pickle())
        runtime = current()
        if runtime is not None:
            stack.enter_context(runtime.flusher.paused())
        yield
