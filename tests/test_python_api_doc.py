"""docs/python-api.md's session runs as a doctest: CI fails when the doc drifts."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_python_api_doc_session(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    monkeypatch.chdir(ROOT)  # the session opens sample_traces/... from the repository's root
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.attempted >= 30
    assert result.failed == 0
