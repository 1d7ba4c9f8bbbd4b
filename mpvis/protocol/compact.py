"""Compact record batches: a rank's records in binary form, and their expansion (no I/O).

The trace library numbers events and appends fixed-size binary records in C
(:mod:`mpvis.instrument.recorder`), so that the traced rank does no
per-record Python work (MPVisualizer, section 2: the trace library must
disturb the program as little as possible).  They travel to the collector as
``COMPACT`` frames (:class:`~mpvis.protocol.framing.MsgType`); the collector
forwards them as they are, inside its envelopes (:mod:`mpvis.protocol.messages`),
and the central process expands them once, by :class:`CompactDecoder`, into the
records of ``shared/spec/trace-format.md``.

Body of a ``COMPACT`` message (a msgpack map), version 3::

    {"v": 3, "batch": n,           # numbered per rank connection from 0
     "recs": <bytes>,              # RECORD_SIZE bytes per record, seq order
     "site0": k, "sites": [...],   # site strings interned since the last batch: ids k, k+1, ...
     "extra0": j, "extras": [...]} # payloads of this batch's variable-size records: j, j+1, ...

A record is ``struct`` :data:`RECORD` (little-endian, 64 bytes): ``kind``,
``flags``, a zero, ``site`` (an id; 0: none), ``seq``, ``t`` (seconds since
the rank's recorder started), ``comm``, ``a``, ``b``, ``c``, ``d``, ``call``.
``call`` is the record's field ``call`` (the rank's MPI call that made it,
numbered from 0 by the recorder; every record of one call has the same
number); -1 (a ``state``, no MPI call) leaves the field out.  Version 3 added
it (version 2 records were 56 bytes and only a Sendrecv's send had ``call``).

========== ===================================================================
kind       fields
========== ===================================================================
1 send     a=dest, b=tag; flags: 1 blocking, 2 sync (``req`` = seq if nonblocking),
           16 a buffer message (field ``buf``, see below), 32 the send half of a
           Sendrecv (its receive half has the same ``call``)
2 recv     a=src, b=tag (-1: wildcard); flags: 1 blocking
3 consume  a=src, b=tag, c=recv; flags 4: d is the matched send's seq;
           flags 8: d is the channel ordinal (field ``chan``, see below)
4 wait     c=payload index (``extra0`` + position in ``extras``) of the request list
5 coll     c=index of ``[op, fields]`` (fields: root/count/dtype/redop/group)
6 coll_exit c=index of ``op``
7 state    c=index of the variables map
8 final    (no site)
9 recv +   a blocking receive and its consume in one record (the trace library
  consume  merges them when the receive did not block past a flush): the recv
           is ``seq`` (a=src, b=tag as posted, flags 1), the consume ``seq + 1``
           at ``t`` + (``comm`` >> 32) nanoseconds, with the same site;
           ``comm`` & 0xffffffff is the (32-bit) communicator, ``c`` packs the
           message's src (low 32 bits) and tag (high 32 bits), flags 4/8 and
           ``d`` are the consume's as in kind 3.  Version 2 added this kind.
========== ===================================================================

``chan``: a buffer message carries no piggyback; its consume records that it
was the ``chan``-th buffer message (from 0) this rank consumed on its channel (same
sender, receiver, communicator and tag).  By MPI's non-overtaking rule that is
the channel's ``chan``-th buffer send (marked ``buf``); the central process
names it in ``send``
(:mod:`mpvis.protocol.chansend`).  ``chan`` is an optional field of
the trace, and so is ``buf`` (the spec lets mpvis add optional fields).

Contract of :meth:`CompactDecoder.decode`: a body of the wrong shape raises
:class:`~mpvis.protocol.framing.ProtocolError`; a record that cannot be
expanded (unknown kind or site, bad payload, trailing bytes of a truncated
record) stops the batch there: the records before it are returned with the
reason, so that a rank's trace stays a gapless prefix.
"""

from __future__ import annotations

import struct
from typing import Any, Final

import orjson

