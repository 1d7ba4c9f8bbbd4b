"""Read an OTF2 archive (Score-P's format) as mpvis trace records.

:func:`read_otf2` returns a header and the records of ``docs/trace-format.md``
for an archive's anchor file (``traces.otf2``).  Two cases:

* **Written by mpvis** (``mpvis export --format otf2``): every OTF2 event that
  stands for a record carries it, whole, as JSON in the attribute
  :data:`~mpvis.tracefile.otf2_names.ATTRIBUTE`, and the archive's description
  holds the header.  The records are read back exactly, after checking that
  each agrees with the OTF2 event carrying it (same rank, ``seq``, peer, tag,
  request): an archive edited by another tool so that they disagree is refused.
* **Any other archive** (Score-P): the records are rebuilt from the events.
  Ranks are the positions of the locations in the MPI locations group; ranks
  inside other communicators are translated to world ranks through the
  communicator's group; the MPI call (blocking, synchronous, a wait or a test)
  is the enclosing region's name; a record's ``site`` is the source location
  of its calling context (``CallingContextEnter``: the MPI call's own or its
  caller's ``SourceCodeLocation``).

What OTF2 does not record, and what is done about it (``docs/trace-format.md``
has the full table): the arguments with which a receive was *posted* (OTF2's
``MpiRecv``/``MpiIrecv`` give the message's real sender and tag, so a
wildcard ``MPI_ANY_SOURCE`` is invisible).  By default a receive's posted
source and tag are taken to be those of the message it consumed, which can
hide a race but never invents one; ``any_source=True`` (environment
``MPVIS_OTF2_RECV=any``) takes every such receive as ``recv(-1,-1)``, which
finds every possible race and may report races the program excludes.  A
receive that consumed nothing has unknown arguments and is read as
``recv(-1,-1)``.  Which send a receive consumed is not recorded either; it is
left to the reader's non-overtaking rule, which is exact for MPI.

Contract: a file that is not an OTF2 archive, a truncated or malformed one,
or events that break OTF2's own rules (a leave without an enter, an unknown
communicator) raise :class:`Otf2ImportError` with a message for a person;
never a traceback from the C library.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mpvis.errors import MpvisError
from mpvis.protocol.records import FORMAT_NAME, FORMAT_VERSION, make_header
from mpvis.tracefile.otf2_names import (
    ATTRIBUTE,
    BLOCKING_RECV_REGIONS,
    COMPLETION_REGIONS,
    SEND_REGIONS,
    STATE_PARAMETER,
    op_of_region,
    require_otf2,
)

__all__ = ["HEADER_PREFIX", "Otf2ImportError", "is_otf2", "read_otf2"]

from mpvis.protocol.record_types import Record

#: The archive description of an mpvis export starts with this, then the header as JSON.
HEADER_PREFIX = "mpvis-trace header: "


class Otf2ImportError(MpvisError, ValueError):
    """The archive cannot be read as a trace; ``str()`` says why, for a person."""


def is_otf2(path: str | Path) -> bool:
    """Is ``path`` an OTF2 anchor file (``*.otf2``) or a directory holding one?"""
    p = Path(path)
    return p.suffix.lower() == ".otf2" or (p.is_dir() and any(p.glob("*.otf2")))


def _anchor(path: Path) -> Path:
    if path.is_dir():
        found = sorted(path.glob("*.otf2"))
        if len(found) != 1:
            raise Otf2ImportError(f"{path}: expected one *.otf2 anchor file, found {len(found)}")
        return found[0]
    if not path.is_file():
        raise Otf2ImportError(f"{path}: no such OTF2 anchor file")
    return path


def read_otf2(path: str | Path, *, any_source: bool | None = None,
              trust_attributes: bool = True) -> tuple[Record, list[Record]]:
    """The header and the records (each rank's in ``seq`` order) of an OTF2 archive.

    ``any_source`` (default: environment ``MPVIS_OTF2_RECV=any``) reads every
    receive whose posted arguments the archive lacks as ``recv(-1,-1)``.
    ``trust_attributes=False`` ignores the records mpvis wrote as attributes
    and rebuilds them from the OTF2 events, as for a Score-P archive.
    Raises :class:`Otf2ImportError`, or
    :class:`~mpvis.tracefile.otf2_names.Otf2Missing` when ``otf2`` is absent.
    """
    if any_source is None:
        any_source = os.environ.get("MPVIS_OTF2_RECV", "actual") == "any"
    otf2 = require_otf2()
    anchor = _anchor(Path(path))
    # The package prints a traceback of its own when one of its definition
    # callbacks fails on a corrupt archive: keep it out of the user's terminal
    # and quote its last line in the error instead.
    noise = io.StringIO()
    try:
        with contextlib.redirect_stderr(noise), otf2.reader.open(str(anchor)) as tr:
            return _Archive(tr, any_source, trust_attributes).read()
    except Otf2ImportError as exc:
        raise Otf2ImportError(f"{anchor}: {exc}") from None
    except Exception as exc:  # the C library's errors have no common base class
        said = [ln.strip() for ln in noise.getvalue().splitlines() if ln.strip()]
        cause = f" ({said[-1]})" if said else ""
        raise Otf2ImportError(
            f"{anchor}: not a readable OTF2 archive (corrupt or truncated?): "
            f"{type(exc).__name__}: {exc}{cause}") from None


@dataclass
class _Frame:
    """An MPI call in progress on a location (an entered region)."""

    name: str
    site: str | None
    completed: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    recv_seq: int | None = None


class _Archive:
    """One open archive: its definitions mapped to ranks and communicators."""

    def __init__(self, tr: Any, any_source: bool, trust_attributes: bool) -> None:
        self.tr = tr
        self.any_source = any_source
        defs = tr.definitions
        self.rank_of = _ranks(defs)
        self.comm_id = _comm_ids(defs)
        self.attr = next((a for a in defs.attributes if a.name == ATTRIBUTE), None)
        if not trust_attributes:
            self.attr = None
        props = defs.clock_properties
        self.resolution = float(props.timer_resolution or 1)
        self.offset = int(props.global_offset or 0)

    def read(self) -> tuple[Record, list[Record]]:
        by_loc: dict[Any, list[Any]] = defaultdict(list)
        for loc, ev in self.tr.events:
            by_loc[loc].append(ev)
        ranks: dict[int, list[Record]] = {}
        for loc, events in by_loc.items():
            rank = self.rank_of.get(loc)
            if rank is None:
                if any(type(e).__name__.startswith("Mpi") for e in events):
                    raise Otf2ImportError(
                        f"location '{loc.name}' has MPI events but is not in the MPI "
                        "locations group (one location per rank is supported)")
                continue
            ranks[rank] = _RankReader(self, rank).read(events)
        header = self._header(len(self.rank_of))
        return header, [rec for r in sorted(ranks) for rec in ranks[r]]

    def _header(self, nprocs: int) -> Record:
        import _otf2  # the package's C binding: the archive description

        try:
            desc = _otf2.Reader_GetDescription(self.tr.handle) or ""
        except Exception:
            desc = ""
        if self.attr is not None and desc.startswith(HEADER_PREFIX):
            header = orjson.loads(desc[len(HEADER_PREFIX):])
            if (not isinstance(header, dict) or header.get("format") != FORMAT_NAME
                    or header.get("version") != FORMAT_VERSION
                    or header.get("nprocs") != nprocs):
                raise Otf2ImportError("the mpvis header in the archive description does not "
                                      f"match its {nprocs} MPI locations")
            return header
        if nprocs == 0:
            raise Otf2ImportError("the archive defines no locations (no MPI ranks)")
        return make_header(nprocs, source="otf2")

    def seconds(self, ticks: int) -> float:
        return (ticks - self.offset) / self.resolution

    def world(self, comm: Any, local: int, own: int) -> int:
        """The world rank of rank ``local`` of OTF2 communicator ``comm``."""
        group = getattr(comm, "group", None)
        if group is None:
            raise Otf2ImportError(f"communicator '{getattr(comm, 'name', comm)}' has no group "
                                  "(inter-communicators are not supported)")
        members = group.members
        if not members:  # MPI_COMM_SELF
            return own
        if not 0 <= local < len(members) or members[local] not in self.rank_of:
            raise Otf2ImportError(f"rank {local} is not in communicator '{comm.name}'")
        return self.rank_of[members[local]]

    def comm(self, comm: Any) -> int:
        if comm not in self.comm_id:
            raise Otf2ImportError(f"an event names an undefined communicator {comm!r}")
        return self.comm_id[comm]


def _ranks(defs: Any) -> dict[Any, int]:
    """Location -> rank: its position in the MPI locations group (else definition order)."""
    otf2 = require_otf2()
    for g in defs.groups:
        if g.group_type == otf2.GroupType.COMM_LOCATIONS and g.paradigm == otf2.Paradigm.MPI:
            return {loc: i for i, loc in enumerate(g.members)}
    return {loc: i for i, loc in enumerate(defs.locations)}


def _comm_ids(defs: Any) -> dict[Any, int]:
    """Communicator -> mpvis ``comm``: MPI_COMM_WORLD is 0, ``mpvis comm K`` is K."""
    out: dict[Any, int] = {}
    rest = []
    for c in defs.comms:
        name = str(c.name)
        if name == "MPI_COMM_WORLD":
            out[c] = 0
        elif name.startswith("mpvis comm ") and name[11:].isdigit():
            out[c] = int(name[11:])
        else:
            rest.append(c)
    nxt = max(out.values(), default=0) + 1
    for c in rest:
        out[c] = nxt
        nxt += 1
    return out


def _site(ev: Any) -> str | None:
    """``file:line`` of a calling context (its own source location, else its caller's)."""
    cc = getattr(ev, "calling_context", None)
    while cc is not None:
        scl = cc.source_code_location
        if scl is not None:
            return f"{scl.file}:{scl.line_number}"
        cc = cc.parent
    return None


def _region(ev: Any) -> str:
    region = getattr(ev, "region", None)
    if region is None:
        cc = getattr(ev, "calling_context", None)
        region = getattr(cc, "region", None)
    return str(getattr(region, "name", "") or "")


class _RankReader:
    """Turns one location's events into one rank's records."""

    def __init__(self, archive: _Archive, rank: int) -> None:
        self.a = archive
        self.rank = rank
        self.out: list[Record] = []
        self.frames: list[_Frame] = []
        self.irecvs: dict[int, Record] = {}
        self.t = float("-inf")
        self.final = False
        self.reqs: dict[int, int] = {}  # live OTF2 request id -> mpvis req (small ints)
        self.next_req = 0

    def req(self, ev: Any, *, new: bool = False, done: bool = False) -> int:
        """The mpvis ``req`` of the event's OTF2 request id (Score-P's may not fit 32 bits)."""
        rid = int(ev.request_id)
        if new or rid not in self.reqs:
            self.reqs[rid] = self.next_req
            self.next_req += 1
        return self.reqs.pop(rid) if done else self.reqs[rid]

    def read(self, events: list[Any]) -> list[Record]:
        for i, ev in enumerate(events):
            name = type(ev).__name__
            try:
                if self.a.attr is not None:
                    self._attributed(ev, name)
                else:
                    self._native(ev, name, events, i)
            except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
                if isinstance(exc, Otf2ImportError):
                    raise Otf2ImportError(f"rank {self.rank}, event {i} ({name}): {exc}") from None
                raise Otf2ImportError(f"rank {self.rank}, event {i} ({name}) is malformed: "
                                      f"{type(exc).__name__}: {exc}") from None
        if self.a.attr is None:
            for fr in self.frames:
                if fr.name in BLOCKING_RECV_REGIONS and fr.recv_seq is None:
                    self._recv(fr, -1, -1, True, None)  # blocked there: arguments unknown
        return self.out

    # -- written by mpvis: the records themselves --------------------------------
    def _attributed(self, ev: Any, name: str) -> None:
        attrs = ev.attributes or {}
        if self.a.attr not in attrs:
            return
        rec = orjson.loads(attrs[self.a.attr])
        if not isinstance(rec, dict):
            raise Otf2ImportError("the mpvis attribute is not a JSON object")
        if rec.get("rank") != self.rank or rec.get("seq") != len(self.out):
            raise Otf2ImportError(f"the mpvis attribute names event {rec.get('rank')}:"
                                  f"{rec.get('seq')} on rank {self.rank}'s event "
                                  f"{len(self.out)}")
        _check_agrees(self.a, self.rank, ev, name, rec)
        self.out.append(rec)

    # -- any archive: rebuilt from OTF2's events ---------------------------------
    def _emit(self, ev: Any, rec: Record, site: str | None) -> Record:
        t = max(self.a.seconds(int(ev.time)), self.t)
        self.t = t
        full: Record = {"rank": self.rank, "seq": len(self.out), **rec, "t": t}
        if site is not None:
            full["site"] = site
        self.out.append(full)
        return full

    def _top(self) -> _Frame | None:
        return self.frames[-1] if self.frames else None

    def _native(self, ev: Any, name: str, events: list[Any], i: int) -> None:
        top = self._top()
        site = top.site if top is not None else None
        if name in ("Enter", "CallingContextEnter"):
            region = _region(ev)
            self.frames.append(_Frame(region, _site(ev) if name != "Enter" else None))
            if region == "MPI_Finalize" and not self.final:
                self.final = True
                self._emit(ev, {"kind": "final"}, self.frames[-1].site)
        elif name in ("Leave", "CallingContextLeave"):
            if not self.frames:
                raise Otf2ImportError("a region is left that was never entered")
            fr = self.frames.pop()
            if fr.completed or fr.cancelled:
                rec: Record = {"kind": "wait", "reqs": fr.completed}
                if fr.cancelled:
                    rec["cancelled"] = fr.cancelled
                self._emit(ev, rec, fr.site)
        elif name in ("MpiSend", "MpiIsend"):
            self._send(ev, name, top, site)
        elif name == "MpiIsendComplete":
            self._complete(ev, top, self.req(ev, done=True), cancelled=False)
        elif name == "MpiRequestCancelled":
            req = self.req(ev, done=True)
            self.irecvs.pop(req, None)
            self._complete(ev, top, req, cancelled=True)
        elif name == "MpiIrecvRequest":
            req = self.req(ev, new=True)
            rec = {"kind": "recv", "src": -1, "tag": -1, "blocking": False, "req": req,
                   "comm": 0}
            self.irecvs[req] = self._emit(ev, rec, site)
        elif name in ("MpiRecv", "MpiIrecv"):
            self._consume(ev, name, top, site)
        elif name == "MpiCollectiveBegin":
            self._coll(ev, top, events, i, site)
        elif name == "MpiCollectiveEnd":
            op = op_of_region(top.name) if top is not None and top.name else _op_enum(ev)
            self._emit(ev, {"kind": "coll_exit", "op": op, "comm": self.a.comm(ev.communicator)},
                       site)
        elif name in ("RmaRequestLock", "RmaAcquireLock", "RmaReleaseLock"):
            kind = {"RmaRequestLock": "lock", "RmaAcquireLock": "locked"}.get(name, "unlock")
            lock = f"{ev.win.name}:{ev.remote}:{ev.lock_id}"
            self._emit(ev, {"kind": kind, "lock": lock}, site)
        elif name in ("ParameterString", "ParameterInt", "ParameterUnsignedInt"):
            self._state(ev, name, site)
        elif name == "ProgramEnd" and not self.final:
            self.final = True
            self._emit(ev, {"kind": "final"}, site)

    def _send(self, ev: Any, name: str, top: _Frame | None, site: str | None) -> None:
        blocking = name == "MpiSend"
        region = top.name if top is not None else ""
        _b, sync, mode = SEND_REGIONS.get(region, (blocking, False, "standard"))
        rec: Record = {"kind": "send", "dest": self.a.world(ev.communicator, int(ev.receiver),
                                                            self.rank),
                       "tag": int(ev.msg_tag), "comm": self.a.comm(ev.communicator),
                       "blocking": blocking, "sync": sync, "size": int(ev.msg_length)}
        if region in SEND_REGIONS:
            rec["mode"] = mode
        if not blocking:
            rec["req"] = self.req(ev, new=True)
        self._emit(ev, rec, site)

    def _complete(self, ev: Any, top: _Frame | None, req: int, *, cancelled: bool) -> None:
        if top is None or top.name not in COMPLETION_REGIONS:
            rec: Record = {"kind": "wait", "reqs": [] if cancelled else [req]}
            if cancelled:
                rec["cancelled"] = [req]
            self._emit(ev, rec, None)
        else:
            (top.cancelled if cancelled else top.completed).append(req)

    def _recv(self, fr: _Frame | None, src: int, tag: int, blocking: bool, ev: Any, *,
              req: int | None = None, comm: int = 0) -> Record:
        rec: Record = {"kind": "recv", "src": src, "tag": tag, "blocking": blocking,
                       "comm": comm}
        if req is not None:
            rec["req"] = req
        if ev is None:  # at the end of the trace: when the region was entered is not kept
            out: Record = {"rank": self.rank, "seq": len(self.out), **rec}
            if fr is not None and fr.site is not None:
                out["site"] = fr.site
            self.out.append(out)
            return out
        return self._emit(ev, rec, fr.site if fr is not None else None)

    def _consume(self, ev: Any, name: str, top: _Frame | None, site: str | None) -> None:
        src = self.a.world(ev.communicator, int(ev.sender), self.rank)
        tag = int(ev.msg_tag)
        comm = self.a.comm(ev.communicator)
        posted_src, posted_tag = (-1, -1) if self.a.any_source else (src, tag)
        if name == "MpiRecv":
            if top is not None and top.recv_seq is not None:
                recv = self.out[top.recv_seq]
            else:
                recv = self._recv(top, posted_src, posted_tag, True, ev, comm=comm)
                if top is not None:
                    top.recv_seq = recv["seq"]
        else:
            req = self.req(ev, done=True)
            found = self.irecvs.pop(req, None)
            recv = found if found is not None else self._recv(
                top, posted_src, posted_tag, False, ev, req=req, comm=comm)
            recv["comm"] = comm  # an MpiIrecvRequest does not say
            if recv["src"] == -1 and recv["tag"] == -1 and not self.a.any_source:
                recv["src"], recv["tag"] = src, tag
        self._emit(ev, {"kind": "consume", "recv": recv["seq"], "src": src, "tag": tag,
                        "comm": comm}, site)
        if name == "MpiIrecv":  # its wait record follows (at the region's leave)
            self._complete(ev, top, recv["req"], cancelled=False)

    def _coll(self, ev: Any, top: _Frame | None, events: list[Any], i: int,
              site: str | None) -> None:
        end = next((e for e in events[i + 1:] if type(e).__name__ == "MpiCollectiveEnd"), None)
        region = top.name if top is not None else ""
        op = op_of_region(region) if region.upper().startswith("MPI_") else (
            _op_enum(end) if end is not None else "unknown")
        rec: Record = {"kind": "coll", "op": op}
        if end is not None:
            rec["comm"] = self.a.comm(end.communicator)
            root = int(end.root)
            if root < 0xFFFFFFFF:
                rec["root"] = self.a.world(end.communicator, root, self.rank)
        self._emit(ev, rec, site)

    def _state(self, ev: Any, name: str, site: str | None) -> None:
        pname = str(ev.parameter.name)
        if name == "ParameterString" and pname == STATE_PARAMETER:
            variables = orjson.loads(str(ev.string))
            if not isinstance(variables, dict):
                raise Otf2ImportError(f"parameter '{STATE_PARAMETER}' is not a JSON object")
        else:
            value = ev.string if name == "ParameterString" else int(ev.value)
            variables = {pname: str(value) if name == "ParameterString" else value}
        self._emit(ev, {"kind": "state", "vars": variables}, site)


def _op_enum(ev: Any) -> str:
    """``bcast`` from an ``MpiCollectiveEnd``'s OTF2 collective operation."""
    text = str(getattr(ev, "collective_op", "unknown"))
    return text.rsplit(".", 1)[-1].lower()


#: Event -> (record kind, [(record field, event attribute, translate as a rank?)]).
_AGREE: dict[str, tuple[str, list[tuple[str, str, bool]]]] = {
    "MpiSend": ("send", [("dest", "receiver", True), ("tag", "msg_tag", False)]),
    "MpiIsend": ("send", [("dest", "receiver", True), ("tag", "msg_tag", False),
                          ("req", "request_id", False)]),
    "MpiRecv": ("consume", [("src", "sender", True), ("tag", "msg_tag", False)]),
    "MpiIrecv": ("consume", [("src", "sender", True), ("tag", "msg_tag", False)]),
    "MpiIrecvRequest": ("recv", [("req", "request_id", False)]),
    "MpiCollectiveBegin": ("coll", []),
    "MpiCollectiveEnd": ("coll_exit", []),
}


def _check_agrees(a: _Archive, rank: int, ev: Any, name: str, rec: Record) -> None:
    """Refuse a record that contradicts the OTF2 event carrying it."""
    want = _AGREE.get(name)
    if want is None:
        return
    kind, fields = want
    if rec.get("kind") != kind:
        raise Otf2ImportError(f"the mpvis attribute says '{rec.get('kind')}' on a {name} event")
    for rf, ef, is_rank in fields:
        v = int(getattr(ev, ef))
        if is_rank:
            v = a.world(ev.communicator, v, rank)
        if rec.get(rf) != v:
            raise Otf2ImportError(f"the mpvis attribute says {rf}={rec.get(rf)!r} but the "
                                  f"{name} event says {v}")
