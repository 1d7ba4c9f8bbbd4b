"""Launching the traced program with ``mpiexec``, and stopping it without orphans.

``mpvis run`` runs ``mpiexec -n N [options] <python> -m mpvis.instrument.launch
prog.py args`` in its own session (process group), so that stopping the run
(Ctrl-C, or a failure of mpvis) reaches mpiexec and every local rank at once:
SIGINT first (MPICH's mpiexec forwards it to the ranks), then SIGTERM, then
SIGKILL, each after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import mpvis

__all__ = ["find_mpiexec", "launch", "rank_command", "stop_group"]

#: The module that installs the interposition in every rank (the in-rank library).
LAUNCH_MODULE = "mpvis.instrument.launch"


def find_mpiexec(explicit: str | None = None) -> str | None:
    """``explicit``, else the ``mpiexec`` next to this Python (the ``mpich`` package),
    else the first on ``PATH``; ``None`` if there is none."""
    if explicit:
        return shutil.which(explicit) or (explicit if Path(explicit).is_file() else None)
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


def rank_command(
    mpiexec: str,
    nprocs: int | None,
    options: Sequence[str],
    program: Sequence[str],
    module: str = LAUNCH_MODULE,
) -> list[str]:
    """The full command line: every rank runs the program under the in-rank
    library (``module``: the trace library, or the record/replay launcher)."""
    n = ["-n", str(nprocs)] if nprocs is not None else []
    return [mpiexec, *n, *options, sys.executable, "-m", module, *program]


#: Run before mpiexec, in its process (then exec'd): SIGTERM when the launching
#: thread's process dies, whatever kills it (``PR_SET_PDEATHSIG`` survives exec).
#: A wrapper rather than ``preexec_fn``, which is unsafe in a process with threads.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)\n"  # 1: PR_SET_PDEATHSIG
    "if os.getppid() != int(sys.argv[1]):\n"  # the parent died before prctl
    "    sys.exit(143)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def launch(command: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start ``command`` in a new session; this mpvis's package is on the ranks' path.

    On Linux ``command`` gets SIGTERM if this process dies (even by SIGKILL):
    MPICH's mpiexec forwards it to the ranks, which ship or spill their records
    and leave (:mod:`mpvis.instrument.transport`), so nothing of the run
    outlives it.  The process keeps the pid of ``Popen`` (exec).
    """
    env = dict(env)
    root = str(Path(mpvis.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    argv = list(command)
    if sys.platform.startswith("linux"):
        argv = [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv]
    return subprocess.Popen(argv, env=env, start_new_session=True)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def stop_group(proc: subprocess.Popen[bytes], grace: float = 3.0) -> int:
    """Stop mpiexec and its ranks (SIGINT, SIGTERM, SIGKILL); return its exit status."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        _signal_group(proc, sig)
        try:
            proc.wait(grace)
            break
        except subprocess.TimeoutExpired:
            continue
    # Ranks that outlived mpiexec in its group.
    _signal_group(proc, signal.SIGKILL)
    return proc.wait()