from mpvis.protocol.codes import (
    MVC_BLOCKING,
    MVC_BUF,
    MVC_CHAN,
    MVC_SEND,
    MVC_SYNC,
    MVK_COLL,
    MVK_COLL_EXIT,
    MVK_CONSUME,
    MVK_FINAL,
    MVK_RECV,
    MVK_RECV_CONSUME,
    MVK_SEND,
    MVK_STATE,
    MVK_WAIT,
)
from mpvis.protocol.framing import ProtocolError
from mpvis.protocol.record_types import Record

__all__ = [
    "COMPACT_VERSION",
    "RECORD",
    "RECORD_SIZE",
    "CompactDecoder",
    "check_compact",
    "compact_body",
    "needs_channels",
]

COMPACT_VERSION: Final = 3
RECORD: Final = struct.Struct("<BBHIqdqiiqqq")
RECORD_SIZE: Final = RECORD.size



def compact_body(  # noqa: PLR0917 (the fields of the body, in order)
    batch: int, recs: bytes, site0: int, sites: list[str], extra0: int, extras: list[Any]
) -> dict[str, Any]:
    """The body of a ``COMPACT`` message (see the module docstring)."""
    return {
        "v": COMPACT_VERSION,
        "batch": batch,
        "recs": recs,
        "site0": site0,
        "sites": sites,
        "extra0": extra0,
        "extras": extras,
    }


def check_compact(body: dict[str, Any]) -> int:
    """Check the shape of a ``COMPACT`` body (raises
    :class:`~mpvis.protocol.framing.ProtocolError`); return how many trace records
    it expands to at most (a kind-9 record is two; a record that cannot be
    expanded stops the batch in :meth:`CompactDecoder.decode`).  Costs no
    per-record Python work: a collector forwards the bytes as they are."""
    if body.get("v") != COMPACT_VERSION:
        raise ProtocolError(f"COMPACT: unsupported version {body.get('v')!r}")
    recs = body.get("recs")
    if type(body.get("batch")) is not int or not isinstance(recs, bytes):
        raise ProtocolError("COMPACT: 'batch' must be an integer and 'recs' bytes")
    if not isinstance(body.get("sites"), list) or not isinstance(body.get("extras"), list):
        raise ProtocolError("COMPACT: 'sites' and 'extras' must be lists")
    if type(body.get("site0")) is not int or type(body.get("extra0")) is not int:
        raise ProtocolError("COMPACT: 'site0' and 'extra0' must be integers")
    whole = len(recs) - len(recs) % RECORD_SIZE
    return whole // RECORD_SIZE + recs[0:whole:RECORD_SIZE].count(MVK_RECV_CONSUME)


#: Maps a record's flags byte to 1 when it marks a buffer send or a channel consume.
_CHANNEL_FLAGS: Final = bytes(int(bool(f & (MVC_BUF | MVC_CHAN))) for f in range(256))


def needs_channels(body: dict[str, Any]) -> bool:
    """Whether a (checked) ``COMPACT`` body may hold a buffer send or a consume
    carrying ``chan`` (:mod:`mpvis.protocol.chansend` must see its records); a
    flags test on the bytes, no per-record Python work."""
    recs = body["recs"]
    return 1 in recs[1:len(recs) - len(recs) % RECORD_SIZE:RECORD_SIZE].translate(_CHANNEL_FLAGS)


class _BadRecord(Exception):
    pass


