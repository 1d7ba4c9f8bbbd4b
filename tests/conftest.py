"""Test-wide settings.

Property tests explore new random cases on every developer run; under CI
(``CI`` set) they are derandomized, so a submission's CI result does not depend
on the examples drawn that time.  A failure found locally is pinned with
``@example`` next to its test.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that launches real ``mpiexec`` is ``slow`` too (seconds per
    launch), so ``pytest -m "not slow"`` is the fast suite (README, "Tests")."""
    for item in items:
        if item.get_closest_marker("mpi") is not None:
            item.add_marker(pytest.mark.slow)
