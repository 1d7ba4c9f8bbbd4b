"""Test-wide settings.

Property tests explore new random cases on every developer run; under CI
(``CI`` set) they are derandomized, so a submission's CI result does not depend
on the examples drawn that time.  A failure found locally is pinned with
``@example`` next to its test.  No profile times anything (no deadline, no
"too slow" health check): on a shared machine those fail with the load.
"""

from __future__ import annotations

import importlib.util
import os

import pytest
from hypothesis import HealthCheck, settings

# No timing checks anywhere: hypothesis's per-example deadline and its "data
# generation too slow" health check measure the machine's load, not the code.
settings.register_profile("untimed", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("untimed"), derandomize=True,
                          print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "untimed")


@pytest.fixture(autouse=True, scope="session")
def _private_check_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``mpvis check`` run by tests (in process or as a child) caches what it
    found in a directory of the test session, never in the user's
    ``~/.cache/mpvis/checks`` (``mpvis.tracefile.check_cache``)."""
    if "MPVIS_CACHE_DIR" not in os.environ:
        os.environ["MPVIS_CACHE_DIR"] = str(tmp_path_factory.mktemp("check-cache"))


#: Qt (the optional ``gui`` extra) is installed.  Without it (the Qt-free job of
#: scripts/test.sh, docs/qt-optional.md) the window's tests are not collected
#: and every test marked ``gui`` is skipped.
HAVE_QT = all(importlib.util.find_spec(m) is not None for m in ("PySide6", "pyqtgraph"))
collect_ignore_glob = [] if HAVE_QT else ["gui/*"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that launches real ``mpiexec`` is ``slow`` too (seconds per
    launch), so ``pytest -m "not slow"`` is the fast suite (README, "Tests").
    Without Qt, ``gui`` tests are skipped."""
    no_qt = pytest.mark.skip(reason="Qt is not installed (the gui extra)")
    for item in items:
        if item.get_closest_marker("mpi") is not None:
            item.add_marker(pytest.mark.slow)
        if not HAVE_QT and item.get_closest_marker("gui") is not None:
            item.add_marker(no_qt)
