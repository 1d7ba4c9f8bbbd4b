"""First start (issue 14, item 1): no display is said, not run as an invisible window."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpvis.cli.display import DisplayError, apt_line, missing_libraries, require_display

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_traces" / "ring.jsonl"


def _headless_env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["MPVIS_RENDEZVOUS"] = str(tmp_path / "window.json")
    env["MPVIS_CONFIG_DIR"] = str(tmp_path / "config")
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [[], ["open"], ["open", str(SAMPLE)], ["demo", "--gui"], ["demo", "ring", "--gui"]]
)
@pytest.mark.gui  # with Qt installed, the display is what is checked
def test_window_commands_without_display_say_so_and_exit(
    tmp_path: Path, argv: list[str]
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mpvis", *argv],
        env=_headless_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,  # before the fix this ran an invisible window forever
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "no display: set DISPLAY" in proc.stderr
    assert "mpvis run" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "window.json").exists()  # nothing advertised


@pytest.mark.slow
@pytest.mark.gui  # with Qt installed, the display is what is checked
def test_unreachable_local_display_is_named(tmp_path: Path) -> None:
    env = _headless_env(tmp_path)
    env["DISPLAY"] = ":987"  # no X server has this socket
    proc = subprocess.run(
        [sys.executable, "-m", "mpvis", "open"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 2 and "cannot reach display :987" in proc.stderr


@pytest.mark.gui  # with Qt installed, the display is what is checked
def test_platform_set_by_the_user_is_taken_as_is() -> None:
    require_display({"QT_QPA_PLATFORM": "offscreen"})
    require_display({"WAYLAND_DISPLAY": "wayland-0"})
    with pytest.raises(DisplayError, match="no display"):
        require_display({})


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("ldd") is None,
                    reason="needs a C compiler and ldd")
@pytest.mark.gui  # with Qt installed, the display is what is checked
def test_missing_plugin_libraries_are_named_with_their_packages(tmp_path: Path) -> None:
    """A real plugin-like library linked against libraries that are then removed:
    ``ldd`` reports them, and the message names them and the apt line."""
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (tmp_path / "dep.c").write_text("int dep_icccm(void) { return 1; }\n")
    (tmp_path / "dep2.c").write_text("int dep_keysyms(void) { return 2; }\n")
    (tmp_path / "plug.c").write_text(
        "int dep_icccm(void); int dep_keysyms(void);\n"
        "int plug(void) { return dep_icccm() + dep_keysyms(); }\n"
    )
    # sonames no system has: the real xcb ones may be installed here
    for src, soname in (("dep.c", "libmpvis-absent-a.so.4"), ("dep2.c", "libmpvis-absent-b.so.1")):
        subprocess.run(
            ["cc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(libdir / soname),
             str(tmp_path / src)], check=True, timeout=60)
    plug = tmp_path / "libqxcb.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(plug), str(tmp_path / "plug.c"),
         str(libdir / "libmpvis-absent-a.so.4"), str(libdir / "libmpvis-absent-b.so.1")],
        check=True, timeout=60)
    shutil.rmtree(libdir)
    missing = missing_libraries(plug)
    assert missing == ["libmpvis-absent-a.so.4", "libmpvis-absent-b.so.1"]
    assert apt_line(missing) == ""  # no package known for them
    assert apt_line(["libxcb-keysyms.so.1", "libxcb-icccm.so.4", "libx.so"]) == (
        "apt-get install -y libxcb-icccm4 libxcb-keysyms1")
    x11 = Path("/tmp/.X11-unix")
    displays = sorted(p.name[1:] for p in x11.glob("X*")) if x11.is_dir() else []
    env = {"DISPLAY": f":{displays[0]}" if displays else "remote:0"}
    with pytest.raises(DisplayError) as err:
        require_display(env, plugin=plug)
    text = str(err.value)
    assert "missing system libraries libmpvis-absent-a.so.4, libmpvis-absent-b.so.1" in text


def test_readme_has_the_apt_line() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "apt-get install -y libxcb-icccm4 libxcb-keysyms1" in readme


# A Qt-free install (``pip install mpvis``, no ``gui`` extra): Qt is hidden from
# the child with a ``None`` entry in ``sys.modules`` (what ``find_spec`` reports
# for a module that is not there), so this runs the same with Qt installed.
NO_QT_MAIN = (
    "import sys; sys.modules['PySide6'] = None; sys.modules['pyqtgraph'] = None; "
    "from mpvis.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [[], ["open"], ["demo", "--gui"], ["render", "R", "-o", "x.png"]])
def test_window_commands_without_qt_name_the_extra(tmp_path: Path, argv: list[str]) -> None:
    argv = [str(SAMPLE) if a == "R" else a for a in argv]
    env = _headless_env(tmp_path)
    env["QT_QPA_PLATFORM"] = "offscreen"  # a display is there: Qt is what is missing
    proc = subprocess.run(
        [sys.executable, "-c", NO_QT_MAIN, *argv],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'mpvis[gui]'" in proc.stderr
    assert "Traceback" not in proc.stderr
