"""Trace records: the kinds, their fields, and the per-record rules of the spec.

Every record that crosses the wire or sits in a trace file is one of the
records of ``shared/spec/trace-format.md``.  :func:`check_record` applies every
rule that can be decided from one record alone; rules that need context
(``seq`` without gaps, a ``consume`` naming an earlier ``recv``, ``rank`` below
``nprocs``) belong to :mod:`mpvis.tracefile.validate`.

Rules are named (``RULE_*``) so that an error message can state the rule
broken.
"""

from __future__ import annotations

import reprlib
from typing import Any, Final

from mpvis.errors import MpvisError
from mpvis.protocol.codes import (
    COLL,
    COLL_EXIT,
    CONSUME,
    EVENT_KINDS,
    FINAL,
    KIND_CODE,
    LOCK,
    LOCKED,
    RECV,
    SEND,
    STATE,
    UNLOCK,
    WAIT,
    WAITING,
)
from mpvis.protocol.record_types import Record

#: The kind names and model codes are :mod:`mpvis.protocol.codes`'s, re-exported.
__all__ = [
    "ANY", "COLL", "COLL_ARGS", "COLL_EXIT", "CONSUME", "EVENT_KINDS", "FINAL", "FORMAT_NAME",
    "FORMAT_VERSION", "KIND_CODE", "LOCK", "LOCKED", "MAX_NPROCS", "RECV", "SEND", "STATE",
    "UNLOCK", "WAIT", "WAITING", "RecordError", "check_header", "check_record", "make_header",
    "show",
]

FORMAT_NAME: Final = "mpvis-trace"
FORMAT_VERSION: Final = 1
ANY: Final = -1

#: Single-valued collective arguments that all ranks must agree on.
COLL_ARGS: Final[tuple[str, ...]] = ("root", "count", "dtype", "redop")


#: Ranks a header may declare at most: per-rank state is allocated up front,
#: and a desktop space-time diagram is no tool for larger runs.
MAX_NPROCS: Final = 65536

_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxstring, _SHOW.maxother = 3, 60, 60


class RecordError(MpvisError, ValueError):
    """A record breaks a rule of the trace format; ``str()`` states the rule."""


def show(value: object) -> str:
    """A short ``repr`` of a value from a record, for error messages: bounded in
    length and depth whatever the input (a value nested 1,000 deep, a 10 MB string)."""
    return _SHOW.repr(value)


def _is_int(v: object) -> bool:
    return type(v) is int


def _need_int(rec: Record, field: str, *, minimum: int | None = None) -> int:
    v = rec.get(field)
    if not _is_int(v):
        if field not in rec:
            raise RecordError(f"field '{field}' is required for kind '{rec.get('kind')}'")
        raise RecordError(f"field '{field}' must be an integer, got {show(v)}")
    assert isinstance(v, int)
    if minimum is not None and v < minimum:
        raise RecordError(f"field '{field}' must be >= {minimum}, got {v}")
    return v


def _need_bool(rec: Record, field: str) -> bool:
    v = rec.get(field)
    if type(v) is not bool:
        if field not in rec:
            raise RecordError(f"field '{field}' is required for kind '{rec.get('kind')}'")
        raise RecordError(f"field '{field}' must be true or false, got {show(v)}")
    return bool(v)


def _need_str(rec: Record, field: str) -> str:
    v = rec.get(field)
    if not isinstance(v, str) or not v:
        if field not in rec:
            raise RecordError(f"field '{field}' is required for kind '{rec.get('kind')}'")
        raise RecordError(f"field '{field}' must be a non-empty string, got {show(v)}")
    return v


def check_header(rec: object) -> Record:
    """Check the header record (the first line of a file); return it.

    Raises :class:`RecordError` naming the rule broken.
    """
    if not isinstance(rec, dict):
        raise RecordError("the first line must be a JSON object (the header)")
    if rec.get("kind") != "header":
        raise RecordError("the first line must be the header (kind 'header')")
    if rec.get("format") != FORMAT_NAME:
        raise RecordError(f"header 'format' must be '{FORMAT_NAME}', got {show(rec.get('format'))}")
    if rec.get("version") != FORMAT_VERSION or not _is_int(rec.get("version")):
        raise RecordError(
            f"unsupported header 'version' {show(rec.get('version'))} "
            f"(this mpvis reads {FORMAT_VERSION})"
        )
    n = _need_int(rec, "nprocs", minimum=1)
    if n > MAX_NPROCS:
        raise RecordError(f"header 'nprocs' is {n}: mpvis shows at most {MAX_NPROCS} ranks")
    return rec


