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
  trace's takes about 1.5 MB (compressed ``.npz``).

What is stored: the race entries as columns (``int32``/``int8``, strings as
indices into one string table; the report contract's fields, in the report's
key order), each entry's site-pair group (:mod:`mpvis.analysis.race_groups`)
computed without suppression marks, the groups, and the report's other parts
(deadlocks, errors, ranks: short lists) as UTF-8 JSON.  A report whose race
entries have other fields than the known ones is not cached.  Suppression
marks (``--suppress``, the window's settings) are applied after reading, as
on a fresh check, so the output is the same byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

__all__ = ["FORMAT", "MAX_BYTES", "MIN_BYTES", "Cached", "cache_path", "load", "save"]

#: Version of the cache's content; a cache of another version is ignored.
FORMAT = 1
#: Traces smaller than this many bytes are not cached.
MIN_BYTES = 4 << 20
#: The caches of a directory take at most this many bytes together: the least
#: recently written ones are deleted first.
MAX_BYTES = 1 << 30

Report = dict[str, Any]
Cached = tuple[Report, list[dict[str, Any]], list[int]]

_CLASSIFIER_KEYS = ("method", "scope", "rank", "recvs", "situation", "messages", "verdict",
                    "comm", "consumption", "sites")
_EXACT_KEYS = ("method", "rank", "recvs", "messages", "verdict")
_METHODS = ("classifier", "exact")
_NONE = -(2**31)  # an int32 field's None
_COLUMNS = ("method", "rank", "recv1", "recv2", "m1r", "m1s", "m2r", "m2s", "situation",
            "verdict", "comm", "consumption", "scope", "site1", "site2", "confirmed", "group")


class _Unknown(Exception):
    """A report this format cannot hold (an unknown field or value type)."""


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
    whose change may change a report."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for sub in ("model", "analysis", "protocol", "tracefile"):
        for f in sorted((root / sub).glob("*.py")):
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
def _ints(values: Sequence[object], *, none: bool = True) -> npt.NDArray[np.int32]:
    """``values`` (ints that fit ``int32``, or ``None`` when ``none``) as a column."""
    types = set(map(type, values))
    if not types <= ({int, type(None)} if none else {int}):
        raise _Unknown
    absent = None
    if type(None) in types:
        absent = np.array([v is None for v in values], dtype=bool)
        values = [_NONE if v is None else v for v in values]
    a = np.array(values, dtype=np.int64)  # OverflowError beyond 64 bits: not cached
    real = a if absent is None else a[~absent]
    if real.size and not (real.min() > _NONE and real.max() < 2**31):
        raise _Unknown
    return a.astype(np.int32)


def _pairs(values: Sequence[object], *, inner_none: bool) -> tuple[list[object], list[object]]:
    """The two items of each value (a list of two), :class:`_Unknown` otherwise."""
    if set(map(type, values)) - {list} or set(map(len, values)) - {2}:  # type: ignore[arg-type]  # lists, or _Unknown
        raise _Unknown
    firsts = [v[0] for v in values]  # type: ignore[index]  # pairs: checked above
    seconds = [v[1] for v in values]  # type: ignore[index]  # pairs: checked above
    if not inner_none and (None in firsts or None in seconds):
        raise _Unknown
    return firsts, seconds


def _encode(races: Sequence[dict[str, Any]], group_of: Sequence[int]
            ) -> tuple[dict[str, npt.NDArray[Any]], list[str]]:
    """The race entries as columns and their string table, one field at a time;
    :class:`_Unknown` if an entry is not of the two known shapes."""
    shapes = set(map(tuple, races))
    if not shapes <= {_CLASSIFIER_KEYS, (*_CLASSIFIER_KEYS, "confirmed"), _EXACT_KEYS}:
        raise _Unknown
    methods = [e["method"] for e in races]
    exact = [m == "exact" for m in methods]
    if set(methods) - set(_METHODS) or any(x != (len(e) == len(_EXACT_KEYS))
                                           for x, e in zip(exact, races, strict=True)):
        raise _Unknown
    strings: dict[str | None, int] = {None: -1}

    def ids(values: Sequence[object]) -> npt.NDArray[np.int32]:
        if set(map(type, values)) - {str, type(None)}:
            raise _Unknown
        for v in dict.fromkeys(values):
            if v not in strings:
                strings[v] = len(strings) - 1  # type: ignore[index]  # str or None: checked
        return np.array([strings[v] for v in values], dtype=np.int32)  # type: ignore[index]  # as above

    recvs = [e["recvs"] for e in races]
    if [len(r) for r in recvs] != [1 if x else 2 for x in exact]:
        raise _Unknown
    msgs = _pairs([e["messages"] for e in races], inner_none=True)
    cols: dict[str, npt.NDArray[Any]] = {
        "method": np.array(exact, dtype=np.int8),
        "rank": _ints([e["rank"] for e in races], none=False),
        "recv1": _ints([r[0] for r in recvs], none=False),
        "recv2": _ints([None if len(r) == 1 else r[1] for r in recvs]),
    }
    for k, slot in enumerate(msgs):
        present = [m is not None for m in slot]
        if not all(present[i] for i in np.flatnonzero(exact).tolist()):
            raise _Unknown
        ranks, seqs = _pairs([m for m in slot if m is not None], inner_none=False)
        for name, part in ((f"m{k + 1}r", ranks), (f"m{k + 1}s", seqs)):
            col = np.full(len(races), _NONE, dtype=np.int32)
            col[np.array(present, dtype=bool)] = _ints(part, none=False)
            cols[name] = col
    sites = _pairs([e.get("sites", [None, None]) for e in races], inner_none=True)
    confirmed = [e.get("confirmed") for e in races]
    if set(map(type, confirmed)) - {bool, type(None)}:
        raise _Unknown
    cols.update({
        "situation": _ints([e.get("situation") for e in races]),
        "verdict": ids([e["verdict"] for e in races]),
        "comm": _ints([e.get("comm") for e in races]),
        "consumption": ids([e.get("consumption") for e in races]),
        "scope": ids([e.get("scope") for e in races]),
        "site1": ids(sites[0]),
        "site2": ids(sites[1]),
        "confirmed": np.array([-1 if c is None else int(c) for c in confirmed], dtype=np.int8),
        "group": np.asarray(group_of, dtype=np.int32),
    })
    table = [s for s in strings if s is not None]
    return {f"race_{c}": cols[c] for c in _COLUMNS}, table


def save(trace: str | Path, options: dict[str, object], report: Report,
         groups: list[dict[str, Any]], group_of: Sequence[int]) -> bool:
    """Write the cache of ``trace``: ``report`` as built before suppression marks
    and groups, ``groups`` computed on it unmarked, ``group_of`` each race's
    group.  Returns whether a cache was written (module docstring)."""
    path = Path(trace)
    try:
        if path.stat().st_size < min_bytes():
            return False
        cols, table = _encode(report["races"], group_of)
    except (_Unknown, KeyError, TypeError, OverflowError, OSError):
        return False
    rest = {k: v for k, v in report.items() if k != "races"}
    arrays = {
        **cols,
        "meta": _json_array(_meta(path, options)),
        "strings": _json_array(table),
        "rest": _json_array(rest),
        "keys": _json_array(list(report)),
        "groups": _json_array(groups),
    }
    out = cache_path(path, options)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez_compressed(f, allow_pickle=False, **arrays)
            os.replace(tmp, out)
            _prune(out.parent, keep=out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        _note(f"could not write the check cache {out}: {exc}")
        return False
    return True


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


_STRING_COLUMNS = ("verdict", "consumption", "scope", "site1", "site2")
#: Rows decoded at a time: the Python ints of a whole column would cost more
#: than the entries themselves.
_CHUNK = 1 << 15


def _decode(cols: dict[str, npt.NDArray[Any]], strings: list[str]) -> list[dict[str, Any]]:
    """The race entries, each a dict in the report's key order."""
    table = np.array([None, *strings], dtype=object)  # string id + 1 -> str or None

    def part(c: str, lo: int) -> list[Any]:
        """Rows ``lo:lo + _CHUNK`` of column ``c`` as Python values (None where absent)."""
        a = cols[c][lo:lo + _CHUNK]
        if c in _STRING_COLUMNS:
            return list(table[a.astype(np.int64) + 1])
        if c in ("recv2", "situation", "comm"):
            obj = a.astype(object)
            obj[a == _NONE] = None
            return list(obj)
        return list(a.tolist())

    out: list[dict[str, Any]] = []
    append = out.append
    n = len(cols["method"])
    for lo in range(0, n, _CHUNK):
        rows = zip(*(part(c, lo) for c in _COLUMNS[:-1]), strict=True)
        for (method, rank, r1, r2, m1r, m1s, m2r, m2s, situation, verdict, comm,
             consumption, scope, site1, site2, confirmed) in rows:
            if method == 1:
                append({"method": "exact", "rank": rank, "recvs": [r1],
                        "messages": [[m1r, m1s], [m2r, m2s]], "verdict": verdict})
                continue
            e = {"method": "classifier", "scope": scope, "rank": rank, "recvs": [r1, r2],
                 "situation": situation,
                 "messages": [None if m1r == _NONE else [m1r, m1s],
                              None if m2r == _NONE else [m2r, m2s]],
                 "verdict": verdict, "comm": comm, "consumption": consumption,
                 "sites": [site1, site2]}
            if confirmed >= 0:
                e["confirmed"] = confirmed == 1
            append(e)
    return out


def _consistent(cols: dict[str, npt.NDArray[Any]], strings: object, ngroups: int) -> bool:
    """Whether the columns have one length, integer types, and indices in range."""
    n = len(cols["method"])
    if not isinstance(strings, list) or not all(isinstance(x, str) for x in strings):
        return False
    if any(a.ndim != 1 or len(a) != n or a.dtype.kind != "i" for a in cols.values()):
        return False
    if n == 0:
        return True
    groups = cols["group"]
    return bool(groups.min() >= 0 and groups.max() < ngroups
                and all(cols[c].min() >= -1 and cols[c].max() < len(strings)
                        for c in _STRING_COLUMNS)
                and np.isin(cols["method"], (0, 1)).all())


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
            cols = {c: z[f"race_{c}"] for c in _COLUMNS}
        if (not isinstance(rest, dict) or not isinstance(groups, list)
                or not _consistent(cols, strings, len(groups))):
            raise ValueError("inconsistent columns")
        races = _decode(cols, strings)
        report = {k: races if k == "races" else rest[k] for k in keys}
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError,
            zipfile.BadZipFile) as exc:  # any damage: ignore the cache, never trust it
        _note(f"ignoring the damaged check cache {out} ({type(exc).__name__}: {exc})")
        return None
    return report, groups, cols["group"].tolist()


def apply_marks(races: list[dict[str, Any]], groups: list[dict[str, Any]],
                group_of: Sequence[int]) -> None:
    """Give each race entry its ``group`` and count the suppressed ones in their
    groups, as :func:`mpvis.analysis.race_groups.group_races` does on marked
    entries (``suppressed``, and ``intended`` by verdict)."""
    for e, gi in zip(races, group_of, strict=True):
        if e.get("suppressed"):
            g = groups[gi]
            g["suppressed"] += 1
            g["intended"][str(e["verdict"])] = g["intended"].get(str(e["verdict"]), 0) + 1
        e["group"] = gi
