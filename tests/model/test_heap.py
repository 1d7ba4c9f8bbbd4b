"""Freed memory returned to the system for one-shot reports (mpvis.model.heap)."""

from __future__ import annotations

import platform
import sys

import pytest

from mpvis.model.heap import release_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mallopt and malloc_trim")
def test_release_fixes_the_threshold_with_glibc() -> None:
    assert release_freed_memory() is True
    assert release_freed_memory() is True  # again: still accepted
