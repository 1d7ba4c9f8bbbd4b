"""A binary columnar cache of what ``mpvis check`` found in a trace.

Checking a million-event trace takes tens of seconds; checking it again (with
other ``--suppress`` files, ``--summary``, ``--json``) reads what the first
check found from this cache instead.  Contract:

* one NumPy ``.npz`` file per trace (and per set of options that change the
  report: ``--nonadjacent``, ``--all-conflicts``) in ``~/.cache/mpvis/checks``
  (``$XDG_CACHE_HOME``; ``MPVIS_CACHE_DIR`` overrides the directory), named by
  a hash of the trace's absolute path and the options;
* it is used only if it names the trace's current size and modification time,
  this :data:`FORMAT`, and the same analysis code (a stamp of the source files
  of the model, the analyses, the protocol and the trace reader: any change
  of them invalidates every cache);
* it is read with ``np.load(allow_pickle=False)`` (no pickle, no code runs);
  a cache that is unreadable, inconsistent or of another format is ignored
  with a note on stderr and written again; writing is atomic (a temporary
  file renamed) and a failed write is a note, never an error;
* traces smaller than :data:`MIN_BYTES` (``MPVIS_CACHE_MIN_BYTES``) are not
  cached: they check in about a second; the caches of the directory take at
  most :data:`MAX_BYTES` (the least recently written go first); a 1M-event
  trace's takes about 2 MB (compressed ``.npz``).

What is stored: the report's :class:`~mpvis.analysis.race_table.RaceTable`
(its columns as they are, strings as indices into its string table), with
each entry's site-pair group (:mod:`mpvis.analysis.race_groups`) computed
without suppression marks, the groups, and the report's other parts
(deadlocks, errors, ranks: short lists) as UTF-8 JSON.  A report whose races
are not a table is not cached.  Suppression marks (``--suppress``, the
window's settings) are applied after reading, as on a fresh check, so the
output is the same byte for byte.  Nothing is turned into a dict per race:
the cached check prints from the columns as a fresh one does.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import orjson

from mpvis.analysis import race_table
from mpvis.analysis.race_table import RaceTable

__all__ = ["FORMAT", "MAX_BYTES", "MIN_BYTES", "Cached", "cache_path", "load", "save"]

#: Version of the cache's content; a cache of another version is ignored.
FORMAT = 2
#: Traces smaller than this many bytes are not cached.
MIN_BYTES = 4 << 20
#: The caches of a directory take at most this many bytes together: the least
#: recently written ones are deleted first.
MAX_BYTES = 1 << 30

Report = dict[str, Any]
#: The report (its ``races`` a :class:`RaceTable` with each row's ``group``) and
#: its groups, both before suppression marks.
Cached = tuple[Report, list[dict[str, Any]]]


def min_bytes() -> int:
    """:data:`MIN_BYTES`, or ``MPVIS_CACHE_MIN_BYTES`` when set to an integer."""
    try:
        return int(os.environ.get("MPVIS_CACHE_MIN_BYTES", MIN_BYTES))
    except ValueError:
        return MIN_BYTES


def cache_dir() -> Path:
    """Where caches live (module docstring)."""
    override = os.environ.get("MPVIS_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mpvis" / "checks"


def _options_text(options: dict[str, object]) -> str:
    return ",".join(f"{k}={options[k]}" for k in sorted(options))


def cache_path(trace: str | Path, options: dict[str, object]) -> Path:
    """The cache file of ``trace`` checked with ``options``."""
    key = f"{Path(trace).resolve()}|{_options_text(options)}"
    return cache_dir() / (hashlib.sha256(key.encode()).hexdigest()[:40] + ".npz")


def _code_stamp() -> str:
    """A hash of the names, sizes and modification times of the source files
    whose change may change a report (and of the C extensions among them, such
    as the exact race detector, ``analysis/_cexact.c``, as built)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for sub in ("model", "analysis", "protocol", "tracefile"):
        files = [f for pattern in ("*.py", "*.c", "*.so") for f in (root / sub).glob(pattern)]
        for f in sorted(files):
            st = f.stat()
            h.update(f"{sub}/{f.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def _meta(trace: Path, options: dict[str, object]) -> dict[str, object]:
    st = trace.stat()
    return {"format": FORMAT, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "options": _options_text(options), "code": _code_stamp()}


def _note(text: str) -> None:
    print(f"mpvis: note: {text}", file=sys.stderr)


def _json_array(value: object) -> npt.NDArray[np.uint8]:
    return np.frombuffer(orjson.dumps(value), dtype=np.uint8)


# ------------------------------------------------------------------ writing
def save(trace: str | Path, options: dict[str, object], report: Report,
         groups: list[dict[str, Any]]) -> bool:
    """Write the cache of ``trace``: ``report`` as built before suppression marks,
    its races a table with each row's ``group``, and ``groups`` computed on it
    unmarked.  Returns whether a cache was written (module docstring)."""
    path = Path(trace)
    races = report.get("races")
    try:
        if path.stat().st_size < min_bytes() or not isinstance(races, RaceTable):
            return False
        rest = {k: v for k, v in report.items() if k != "races"}
        arrays = {
            **{f"race_{c}": a for c, a in races.cols.items()},
            "meta": _json_array(_meta(path, options)),
            "strings": _json_array(races.strings),
            "rest": _json_array(rest),
            "keys": _json_array(list(report)),
            "groups": _json_array(groups),
        }
    except (TypeError, OSError):  # orjson refuses a value: not cached
        return False
    out = cache_path(path, options)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                _write_npz(f, arrays)
            os.replace(tmp, out)
            _prune(out.parent, keep=out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        _note(f"could not write the check cache {out}: {exc}")
        return False
    return True


def _write_npz(f: IO[bytes], arrays: dict[str, npt.NDArray[Any]]) -> None:
    """``np.savez_compressed`` at deflate level 1: what ``np.load`` reads, written
    in a fifth of the time (0.45 s -> 0.09 s for a 1M-event trace's report) for
    a file a quarter larger (1.7 -> 2.1 MB)."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(a), allow_pickle=False)


def _prune(directory: Path, keep: Path) -> None:
    """Delete the least recently written caches while they take more than
    :data:`MAX_BYTES` together (never ``keep``, the one just written)."""
    files = []
    for f in directory.glob("*.npz"):
        try:
            st = f.stat()
        except OSError:
            continue
        files.append((st.st_mtime_ns, st.st_size, f))
    total = sum(size for _, size, _ in files)
    for _, size, f in sorted(files):
        if total <= MAX_BYTES:
            break
        if f != keep:
            f.unlink(missing_ok=True)
            total -= size


# ------------------------------------------------------------------ reading
def _json(arr: npt.NDArray[Any]) -> Any:
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise ValueError("not a JSON byte array")
    return orjson.loads(arr.tobytes())


def _consistent(cols: dict[str, npt.NDArray[Any]], strings: object, ngroups: int) -> bool:
    """Whether the columns have one length, their types, and indices in range."""
    n = len(cols["exact"])
    if not isinstance(strings, list) or not all(isinstance(x, str) for x in strings):
        return False
    if any(a.ndim != 1 or len(a) != n or a.dtype != np.dtype(race_table.column_dtype(c))
           for c, a in cols.items()):
        return False
    if n == 0:
        return True
    groups = cols["group"]
    return bool(groups.min() >= 0 and groups.max() < ngroups
                and all(cols[c].min() >= -1 and cols[c].max() < len(strings)
                        for c in race_table.STRING_COLUMNS)
                and np.isin(cols["exact"], (0, 1)).all()
                and np.isin(cols["confirmed"], (-1, 0, 1)).all()
                and not cols["suppressed"].any())


def load(trace: str | Path, options: dict[str, object]) -> Cached | None:
    """The cached report of ``trace`` (before suppression marks), its groups
    (unmarked) and each race's group, or ``None`` (no valid cache: module
    docstring)."""
    path = Path(trace)
    try:
        out = cache_path(path, options)
        if not path.is_file() or path.stat().st_size < min_bytes() or not out.is_file():
            return None  # no trace (the check itself says so), small, or never cached
    except OSError:
        return None
    try:
        with np.load(out, allow_pickle=False) as z:
            meta = _json(z["meta"])
            if meta != _meta(path, options):
                return None  # stale: the trace or the code changed
            strings = _json(z["strings"])
            rest = _json(z["rest"])
            keys = _json(z["keys"])
            groups = _json(z["groups"])
            cols = {c: z[f"race_{c}"] for c in race_table.COLUMNS}
        if (not isinstance(rest, dict) or not isinstance(groups, list)
                or not _consistent(cols, strings, len(groups))):
            raise ValueError("inconsistent columns")
        races = RaceTable(cols, strings)
        report = {k: races if k == "races" else rest[k] for k in keys}
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError,
            zipfile.BadZipFile) as exc:  # any damage: ignore the cache, never trust it
        _note(f"ignoring the damaged check cache {out} ({type(exc).__name__}: {exc})")
        return None
    return report, groups


def apply_marks(races: RaceTable, groups: list[dict[str, Any]]) -> None:
    """Count the suppressed rows in their groups, as
    :func:`mpvis.analysis.race_groups.group_races` does on marked entries
    (``suppressed``, and ``intended`` by verdict, in the order of the rows)."""
    c = races.cols
    for row in np.flatnonzero(c["suppressed"]).tolist():
        g = groups[int(c["group"][row])]
        verdict = races.strings[int(c["verdict"][row])]
        g["suppressed"] += 1
        g["intended"][verdict] = g["intended"].get(verdict, 0) + 1
