"""Big blocks handed back to the system when freed (glibc's ``malloc``).

glibc serves an allocation above its *mmap threshold* with a mapping of its
own, which ``free`` returns to the system at once; smaller ones come from the
heap, whose free space is reused but seldom returned.  The threshold starts at
128 KiB and, by default, rises to the size of each mapped block freed (up to
32 MiB).  Loading a trace frees many batch-sized NumPy temporaries, so
afterwards arrays of up to 32 MiB (a report's race table, a window's layout)
came from the heap, and once freed their memory stayed resident beside the
model: ``mpvis check --json`` of the 1M-event trace peaked 18 MiB higher, and
held 40 MiB more after its report was built, than with the threshold fixed.

:func:`fix_mmap_threshold` fixes it at its initial value (which also stops the
automatic rise of the heap's trim threshold): the process's resident size
stays near what it uses.  Elsewhere (no glibc) it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

#: ``mallopt``'s parameter number of the mmap threshold (glibc's ``malloc.h``).
M_MMAP_THRESHOLD = -3
#: glibc's initial threshold, kept.
MMAP_THRESHOLD = 128 * 1024

_fixed = False


def fix_mmap_threshold() -> bool:
    """Fix the process's mmap threshold at :data:`MMAP_THRESHOLD` (once; later
    calls do nothing); whether it is fixed (``False`` without glibc)."""
    global _fixed
    if _fixed or not sys.platform.startswith("linux"):
        return _fixed
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    _fixed = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1)
    return _fixed
