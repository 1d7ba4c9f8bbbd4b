"""Compiled MPI programs under mpvis: the PMPI trace library, built per MPI and cached.

``mpvis run -- ./a.out`` preloads ``libmpvis_pmpi.so`` (sources in
``mpvis/instrument/pmpi``) into every rank.  The library must be compiled
against the MPI the program runs with, which is known only when a program is
run (a venv's pip MPICH, a system MPICH or Open MPI, a cluster's module), so
it is **built on first use and cached per MPI**, not at install time: the cache
key is a hash of the sources, the ``mpicc`` used and what ``mpicc -show``
says (its headers and libraries), so a different MPI gets its own build and
an edited source a new one.  The cache lives in ``$MPVIS_CACHE`` or
``$XDG_CACHE_HOME/mpvis`` (default ``~/.cache/mpvis``); a build takes a few
seconds and happens once.

Before launching, :func:`check_program` compares the MPI library the
executable is linked with (its ``DT_NEEDED`` ``libmpi*`` entry) with the one
the trace library links: a program built for another MPI gets a clear error
instead of a crash.  The library checks again in each rank
(``MPI_Get_library_version``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpvis.cli.errors import UserError

__all__ = ["NativeLibrary", "build_library", "check_program", "find_mpicc", "is_native_program"]

SOURCES = Path(__file__).resolve().parent.parent / "instrument" / "pmpi"
LIBRARY = "libmpvis_pmpi.so"
#: Seconds a compile may take.
BUILD_TIMEOUT = 300


@dataclass(frozen=True)
class NativeLibrary:
    """A built trace library and the MPI library it links (``libmpi.so.12``, ...)."""

    path: Path
    mpi_soname: str | None


def is_native_program(program: list[str]) -> bool:
    """Whether ``program[0]`` is a compiled executable (anything but a ``.py`` file)."""
    if not program:
        return False
    first = program[0]
    if first.endswith(".py"):
        return False
    path = Path(first) if "/" in first else Path(shutil.which(first) or first)
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_mpicc(mpiexec: str, explicit: str | None = None) -> str:
    """The ``mpicc`` of the MPI that ``mpiexec`` belongs to (or ``explicit``)."""
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise UserError(f"--mpicc {explicit}: not found")
        return found
    beside = Path(mpiexec).resolve().parent / "mpicc"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    beside = Path(mpiexec).parent / "mpicc"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpicc")
    if not found:
        raise UserError(
            "no mpicc found to build mpvis's trace library for compiled programs: "
            "install the 'mpich' package into this Python's environment, put your MPI's "
            "mpicc on PATH, or give --mpicc"
        )
    return found


def _cache_root() -> Path:
    env = os.environ.get("MPVIS_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mpvis"


def _sources() -> list[Path]:
    return sorted([*SOURCES.glob("*.c"), *SOURCES.glob("*.h")])


def build_library(mpicc: str, *, quiet: bool = False) -> NativeLibrary:
    """The trace library for ``mpicc``'s MPI, from the cache or built now."""
    try:
        show = subprocess.run(
            [mpicc, "-show"], capture_output=True, text=True, timeout=60, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"cannot run {mpicc}: {exc}") from None
    digest = hashlib.sha256()
    digest.update(os.path.realpath(mpicc).encode() + b"\0" + show.encode() + b"\0")
    for src in _sources():
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    target_dir = _cache_root() / "pmpi" / digest.hexdigest()[:20]
    target = target_dir / LIBRARY
    if not target.is_file():
        target_dir.mkdir(parents=True, exist_ok=True)
        with open(target_dir / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.is_file():
                _compile(mpicc, target, quiet=quiet)
    return NativeLibrary(target, _mpi_soname(target))


def _compile(mpicc: str, target: Path, *, quiet: bool) -> None:
    if not quiet:
        print(f"mpvis: building the trace library for {mpicc} (once per MPI) ...", flush=True)
    srcs = [str(p) for p in _sources() if p.suffix == ".c"]
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / LIBRARY
        cmd = [mpicc, "-O2", "-g", "-fPIC", "-shared", "-o", str(out), *srcs, "-lpthread", "-ldl"]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise UserError(f"cannot build the trace library with {mpicc}: {exc}") from None
        if done.returncode != 0 or not out.is_file():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise UserError(
                f"building the trace library with {mpicc} failed "
                f"(a C compiler and the MPI's headers are needed):\n{tail}"
            )
        os.replace(out, target)


_NEEDED = re.compile(rb"(libmpi[a-z0-9_]*\.so[.0-9]*)")
#: Language bindings layered on an MPI's C library (Fortran, C++): not the MPI itself.
_BINDING = re.compile(r"fort|cxx|f08|f90|usempi|mpifh")


def _needed_mpi(path: Path) -> str | None:
    """The MPI C library (``libmpi*``/``libmpich*``) ``path`` is linked with.

    Its dynamic section names it, or only a language binding (``libmpichfort``,
    ``libmpicxx``) that brings it in: then the libraries ``ldd`` resolves tell.
    """
    names = _mpi_names(path)
    core = [n for n in names if not _BINDING.search(n)]
    if core or not names:
        return core[0] if core else None
    ldd = shutil.which("ldd")
    if ldd:
        try:
            out = subprocess.run(
                [ldd, str(path)], capture_output=True, timeout=30, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            out = b""
        core = [m.decode() for m in _NEEDED.findall(out) if not _BINDING.search(m.decode())]
    return core[0] if core else names[0]


def _mpi_names(path: Path) -> list[str]:
    """The ``libmpi*`` entries of ``path``'s dynamic section, in order."""
    readelf = shutil.which("readelf")
    if readelf:
        try:
            out = subprocess.run(
                [readelf, "-d", str(path)], capture_output=True, timeout=30, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            out = b""
        return [m.group(1).decode() for line in out.splitlines()
                if b"(NEEDED)" in line and (m := _NEEDED.search(line))]
    try:  # no binutils: the soname strings in the file itself
        return [m.decode() for m in _NEEDED.findall(path.read_bytes())]
    except OSError:
        return []


def _mpi_soname(lib: Path) -> str | None:
    return _needed_mpi(lib)


def check_program(program: Path, lib: NativeLibrary, mpicc: str) -> None:
    """Refuse a program linked with another MPI than the trace library (clear message)."""
    needed = _needed_mpi(program)
    if needed is None:
        raise UserError(
            f"{program} is not dynamically linked with an MPI library (libmpi*.so): "
            "mpvis traces programs through the MPI profiling interface, which needs a "
            "dynamically linked MPI (build with mpicc, without -static)"
        )
    if lib.mpi_soname and needed != lib.mpi_soname:
        raise UserError(
            f"{program} is linked with {needed}, but the MPI of {mpicc} provides "
            f"{lib.mpi_soname}: build the program with that MPI's mpicc, or run "
            "mpvis with the program's MPI (its mpiexec on PATH, or --mpiexec/--mpicc)"
        )


def rank_command(
    mpiexec: str, nprocs: int | None, options: list[str], lib: NativeLibrary, program: list[str]
) -> list[str]:
    """``mpiexec [-n N] OPTIONS env LD_PRELOAD=LIB PROGRAM ARGS``: only the ranks preload."""
    env = shutil.which("env") or "/usr/bin/env"
    preload = os.pathsep.join(p for p in (str(lib.path), os.environ.get("LD_PRELOAD")) if p)
    n = ["-n", str(nprocs)] if nprocs is not None else []
    return [mpiexec, *n, *options, env, f"LD_PRELOAD={preload}", *program]
