"""Checks ``mpvis run`` makes before mpiexec starts (issue 14, item 8).

A mistake the user can see from the command line must fail in a second with
a message naming it, not after the ranks started (an unwritable ``--out``
used to run the program, wait 61 s and exit 0 without naming the path).
:func:`preflight` checks, in this order:

* the program exists: a path (``prog.py``, ``./a.out``) must be a file, a
  bare name of a non-Python program must be on ``PATH``;
* a Python program compiles (a syntax error is named with file:line);
* the trace file ``--out`` (when the run records it here) can be written:
  its directory exists and is writable, and an existing file can be
  replaced.

After the run, :func:`no_mpi_call` tells a program that made no MPI call
(its trace holds only the ranks' ends) from one that found nothing wrong.

Exit statuses of ``mpvis run`` (:data:`EXIT_*`): 0 nothing found, 1 races or
deadlocks found, 2 bad usage (these checks), 3 the program failed,
130 interrupted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tokenize
from pathlib import Path

from mpvis.cli.errors import UserError
from mpvis.model.manager import ModelManager
from mpvis.protocol import records as R

__all__ = [
    "EXIT_FOUND",
    "EXIT_OK",
    "EXIT_PROGRAM_FAILED",
    "EXIT_USAGE",
    "NO_MPI_CALL",
    "check_out",
    "check_program",
    "no_mpi_call",
    "preflight",
]

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_USAGE = 2
EXIT_PROGRAM_FAILED = 3


def check_program(program: list[str]) -> None:
    """The program (``program[0]``) can be started; a Python one compiles."""
    if not program:
        raise UserError("no program given: mpvis run [-n N] [mpiexec options] -- prog.py [args]")
    name = program[0]
    path = Path(name)
    is_python = path.suffix == ".py"
    if is_python or os.sep in name:
        if not path.exists():
            raise UserError(f"no such program: {name}")
        if not path.is_file():
            raise UserError(f"not a program file: {name}")
    elif shutil.which(name) is None and not path.is_file():
        raise UserError(f"no such program: {name} (not a file here, not on PATH)")
    if is_python:
        _compile(path)


def _compile(path: Path) -> None:
    try:
        with tokenize.open(path) as fh:  # honours the coding declaration
            source = fh.read()
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else str(path)
        raise UserError(f"{where}: syntax error: {exc.msg} (nothing was run)") from None
    except ValueError as exc:  # e.g. null bytes
        raise UserError(f"{path}: cannot compile: {exc}") from None


def check_out(out: Path) -> None:
    """The trace file ``out`` can be created (or replaced) before the run starts:
    probed by creating a scratch file beside it (permission bits alone do not
    tell, e.g. for root or on a read-only mount)."""
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise UserError(f"--out {out}: is a directory; give a file name")
    if not parent.is_dir():
        raise UserError(f"--out {out}: directory {parent} does not exist")
    try:
        if out.exists():
            with out.open("ab"):
                pass
        with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{out.name}.", suffix=".probe"):
            pass
    except OSError as exc:
        raise UserError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None


def preflight(program: list[str], out: Path | None) -> None:
    """Every check of the module doc; ``out`` is ``None`` when the run streams
    to a window (nothing is written here)."""
    check_program(program)
    if out is not None:
        check_out(out)


def no_mpi_call(model: ModelManager) -> bool:
    """Did the run's ranks make no MPI call at all (every event a ``final``)?"""
    if model.event_count == 0:
        return True
    return len(model.find(R.FINAL)) == model.event_count


NO_MPI_CALL = (
    "the program made no MPI call: nothing to show (does it use mpi4py, "
    "'from mpi4py import MPI', and run its MPI code when started as a script?)"
)
