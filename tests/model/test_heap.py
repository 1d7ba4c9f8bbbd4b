"""The mmap threshold fixed for a run's big arrays (mpvis.model.heap)."""

from __future__ import annotations

import platform
import sys

import pytest

from mpvis.model import heap
from mpvis.model.store import EventStore


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mallopt")
def test_a_store_fixes_the_threshold_once() -> None:
    EventStore(2)
    assert heap._fixed
    assert heap.fix_mmap_threshold() is True  # again: nothing to do, still fixed
