"""``mpvis demo``: listing, errors, the window hook, headless recording, a running window."""

from __future__ import annotations

import json
import sys
import threading
import types
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mpvis.cli.main import main
from mpvis.collector.central import CentralProcess
from mpvis.collector.rendezvous import advertise
from mpvis.sim import api


@pytest.fixture(autouse=True)
def no_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the rendezvous file at a private place (no real window is found)."""
    path = tmp_path / "rv" / "window.json"
    monkeypatch.setenv("MPVIS_RENDEZVOUS", str(path))
    return path


def multiset(records: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(r, sort_keys=True) for r in records)


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_list_names_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--list"]) == 0
    out = capsys.readouterr().out
    for name in api.scenario_names():
        assert name in out
    assert main(["demo", "--list", "false_race"]) == 0
    assert "spurious" in capsys.readouterr().out


def test_unknown_scenario_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "nope"]) == 2
    assert "showcase" in capsys.readouterr().err


@pytest.mark.gui  # Qt installed; the window module itself is faked
def test_gui_without_the_window_module_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # a display is there
    monkeypatch.setitem(sys.modules, "mpvis.gui.app", None)  # import fails
    assert main(["demo", "--gui"]) == 2
    assert "window is not available" in capsys.readouterr().err


@pytest.mark.gui  # Qt installed; the window module itself is faked
def test_no_arguments_open_the_window_on_the_showcase(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    fake = types.ModuleType("mpvis.gui.app")
    fake.run_demo_window = lambda *args: calls.append(args) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mpvis.gui.app", fake)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # a display is there
    assert main([]) == 0
    assert main(["demo", "ring", "--gui", "--seed", "3", "--speed", "2"]) == 0
    assert calls == [("showcase", 0, 1.0), ("ring", 3, 2.0)]


def test_headless_records_the_trace_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "race.jsonl"
    code = main(["demo", "wildcard_race", "--seed", "1", "--out", str(out)])
    assert code == 1  # races were found
    assert multiset(read_trace(out)) == multiset(api.simulate("wildcard_race", 1)[1])
    assert "demo/wildcard_race.py" in capsys.readouterr().out  # the races cite their sites


def test_streams_into_a_running_window(no_window: Path, tmp_path: Path) -> None:
    ended = threading.Event()
    journal = tmp_path / "window.jsonl"
    cp = CentralProcess(token="tok", journal_path=journal, on_run_end=lambda i: ended.set())
    cp.start()
    try:
        advertise(cp.address, cp.token, no_window)
        assert main(["demo", "ring", "--speed", "0"]) == 0
        assert ended.wait(30)
    finally:
        cp.stop()
    assert multiset(read_trace(journal)) == multiset(api.simulate("ring", 0)[1])
