"""GUI tests run offscreen, with settings and the rendezvous file in a temp dir."""

from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before any Qt import

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MPVIS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MPVIS_RENDEZVOUS", str(tmp_path / "window.json"))
    yield
