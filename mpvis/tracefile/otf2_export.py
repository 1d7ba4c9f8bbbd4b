"""Write a trace as an OTF2 archive (for Vampir and Score-P's tools), readable back exactly.

:func:`write_otf2` maps each rank to one OTF2 location (in the MPI locations
group, so the position is the rank) and each record to OTF2's own events,
inside the region of the MPI call it stands for, entered through a calling
context whose caller carries the record's ``site`` as a source location:

=========== ==================================================================
record      OTF2 events
=========== ==================================================================
send        ``MPI_Send``/``Ssend``/``Bsend``/``Rsend`` (or ``I...``) region
            around ``MpiSend`` (``MpiIsend`` with the request)
recv        blocking: the ``MPI_Recv`` region is entered (and left after the
            consume's ``MpiRecv``); nonblocking: ``MPI_Irecv`` around
            ``MpiIrecvRequest``
consume     ``MpiRecv`` (blocking) or ``MpiIrecv`` inside an ``MPI_Wait``/
            ``MPI_Waitall`` region (nonblocking)
wait        ``MpiIsendComplete`` per send request, then the region's leave
coll        ``MPI_<Op>`` region entered, ``MpiCollectiveBegin``
coll_exit   ``MpiCollectiveEnd`` (operation, communicator, root), region left
lock...     ``RmaRequestLock`` on entering ``MPI_Win_lock``, ``RmaAcquireLock``
            before leaving it, ``RmaReleaseLock`` in ``MPI_Win_unlock``, on
            one window named ``mpvis locks`` (lock id = the lock's number)
state       ``ParameterString`` ``mpvis:state`` (the variables as JSON)
final       the ``MPI_Finalize`` region
=========== ==================================================================

Every event that stands for a record also carries the record itself as JSON
in the attribute :data:`~mpvis.tracefile.otf2_names.ATTRIBUTE`, and the
archive's description carries the header, so that mpvis reads the archive
back identically (fields OTF2 has no place for: a receive's posted wildcard
source and tag, the ``send`` a consume names, lock names, the team's optional
fields).  ``attributes=False`` writes the OTF2 events only, as Score-P would.
Timestamps are nanoseconds (timer resolution 10^9) from the earliest ``t``;
a record without ``t`` is placed one microsecond after the one before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from mpvis.errors import MpvisError
from mpvis.tracefile.otf2_import import HEADER_PREFIX
from mpvis.tracefile.otf2_names import (
    ATTRIBUTE,
    STATE_PARAMETER,
    coll_region,
    require_otf2,
    send_region,
)

__all__ = ["Otf2ExportError", "archive_paths", "write_otf2"]

from mpvis.protocol.record_types import (
    CollExitRecord,
    CollRecord,
    ConsumeRecord,
    EventRecord,
    FinalRecord,
    LockRecord,
    Record,
    RecvRecord,
    SendRecord,
    StateRecord,
    WaitRecord,
)

_NS = 10**9


class Otf2ExportError(MpvisError, ValueError):
    """The archive cannot be written; ``str()`` says why."""


def archive_paths(out: str | Path) -> tuple[Path, str]:
    """(directory, archive name) for ``-o OUT``: ``dir/name.otf2`` or a directory."""
    p = Path(out)
    if p.suffix.lower() == ".otf2":
        return p.parent, p.stem
    return p, "traces"


def write_otf2(out: str | Path, header: Record, records: Iterable[EventRecord], *,
               attributes: bool = True) -> Path:
    """Write the archive; return its anchor file (``OUT`` or ``OUT/traces.otf2``).

    Raises :class:`Otf2ExportError` when the anchor exists already, or
    :class:`~mpvis.tracefile.otf2_names.Otf2Missing` when ``otf2`` is absent.
    """
    otf2 = require_otf2()
    directory, name = archive_paths(out)
    anchor = directory / f"{name}.otf2"
    if anchor.exists() or (directory / name).exists():
        raise Otf2ExportError(f"{anchor} exists already: choose another output")
    by_rank: dict[int, list[EventRecord]] = defaultdict(list)
    for rec in records:
        by_rank[int(rec["rank"])].append(rec)
    times = [float(r["t"]) for rs in by_rank.values() for r in rs if "t" in r]
    t0 = min(times, default=0.0)
    directory.mkdir(parents=True, exist_ok=True)
    with otf2.writer.open(str(directory), archive_name=name, timer_resolution=_NS) as tr:
        if attributes:
            tr.description = HEADER_PREFIX + orjson.dumps(header).decode()
        defs = _Definitions(otf2, tr.definitions, int(header["nprocs"]), attributes)
        for rank in range(int(header["nprocs"])):
            recs = sorted(by_rank.get(rank, []), key=lambda r: int(r["seq"]))
            writer = tr.event_writer_from_location(defs.locations[rank])
            _RankWriter(otf2, defs, writer, rank, t0).write(recs)
    return anchor


class _Definitions:
    """The archive's definitions, made as they are first needed."""

    def __init__(self, otf2: Any, d: Any, nprocs: int, attributes: bool) -> None:
        self.otf2, self.d = otf2, d
        node = d.system_tree_node("mpvis run")
        self.locations = []
        for r in range(nprocs):
            group = d.location_group(f"rank {r}", system_tree_parent=node)
            self.locations.append(d.location(f"rank {r}", group=group))
        # OTF2 wants the MPI locations group before any communicator group.
        d.group("MPI locations", group_type=otf2.GroupType.COMM_LOCATIONS,
                paradigm=otf2.Paradigm.MPI, members=self.locations)
        self.world = d.group("MPI_COMM_WORLD group", group_type=otf2.GroupType.COMM_GROUP,
                             paradigm=otf2.Paradigm.MPI, members=list(range(nprocs)))
        self.attr = d.attribute(ATTRIBUTE, "an mpvis trace record (JSON)",
                                otf2.Type.STRING) if attributes else None
        self._comms: dict[int, Any] = {}
        self._regions: dict[str, Any] = {}
        self._contexts: dict[tuple[str, str | None], Any] = {}
        self._locks: dict[str, int] = {}
        self._win: Any = None
        self._param: Any = None

    def comm(self, cid: int) -> Any:
        if cid not in self._comms:
            name = "MPI_COMM_WORLD" if cid == 0 else f"mpvis comm {cid}"
            self._comms[cid] = self.d.comm(name, group=self.world, parent=None)
        return self._comms[cid]

    def region(self, name: str) -> Any:
        if name not in self._regions:
            mpi = name.startswith("MPI_")
            role = self.otf2.RegionRole.POINT2POINT if mpi else self.otf2.RegionRole.FUNCTION
            self._regions[name] = self.d.region(
                name, paradigm=self.otf2.Paradigm.MPI if mpi else self.otf2.Paradigm.USER,
                region_role=role)
        return self._regions[name]

    def context(self, region: str, site: str | None) -> Any:
        """The calling context of an MPI call made at ``site`` (``file:line``)."""
        key = (region, site)
        if key not in self._contexts:
            parent = None
            if site is not None:
                file, _, line = site.rpartition(":")
                if not file or not line.isdigit():
                    file, line = site, "0"
                scl = self.d.source_code_location(file, int(line))
                parent = self.d.calling_context(self.region("user code"), scl, None)
            self._contexts[key] = self.d.calling_context(self.region(region), None, parent)
        return self._contexts[key]

    def lock(self, name: str) -> tuple[Any, int]:
        if self._win is None:
            self._win = self.d.rma_win("mpvis locks", comm=self.comm(0))
        return self._win, self._locks.setdefault(name, len(self._locks))

    def state_parameter(self) -> Any:
        if self._param is None:
            self._param = self.d.parameter(STATE_PARAMETER)
        return self._param


