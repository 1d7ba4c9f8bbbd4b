"""How ``mpvis run`` finds a running window: a small JSON file only its user can read.

A window that runs a :class:`~mpvis.collector.central.CentralProcess`
advertises it in ``$XDG_RUNTIME_DIR/mpvis/window.json`` (or
``~/.cache/mpvis/window.json``; ``MPVIS_RENDEZVOUS`` overrides the path):
``{"host", "port", "token", "pid"}``, mode 0600 in a 0700 directory, written
atomically.  The file is ignored when its pid is no longer alive (stale), when
it is not owned by the current user, or when others may read it (the token is
a secret).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from mpvis.collector.auth import Address

__all__ = ["WindowInfo", "advertise", "discover", "rendezvous_path", "withdraw"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowInfo:
    """A running window's central process."""

    address: Address
    token: str
    pid: int


def rendezvous_path() -> Path:
    """Where the rendezvous file lives for the current user."""
    override = os.environ.get("MPVIS_RENDEZVOUS")
    if override:
        return Path(override)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and Path(runtime).is_dir() else Path.home() / ".cache"
    return base / "mpvis" / "window.json"


def advertise(address: Address, token: str, path: Path | None = None) -> Path:
    """Write the rendezvous file for this process's central process; return its path."""
    path = path or rendezvous_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps({"host": address[0], "port": address[1], "token": token, "pid": os.getpid()})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return path


def withdraw(path: Path | None = None) -> None:
    """Remove the rendezvous file if this process wrote it."""
    path = path or rendezvous_path()
    info = _read(path)
    if info is not None and info.pid == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> WindowInfo | None:
    try:
        st = path.stat()
        text = path.read_text()
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("ignoring %s: not private to this user", path)
        return None
    try:
        d = json.loads(text)
        info = WindowInfo((str(d["host"]), int(d["port"])), str(d["token"]), int(d["pid"]))
    except (ValueError, KeyError, TypeError):
        log.warning("ignoring %s: not a rendezvous file", path)
        return None
    return info


def discover(path: Path | None = None) -> WindowInfo | None:
    """The running window's central process, or ``None`` (no file, stale, or unsafe)."""
    info = _read(path or rendezvous_path())
    if info is None or not _pid_alive(info.pid):
        return None
    return info
