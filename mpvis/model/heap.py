"""Freed memory handed back to the system (glibc's ``malloc``), for one-shot reports.

glibc serves an allocation above its *mmap threshold* with a mapping of its
own, which ``free`` returns to the system at once; smaller ones come from the
heap, whose free space is reused but seldom returned.  The threshold starts at
128 KiB and, by default, rises to the size of each mapped block freed (up to
32 MiB).  Loading a trace frees many batch-sized NumPy temporaries, so
afterwards arrays of up to 32 MiB (the report's whole-run passes, its race
table) came from the heap, and the free space the load left there stayed
resident beside them: ``mpvis check --json`` of the 1M-event trace peaked
about 16 MiB higher.

:func:`release_freed_memory` gives the heap's free space back and fixes the
threshold at its initial value from then on (which also stops the automatic
rise of the heap's trim threshold).  Fixing it for the load too would cost
more CPU (a fresh mapping, zeroed by the kernel, for each batch's temporaries:
about 1 s more on that trace) for no lower peak.  Elsewhere (no glibc) it does
nothing.

:func:`trim_freed_memory` only gives the free space back (no threshold
change): the store calls it every :data:`TRIM_EVENTS` events appended, so the
holes the batches' temporaries and the columns' moves leave in the heap do
not stay resident for the whole load (on the 1M-event trace the check's peak
fell about 10 MB with a trim every 65,536 events and 4 MB more every 32,768,
for about 0.1 s of system CPU: pages returned are faulted in again), and
``mpvis check`` after each whole-run pass of its report.
"""

from __future__ import annotations

import ctypes
import functools
import sys

#: ``mallopt``'s parameter number of the mmap threshold (glibc's ``malloc.h``).
M_MMAP_THRESHOLD = -3
#: glibc's initial threshold, kept.
MMAP_THRESHOLD = 128 * 1024
#: Events a store appends between two :func:`trim_freed_memory` calls.
TRIM_EVENTS = 1 << 15


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    except (OSError, AttributeError):  # no glibc
        return None
    return libc


def release_freed_memory() -> bool:
    """Return the heap's free space to the system and map big blocks of their
    own from now on (module docstring); whether it could (``False`` without glibc)."""
    libc = _libc()
    if libc is None:
        return False
    fixed = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    libc.malloc_trim(0)
    return bool(fixed)


def trim_freed_memory() -> bool:
    """Return the heap's free space to the system (glibc's ``malloc_trim``),
    thresholds unchanged; whether it could (``False`` without glibc)."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