class _RankWriter:
    """Writes one rank's records, in ``seq`` order, as OTF2 events."""

    def __init__(self, otf2: Any, defs: _Definitions, w: Any, rank: int, t0: float) -> None:
        self.o, self.defs, self.w, self.rank, self.t0 = otf2, defs, w, rank, t0
        self.ticks = 0
        self.frames: list[tuple[str, Any, EventRecord]] = []  # (role, context, opening record)
        self.nb_recv: dict[int, int] = {}  # seq of a nonblocking recv -> its request
        self.send_reqs: set[int] = set()

    def write(self, recs: list[EventRecord]) -> None:
        for i, rec in enumerate(recs):
            if "t" in rec:
                self.ticks = max(self.ticks, round((float(rec["t"]) - self.t0) * _NS))
            elif i:
                self.ticks += 1000
            attrs = {self.defs.attr: orjson.dumps(rec).decode()} if self.defs.attr else None
            self._close_for(rec)
            getattr(self, "_" + str(rec["kind"]))(rec, attrs, recs, i)

    # -- regions ----------------------------------------------------------------------
    def _enter(self, role: str, region: str, rec: EventRecord, attrs: Any = None) -> None:
        cc = self.defs.context(region, rec.get("site"))
        self.w(self.o.events.CallingContextEnter(self.ticks, cc, 1, attributes=attrs))
        self.frames.append((role, cc, rec))

    def _leave(self, attrs: Any = None) -> None:
        _role, cc, _rec = self.frames.pop()
        self.w(self.o.events.CallingContextLeave(self.ticks, cc, attributes=attrs))

    def _close_for(self, rec: EventRecord) -> None:
        """Leave a receive or completion region that ``rec`` does not belong to."""
        while self.frames:
            role, _cc, opened = self.frames[-1]
            kind = rec["kind"]
            if role == "recv" and kind == "consume" and rec.get("recv") == opened["seq"]:
                return
            if role == "completion" and (kind == "wait" or (
                    kind == "consume" and rec.get("recv") in self.nb_recv)):
                return
            if role == "coll" or (role == "lock" and kind == "locked"
                                  and rec.get("lock") == opened.get("lock")):
                return
            self._leave()

    def _ev(self, cls: str, *args: Any, attrs: Any = None) -> None:
        self.w(getattr(self.o.events, cls)(self.ticks, *args, attributes=attrs))

    # -- one method per record kind -------------------------------------------------
    def _send(self, rec: SendRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        blocking = bool(rec["blocking"])
        self._enter("call", send_region(blocking, bool(rec["sync"]), rec.get("mode")), rec)
        comm = self.defs.comm(int(rec.get("comm", 0)))
        size = int(rec.get("size", 0))
        if blocking:
            self._ev("MpiSend", rec["dest"], comm, rec["tag"], size, attrs=attrs)
        else:
            self.send_reqs.add(int(rec["req"]))
            self._ev("MpiIsend", rec["dest"], comm, rec["tag"], size, int(rec["req"]),
                     attrs=attrs)
        self._leave()

    def _recv(self, rec: RecvRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        if rec["blocking"]:
            self._enter("recv", "MPI_Recv", rec, attrs)
            return
        self.nb_recv[int(rec["seq"])] = int(rec["req"])
        self._enter("call", "MPI_Irecv", rec)
        self._ev("MpiIrecvRequest", int(rec["req"]), attrs=attrs)
        self._leave()

    def _consume(self, rec: ConsumeRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        comm = self.defs.comm(int(rec.get("comm", 0)))
        req = self.nb_recv.get(int(rec["recv"]))
        if req is not None:
            if not self.frames or self.frames[-1][0] != "completion":
                self._enter("completion", _wait_region(recs, i), rec)
            self._ev("MpiIrecv", rec["src"], comm, rec["tag"], 0, req, attrs=attrs)
            return
        opened = bool(self.frames) and self.frames[-1][0] == "recv"
        if not opened:
            self._enter("recv", "MPI_Recv", rec)
        self._ev("MpiRecv", rec["src"], comm, rec["tag"], 0, attrs=attrs)
        self._leave()

    def _wait(self, rec: WaitRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        if not self.frames or self.frames[-1][0] != "completion":
            self._enter("completion", "MPI_Waitall" if len(rec["reqs"]) > 1 else "MPI_Wait",
                        rec)
        for req in rec["reqs"]:
            if req in self.send_reqs:
                self.send_reqs.discard(req)
                self._ev("MpiIsendComplete", int(req))
        self._leave(attrs)

    def _coll(self, rec: CollRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        self._enter("coll", coll_region(str(rec["op"])), rec)
        self._ev("MpiCollectiveBegin", attrs=attrs)

    def _coll_exit(self, rec: CollExitRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        if self.frames and self.frames[-1][0] == "coll":
            opened = self.frames[-1][2]
        else:
            self._enter("coll", coll_region(str(rec["op"])), rec)
            opened = rec
        cid: int = opened["comm"] if "comm" in opened else rec.get("comm", 0)
        comm = self.defs.comm(int(cid))
        op = getattr(self.o.CollectiveOp, str(rec["op"]).upper(), self.o.CollectiveOp.BARRIER)
        root: Any = opened.get("root")
        root = self.o.Undefined.UINT32.value if root is None else int(root)
        nbytes: Any = opened.get("bytes", 0)
        self._ev("MpiCollectiveEnd", op, comm, root, int(nbytes), 0,
                 attrs=attrs)
        self._leave()

    def _lock_event(self, cls: str, rec: LockRecord, attrs: Any) -> None:
        win, lock_id = self.defs.lock(str(rec["lock"]))
        if cls == "RmaReleaseLock":
            self._ev(cls, win, 0, lock_id, attrs=attrs)
        else:
            self._ev(cls, win, 0, lock_id, self.o.LockType.EXCLUSIVE, attrs=attrs)

    def _lock(self, rec: LockRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        self._enter("lock", "MPI_Win_lock", rec)
        self._lock_event("RmaRequestLock", rec, attrs)

    def _locked(self, rec: LockRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        opened = bool(self.frames) and self.frames[-1][0] == "lock"
        if not opened:
            self._enter("lock", "MPI_Win_lock", rec)
        self._lock_event("RmaAcquireLock", rec, attrs)
        self._leave()

    def _unlock(self, rec: LockRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        self._enter("call", "MPI_Win_unlock", rec)
        self._lock_event("RmaReleaseLock", rec, attrs)
        self._leave()

    def _state(self, rec: StateRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        self._ev("ParameterString", self.defs.state_parameter(),
                 orjson.dumps(rec["vars"]).decode(), attrs=attrs)

    def _final(self, rec: FinalRecord, attrs: Any, recs: list[EventRecord], i: int) -> None:
        self._enter("call", "MPI_Finalize", rec, attrs)
        self._leave()


def _wait_region(recs: list[EventRecord], i: int) -> str:
    """``MPI_Waitall`` when the wait that follows completes several requests."""
    for rec in recs[i + 1:]:
        if rec["kind"] == "wait":
            return "MPI_Waitall" if len(rec["reqs"]) > 1 else "MPI_Wait"
        if rec["kind"] != "consume":
            break
    return "MPI_Wait"
