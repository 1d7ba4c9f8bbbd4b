"""Never lose a run, end to end (issue 14, item 5): a real ``mpvis run`` into a
window's central process, stopped from the window; a window killed by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpvis.collector.mpiexec import find_mpiexec
from mpvis.collector.rendezvous import rendezvous_path

HANG = """
from mpi4py import MPI
MPI.COMM_WORLD.recv(source=MPI.ANY_SOURCE, tag=5)
"""


@pytest.mark.mpi
@pytest.mark.timeout(180)
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_stop_from_the_window_keeps_the_run_in_out(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.app import open_live_window
    from mpvis.gui.keep_run import stop_run

    win, live = open_live_window()
    qtbot.addWidget(win)
    live.central.advertise(rendezvous_path())  # offscreen windows do not advertise
    (tmp_path / "hang.py").write_text(HANG)
    out = tmp_path / "kept.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpvis", "run", "-n", "2", "--out", str(out), "--", "hang.py"],
        cwd=tmp_path, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        qtbot.waitUntil(lambda: win.model is not None and win.journal is not None
                        and win.model.event_count >= 2, timeout=60000)
        assert stop_run(win)
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 130, err
        assert "the window asked to stop the run" in err
        assert f"the window journals this run to {win.journal}" in err
        assert f"trace written to {out}" in err
        assert out.read_bytes() == win.journal.read_bytes()
        assert b'"kind":"recv"' in out.read_bytes()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        win.close_confirmed = True
        live.central.withdraw()
        live.stop()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("argv", [["open"], ["demo", "ring", "--gui", "--speed", "0"]])
def test_sigterm_removes_the_windows_temporary_files(tmp_path: Path, argv: list[str]) -> None:
    """Also with a live run not saved (the demo): SIGTERM does not wait for an
    answer to the window's question."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TMPDIR=str(tmp),
               MPVIS_RENDEZVOUS=str(tmp_path / "w.json"), MPVIS_CONFIG_DIR=str(tmp_path / "c"))
    proc = subprocess.Popen([sys.executable, "-m", "mpvis", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob("mpvis-live-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(tmp.glob("mpvis-live-*")), "the window never started its central process"
        time.sleep(3)  # in the event loop (the demo streamed in)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert not list(tmp.glob("mpvis-live-*"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


RECV_RECV = """
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.recv(source=1 - comm.Get_rank(), tag=1)
"""


@pytest.mark.mpi
@pytest.mark.timeout(180)
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_the_terminal_hears_of_a_deadlock_found_in_the_window(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from mpvis.gui.app import open_live_window
    from mpvis.gui.keep_run import stop_run

    win, live = open_live_window()
    qtbot.addWidget(win)
    live.central.advertise(rendezvous_path())
    (tmp_path / "dl.py").write_text(RECV_RECV)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpvis", "run", "-n", "2", "--", "dl.py"],
        cwd=tmp_path, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        qtbot.waitUntil(lambda: win.analyses is not None and win.analyses.deadlock is not None
                        and bool(win.analyses.deadlock.deadlocks), timeout=60000)
        qtbot.wait(1500)  # the notice travels to the run's terminal
        assert stop_run(win)
        _, err = proc.communicate(timeout=90)
        assert "the window found a deadlock (p2p, ranks 0, 1)" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        win.close_confirmed = True
        live.central.withdraw()
        live.stop()