def check_record(rec: object, nprocs: int | None = None) -> Record:
    """Check one event record against every rule decidable from it alone.

    ``nprocs`` (when known) bounds ``rank``, ``dest`` and ``src``.  Returns the
    record unchanged.  Raises :class:`RecordError` naming the rule broken.
    """
    if not isinstance(rec, dict):
        raise RecordError("an event line must be a JSON object")
    kind = rec.get("kind")
    if type(kind) is not str or kind not in KIND_CODE:
        if kind == "header":
            raise RecordError("a second header: only the first line may be the header")
        raise RecordError(f"unknown event kind {show(kind)}")
    rank = _need_int(rec, "rank", minimum=0)
    if nprocs is not None and rank >= nprocs:
        raise RecordError(f"rank {rank} is out of range (header says nprocs={nprocs})")
    _need_int(rec, "seq", minimum=0)
    t = rec.get("t")
    if t is not None and (type(t) not in (int, float)):
        raise RecordError(f"field 't' must be a number, got {show(t)}")
    site = rec.get("site")
    if site is not None and not isinstance(site, str):
        raise RecordError(f"field 'site' must be a string, got {show(site)}")
    if "comm" in rec:
        _need_int(rec, "comm", minimum=0)
    _KIND_CHECKS[kind](rec, nprocs)
    return rec


def _peer(rec: Record, field: str, nprocs: int | None, *, wildcard: bool) -> None:
    v = _need_int(rec, field, minimum=-1 if wildcard else 0)
    if nprocs is not None and v >= nprocs:
        raise RecordError(f"field '{field}' = {v} is not a rank (header says nprocs={nprocs})")


def _req(rec: Record, blocking: bool) -> None:
    if not blocking:
        _need_int(rec, "req")


def _check_send(rec: Record, nprocs: int | None) -> None:
    _peer(rec, "dest", nprocs, wildcard=False)
    _need_int(rec, "tag", minimum=0)
    _req(rec, _need_bool(rec, "blocking"))
    _need_bool(rec, "sync")
    if "size" in rec:
        _need_int(rec, "size", minimum=0)


def _check_recv(rec: Record, nprocs: int | None) -> None:
    _peer(rec, "src", nprocs, wildcard=True)
    _need_int(rec, "tag", minimum=-1)
    _req(rec, _need_bool(rec, "blocking"))


def _check_consume(rec: Record, nprocs: int | None) -> None:
    _need_int(rec, "recv", minimum=0)
    _peer(rec, "src", nprocs, wildcard=False)
    _need_int(rec, "tag", minimum=0)
    if "send" in rec:
        s = rec["send"]
        if not (isinstance(s, list) and len(s) == 2 and all(_is_int(x) and x >= 0 for x in s)):
            raise RecordError(f"field 'send' must be [rank, seq], got {show(s)}")
        if s[0] != rec["src"]:
            raise RecordError(f"field 'send' names rank {s[0]} but 'src' is {rec['src']}")


def _check_wait(rec: Record, nprocs: int | None) -> None:
    reqs = rec.get("reqs")
    if not isinstance(reqs, list) or not all(_is_int(r) for r in reqs):
        raise RecordError(f"field 'reqs' must be a list of integers, got {show(reqs)}")


def _check_waiting(rec: Record, nprocs: int | None) -> None:
    _check_wait(rec, nprocs)
    if rec.get("mode", "all") not in ("all", "any"):
        raise RecordError(f"field 'mode' must be \"all\" or \"any\", got {show(rec.get('mode'))}")


def _check_coll(rec: Record, nprocs: int | None) -> None:
    _need_str(rec, "op")
    if "root" in rec:
        _peer(rec, "root", None, wildcard=False)
    if "count" in rec:
        _need_int(rec, "count", minimum=0)
    for f in ("dtype", "redop"):
        if f in rec and not isinstance(rec[f], str):
            raise RecordError(f"field '{f}' must be a string, got {show(rec[f])}")


def _check_coll_exit(rec: Record, nprocs: int | None) -> None:
    _need_str(rec, "op")


def _check_lock(rec: Record, nprocs: int | None) -> None:
    _need_str(rec, "lock")


def _check_state(rec: Record, nprocs: int | None) -> None:
    v = rec.get("vars")
    if not isinstance(v, dict):
        raise RecordError(f"field 'vars' must be an object, got {show(v)}")
    for name, val in v.items():
        if val is not None and type(val) not in (int, float, str, bool):
            raise RecordError(f"variable {show(name)} must be a JSON scalar, got {show(val)}")


def _check_final(rec: Record, nprocs: int | None) -> None:
    return None


_KIND_CHECKS = {
    SEND: _check_send,
    RECV: _check_recv,
    CONSUME: _check_consume,
    WAIT: _check_wait,
    COLL: _check_coll,
    COLL_EXIT: _check_coll_exit,
    LOCK: _check_lock,
    LOCKED: _check_lock,
    UNLOCK: _check_lock,
    STATE: _check_state,
    FINAL: _check_final,
    WAITING: _check_waiting,
}


def make_header(nprocs: int, **extra: Any) -> Record:
    """A header record for ``nprocs`` ranks, with optional extra fields."""
    return {"kind": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "nprocs": nprocs, **extra}