class CompactDecoder:
    """Expands one rank's ``COMPACT`` batches into trace records; keeps its site table."""

    def __init__(self, rank: int, sites: list[str] | None = None) -> None:
        """``sites``: the rank's site table so far (ids from 1), for decoding batches
        out of stream order (a rank's spill file); later batches' ``sites`` continue it."""
        self.rank = rank
        self._sites: list[str | None] = [None, *(sites or [])]  # id 0: no site
        self._json: list[bytes] = []  # the JSON texts of the first sites (site_json)
        self._json_tuple: tuple[bytes, ...] = ()

    @property
    def site_table(self) -> list[str | None]:
        """The rank's sites by id (id 0: no site); it only grows."""
        return self._sites

    def sites_after(self, body: dict[str, Any]) -> list[str | None] | None:
        """The site table once the (checked) batch ``body`` is taken, ``None`` if its
        sites are out of step; changes nothing."""
        sites: list[str | None] = body["sites"]
        site0 = body["site0"]
        if not sites:
            return self._sites
        if site0 != len(self._sites) or not all(isinstance(s, str) for s in sites):
            return None
        return self._sites + sites

    def take_sites(self, body: dict[str, Any]) -> str | None:
        """Add the (checked) batch's sites to the table; why not, if they are out of step."""
        sites, site0 = body["sites"], body["site0"]
        if self.sites_after(body) is None:
            return f"site table out of step (ids from {site0}, expected {len(self._sites)})"
        self._sites.extend(sites)
        return None

    def forget_sites(self, known: int) -> None:
        """Drop the sites from id ``known`` on (a batch taken back before any use)."""
        del self._sites[known:]
        del self._json[known:]
        self._json_tuple = self._json_tuple[:known]

    def site_json(self) -> tuple[bytes, ...]:
        """The JSON texts (``orjson``'s) of the sites, by id (id 0: ``null``); each made
        once per rank, the tuple once per growth of the table."""
        json = self._json
        if len(json) < len(self._sites):
            json += map(orjson.dumps, self._sites[len(json):])
            self._json_tuple = tuple(json)
        return self._json_tuple

    def decode(self, body: dict[str, Any]) -> tuple[list[Record], str | None]:
        """The batch's records, and why it stopped early (``None``: it did not)."""
        check_compact(body)
        error = self.take_sites(body)
        records, stop = self.expand(body["recs"], body["extra0"], body["extras"])
        return records, error if stop is None else _join(error, stop)

    def expand(self, recs: bytes, extra0: int, extras: list[Any]
               ) -> tuple[list[Record], str | None]:
        """The records of ``recs`` (with the sites known so far), and why they
        stopped early (``None``: they did not); :meth:`decode` without the site step."""
        whole = len(recs) - len(recs) % RECORD_SIZE
        out: list[Record] = []
        append, rank, table, nsites = out.append, self.rank, self._sites, len(self._sites)
        for fields in RECORD.iter_unpack(memoryview(recs)[:whole]):
            kind, flags, _, site_id, seq, t, comm, a, b, c, d, call = fields
            # The point-to-point kinds inline (most records): one dict literal each,
            # the keys those _expand gives the others.  ``call`` is in the literal (a
            # key added after a literal of 10 would make the dict grow: 30% of the cost).
            if kind == MVK_SEND and site_id < nsites and not flags & MVC_BUF:
                rec: Record = {"rank": rank, "seq": seq, "kind": "send", "t": t,
                               "site": table[site_id], "comm": comm, "dest": a, "tag": b,
                               "blocking": bool(flags & MVC_BLOCKING),
                               "sync": bool(flags & MVC_SYNC), "call": call}
                if not flags & MVC_BLOCKING:
                    rec["req"] = seq
            elif kind == MVK_RECV and site_id < nsites:
                rec = {"rank": rank, "seq": seq, "kind": "recv", "t": t,
                       "site": table[site_id], "comm": comm, "src": a, "tag": b,
                       "blocking": bool(flags & MVC_BLOCKING), "call": call}
                if not flags & MVC_BLOCKING:
                    rec["req"] = seq
            elif kind == MVK_CONSUME and site_id < nsites and flags & MVC_SEND:
                rec = {"rank": rank, "seq": seq, "kind": "consume", "t": t,
                       "site": table[site_id], "comm": comm, "recv": c, "src": a, "tag": b,
                       "send": [a, d], "call": call}
            else:
                try:
                    if kind == MVK_RECV_CONSUME:
                        out += self._merged(fields)
                    else:
                        append(self._expand(fields, extra0, extras))
                except _BadRecord as exc:
                    return out, f"record seq {seq}: {exc}"
                continue
            if call < 0:
                del rec["call"]
            append(rec)
        if whole != len(recs):
            return out, f"truncated batch: {len(recs) - whole} bytes of a partial record"
        return out, None

    def expand_one(self, fields: tuple[Any, ...], extra0: int, extras: list[Any]
                   ) -> Record | None:
        """One record of kind 1 to 8 (the fields of :data:`RECORD`) as
        :meth:`expand` gives it, ``None`` if it cannot be expanded."""
        try:
            return self._expand(fields, extra0, extras)
        except _BadRecord:
            return None

    def _site(self, site_id: int) -> str | None:
        if not 0 <= site_id < len(self._sites):
            raise _BadRecord(f"unknown site id {site_id}")
        return self._sites[site_id]

    def _merged(self, f: tuple[Any, ...]) -> tuple[Record, Record]:
        """A kind-9 record: the blocking recv and its consume."""
        _, flags, _, site_id, seq, t, comm, a, b, c, d, call = f
        site = self._site(site_id)
        comm, ns = _split(comm)
        src, tag = _split(c)
        recv: Record = {"rank": self.rank, "seq": seq, "kind": "recv", "t": t, "site": site,
                        "comm": comm, "src": a, "tag": b, "blocking": True, "call": call}
        consume: Record = {"rank": self.rank, "seq": seq + 1, "kind": "consume",
                           "t": t + (ns & 0xFFFFFFFF) * 1e-9, "site": site, "comm": comm,
                           "recv": seq, "src": src, "tag": tag, "call": call}
        if flags & MVC_SEND:
            consume["send"] = [src, d]
        elif flags & MVC_CHAN:
            consume["chan"] = d
        if call < 0:
            del recv["call"], consume["call"]
        return recv, consume

    def _expand(self, f: tuple[Any, ...], extra0: int, extras: list[Any]) -> Record:
        kind, flags, _, site_id, seq, t, comm, a, b, c, d, call = f
        site = self._site(site_id)
        rec: Record = {"rank": self.rank, "seq": seq}
        if kind == MVK_SEND:
            rec.update(kind="send", t=t, site=site, comm=comm, dest=a, tag=b)
            rec["blocking"] = bool(flags & MVC_BLOCKING)
            rec["sync"] = bool(flags & MVC_SYNC)
            if not flags & MVC_BLOCKING:
                rec["req"] = seq
            if flags & MVC_BUF:
                rec["buf"] = True
        elif kind == MVK_RECV:
            rec.update(kind="recv", t=t, site=site, comm=comm, src=a, tag=b)
            rec["blocking"] = bool(flags & MVC_BLOCKING)
            if not flags & MVC_BLOCKING:
                rec["req"] = seq
        elif kind == MVK_CONSUME:
            rec.update(kind="consume", t=t, site=site, comm=comm, recv=c, src=a, tag=b)
            if flags & MVC_SEND:
                rec["send"] = [a, d]
            elif flags & MVC_CHAN:
                rec["chan"] = d
        elif kind == MVK_FINAL:
            rec.update(kind="final", t=t)
        elif kind in (MVK_WAIT, MVK_COLL, MVK_COLL_EXIT, MVK_STATE):
            if not 0 <= c - extra0 < len(extras):
                raise _BadRecord(f"payload {c} is not among the batch's ({extra0}..)")
            self._variable(rec, kind, t, site, comm, extras[c - extra0])
        else:
            raise _BadRecord(f"unknown kind {kind}")
        if call >= 0:
            rec["call"] = call
        return rec

    @staticmethod
    def _variable(rec: Record, kind: int, t: float, site: Any, comm: int, x: Any) -> None:  # noqa: PLR0917
        if kind == MVK_WAIT:
            if not isinstance(x, list):
                raise _BadRecord("a wait's payload must be a list of requests")
            rec.update(kind="wait", t=t, site=site, reqs=x)
        elif kind == MVK_STATE:
            if not isinstance(x, dict):
                raise _BadRecord("a state's payload must be a map")
            rec.update(kind="state", t=t, site=site, vars=x)
        elif kind == MVK_COLL_EXIT:
            if not isinstance(x, str):
                raise _BadRecord("a coll_exit's payload must be the op")
            rec.update(kind="coll_exit", t=t, site=site, comm=comm, op=x)
        else:
            if not (isinstance(x, list | tuple) and len(x) == 2 and isinstance(x[1], dict)):
                raise _BadRecord("a coll's payload must be [op, fields]")
            rec.update(kind="coll", t=t, site=site, comm=comm, op=x[0])
            rec.update(x[1])


def _split(v: int) -> tuple[int, int]:
    """The signed low and high 32-bit halves of the 64-bit field ``v``."""
    lo = v & 0xFFFFFFFF
    return lo - (1 << 32) if lo >= 1 << 31 else lo, v >> 32


def _join(first: str | None, second: str) -> str:
    return second if first is None else f"{first}; {second}"
