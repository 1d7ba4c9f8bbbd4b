"""Can the window be shown?  Checked before any Qt import (issue 14, first start).

Qt given no display either picks a platform that shows nothing (an invisible
window that runs forever) or aborts the process from C++ with a message that
blames the wrong library.  So the commands that open the window call
:func:`require_display` first:

* Qt itself must be installed: it is the optional ``gui`` extra
  (:func:`require_qt`; ``pip install mpvis`` alone is the headless core);
* ``QT_QPA_PLATFORM`` set by the user (``offscreen`` in tests, ``vnc``...) is
  taken as it is: whoever set it knows what they get;
* else a display is needed: ``WAYLAND_DISPLAY`` or ``DISPLAY``; none gives
  :class:`~mpvis.cli.errors.UserError` with what to do;
* with ``DISPLAY`` (Qt's ``xcb`` platform), the xcb plugin's shared libraries
  are probed with ``ldd`` and the missing ones are named with the Debian
  packages that hold them (Debian 12 lacks ``libxcb-icccm4`` and
  ``libxcb-keysyms1`` by default, while Qt's own message names
  ``libxcb-cursor0``).

No Qt here: the plugin is found from PySide6's installed files only.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from mpvis.cli.errors import UserError

__all__ = [
    "NO_DISPLAY",
    "NO_DISPLAY_EXIT",
    "PACKAGES",
    "DisplayError",
    "apt_line",
    "missing_libraries",
    "require_display",
    "require_qt",
    "xcb_plugin",
]

#: Exit status of a window command that cannot show a window (a usage error).
NO_DISPLAY_EXIT = 2

NO_QT = (
    "the window needs Qt, which this install of mpvis left out: "
    "pip install 'mpvis[gui]' (from a checkout: pip install -e '.[gui]'); "
    "the headless commands (run, check, demo SCENARIO, replay, explore, export) work without it"
)

NO_DISPLAY = (
    "no display: set DISPLAY (an X server) or WAYLAND_DISPLAY, or use "
    "'mpvis run' / 'mpvis demo' headless ('mpvis render TRACE -o out.png' draws "
    "the diagram without a window)"
)

#: Debian package of each shared library Qt's xcb plugin may lack.
PACKAGES: dict[str, str] = {
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libSM.so.6": "libsm6",
    "libICE.so.6": "libice6",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


class DisplayError(UserError):
    """The window cannot be shown here (exit status :data:`NO_DISPLAY_EXIT`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=NO_DISPLAY_EXIT)


def xcb_plugin() -> Path | None:
    """PySide6's ``libqxcb.so``, or ``None`` when PySide6 or the plugin is absent."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        path = Path(base) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if path.is_file():
            return path
    return None


def missing_libraries(library: Path) -> list[str]:
    """Sonames ``ldd`` reports as not found for ``library`` (and its dependencies),
    in ``ldd``'s order without repeats; empty when ``ldd`` is unavailable."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        out = subprocess.run(
            [ldd, str(library)], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return list(dict.fromkeys(_NOT_FOUND.findall(out)))


def apt_line(sonames: list[str]) -> str:
    """The ``apt-get install`` line for ``sonames`` (unknown ones are left out)."""
    pkgs = sorted({PACKAGES[s] for s in sonames if s in PACKAGES})
    return f"apt-get install -y {' '.join(pkgs)}" if pkgs else ""


def _local_display_missing(display: str) -> str:
    """The X socket a local ``DISPLAY`` (``:N`` or ``unix:N``) names, when it is
    absent; ``""`` for a present socket or a remote display (not probed)."""
    m = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
    if m is None:
        return ""
    sock = Path("/tmp/.X11-unix") / f"X{m.group(1)}"
    return "" if sock.exists() else str(sock)


def require_qt() -> None:
    """Raise :class:`DisplayError` when Qt (the ``gui`` extra: PySide6 and
    pyqtgraph) is not installed; found from the installed files, not imported."""
    if any(importlib.util.find_spec(name) is None for name in ("PySide6", "pyqtgraph")):
        raise DisplayError(NO_QT)


def require_display(
    environ: Mapping[str, str] | None = None, *, plugin: Path | None = None
) -> None:
    """Raise :class:`DisplayError` when the window could not be seen (see module doc).

    ``plugin`` overrides the xcb plugin probed (default: PySide6's).
    """
    require_qt()
    env = os.environ if environ is None else environ
    if env.get("QT_QPA_PLATFORM"):
        return
    if env.get("WAYLAND_DISPLAY"):
        return
    if not env.get("DISPLAY"):
        raise DisplayError(NO_DISPLAY)
    unreachable = _local_display_missing(env["DISPLAY"])
    if unreachable:
        raise DisplayError(
            f"cannot reach display {env['DISPLAY']} (no X server socket {unreachable}): "
            "start the X server or fix DISPLAY, or use 'mpvis run' / 'mpvis demo' headless"
        )
    plugin = plugin or xcb_plugin()
    if plugin is None:
        return
    missing = missing_libraries(plugin)
    if missing:
        line = apt_line(missing)
        fix = f"; on Debian/Ubuntu: {line}" if line else ""
        raise DisplayError(
            f"Qt's X11 plugin cannot load: missing system libraries "
            f"{', '.join(missing)}{fix} (or use 'mpvis run' / 'mpvis demo' headless)"
        )
