"""The rendezvous file through which ``mpvis run`` finds a running window."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from mpvis.collector import rendezvous
from mpvis.collector.central import CentralProcess


def test_advertise_discover_withdraw(tmp_path: Path) -> None:
    path = tmp_path / "mpvis" / "window.json"
    central = CentralProcess(journal_dir=tmp_path).start()
    try:
        assert central.advertise(path) == path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        info = rendezvous.discover(path)
        assert info is not None
        assert info.address == central.address and info.token == central.token
        assert info.pid == os.getpid()
        central.withdraw()
        assert not path.exists() and rendezvous.discover(path) is None
    finally:
        central.stop()


def test_a_dead_window_is_stale(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = tmp_path / "window.json"
    rendezvous.advertise(("127.0.0.1", 1), "t", path)
    data = json.loads(path.read_text())
    data["pid"] = int(dead.stdout)
    path.write_text(json.dumps(data))
    assert rendezvous.discover(path) is None


def test_a_file_others_can_read_is_ignored(tmp_path: Path) -> None:
    path = rendezvous.advertise(("127.0.0.1", 1), "t", tmp_path / "window.json")
    assert rendezvous.discover(path) is not None
    path.chmod(0o644)
    assert rendezvous.discover(path) is None


def test_garbage_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "window.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"{not json")
    os.close(fd)
    assert rendezvous.discover(path) is None


def test_the_path_follows_the_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("MPVIS_RENDEZVOUS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert rendezvous.rendezvous_path() == tmp_path / "mpvis" / "window.json"
    monkeypatch.setenv("MPVIS_RENDEZVOUS", str(tmp_path / "x.json"))
    assert rendezvous.rendezvous_path() == tmp_path / "x.json"
