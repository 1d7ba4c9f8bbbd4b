"""The bodies of wire messages: builders and checks (no I/O).

The frame format is in :mod:`mpvis.protocol.framing`; this module says what
each message's map holds, for the two links of MPVisualizer's section 2:

*rank → collector* (on the rank's machine, loopback)
    ``HELLO {"role": "rank", "rank", "token", "pid", "host"}``, then ``HEADER``
    (the run's trace header; rank 0 only), ``COMPACT`` batches of binary
    records (:mod:`mpvis.protocol.compact`; the trace library sends these) or
    ``RECORDS {"batch", "records"}`` batches of ready-made records (the
    simulated programs), and ``BYE {"rank", "status", "detail"}`` at normal
    termination.
    A connection that closes without ``BYE`` is a crashed rank.

*collector → central process* (TCP, loopback unless a run spans machines)
    ``HELLO {"role": "collector", "collector", "run", "token", "pid", "host"}``,
    then only ``RECORDS`` *envelopes* numbered per collector from 0::

        {"batch": n, "records": [...],
         "compact": [...],         # optional: ranks' COMPACT bodies, each with
                                   #   "rank" and "conn" (its rank connection's
                                   #   number at the collector) added
         "header": {...},          # optional: the run's header
         "ends": [bye bodies],     # optional: ranks that ended (after their records)
         "end": {...}}             # optional: the run is over (the last envelope)

    The central process answers ``STATUS {"welcome": true, "compact": true}``
    (``compact``: it expands forwarded ``COMPACT`` batches; a collector stops,
    with that reason, at a welcome without it, from an older mpvis) or
    ``REFUSED {"reason"}`` to the hello, ``ACK {"batch": n}`` once every
    envelope up to ``n`` is journaled, and ``STATUS {"stop": true}`` when the
    run has ended (its journal closed).  ``welcome`` and ``stop`` may carry
    ``"journal"``: where the run is journaled.  ``STATUS {"halt": true}``
    asks the run's launcher to stop the program (the window's Stop command);
    the collector keeps forwarding until the run's end.  ``STATUS {"notice":
    text}`` is a line for the launcher to print (a deadlock the window found).  An envelope is
    applied in the order header, records, compact, ends, end, so that a rank's end
    never precedes its records.  ``COMPACT`` batches travel as the rank sent
    them (the collector does no per-record work); the central process expands
    each once, with one :class:`~mpvis.protocol.compact.CompactDecoder` per
    ``(collector, conn)`` (its site table continues from batch to batch).

Checks raise :class:`~mpvis.protocol.framing.ProtocolError`: a message with
the wrong shape is a protocol violation, like garbage bytes.
"""

from __future__ import annotations

from typing import Any, Final

from mpvis.errors import MpvisError
from mpvis.protocol.framing import ProtocolError

__all__ = [
    "END_STATUSES",
    "ROLE_COLLECTOR",
    "ROLE_RANK",
    "RefusedError",
    "bye_body",
    "check_bye",
    "check_envelope",
    "check_hello",
    "check_rank_records",
    "envelope_body",
    "hello_collector",
    "hello_rank",
]

ROLE_RANK: Final = "rank"
ROLE_COLLECTOR: Final = "collector"
FINAL: Final = "final"
CRASHED: Final = "crashed"
KILLED: Final = "killed"
END_STATUSES: Final = (FINAL, CRASHED, KILLED)

Body = dict[str, Any]


class RefusedError(MpvisError):
    """A peer is refused at its HELLO (wrong token or role, a busy or ended run):
    the receiving end sends REFUSED with this reason, then closes the connection."""


def hello_rank(rank: int, token: str | None, *, pid: int, host: str) -> Body:
    """The HELLO a rank sends its collector."""
    return {"role": ROLE_RANK, "rank": rank, "token": token, "pid": pid, "host": host}


def hello_collector(collector: str, run: str, token: str | None, *, pid: int, host: str) -> Body:
    """The HELLO a collector sends the central process."""
    return {
        "role": ROLE_COLLECTOR,
        "collector": collector,
        "run": run,
        "token": token,
        "pid": pid,
        "host": host,
    }


def bye_body(rank: int, status: str = FINAL, detail: str = "") -> Body:
    """The BYE of a rank (also the entries of an envelope's ``ends``)."""
    return {"rank": rank, "status": status, "detail": detail}


def envelope_body(
    batch: int,
    records: list[Body],
    *,
    header: Body | None = None,
    ends: list[Body] | None = None,
    end: Body | None = None,
    compact: list[Body] | None = None,
) -> Body:
    """A collector's numbered RECORDS envelope (see the module docstring)."""
    body: Body = {"batch": batch, "records": records}
    if compact:
        body["compact"] = compact
    if header is not None:
        body["header"] = header
    if ends:
        body["ends"] = ends
    if end is not None:
        body["end"] = end
    return body


def _int(body: Body, field: str, what: str, minimum: int = 0) -> int:
    v = body.get(field)
    if type(v) is not int or v < minimum:
        raise ProtocolError(f"{what}: field '{field}' must be an integer >= {minimum}, got {v!r}")
    return v


def _token(body: Body) -> str | None:
    tok = body.get("token")
    if tok is not None and not isinstance(tok, str):
        raise ProtocolError("HELLO: field 'token' must be a string or null")
    return tok


def check_hello(body: Body) -> Body:
    """Check a HELLO; return it.  ``role`` decides the other required fields."""
    role = body.get("role")
    _token(body)
    if role == ROLE_RANK:
        _int(body, "rank", "HELLO")
    elif role == ROLE_COLLECTOR:
        for field in ("collector", "run"):
            if not isinstance(body.get(field), str) or not body[field]:
                raise ProtocolError(f"HELLO: field '{field}' must be a non-empty string")
    else:
        raise ProtocolError(f"HELLO: unknown role {role!r}")
    return body


def check_rank_records(body: Body) -> list[Body]:
    """Check a rank's RECORDS batch; return its records (not checked one by one)."""
    _int(body, "batch", "RECORDS")
    recs = body.get("records")
    if not isinstance(recs, list):
        raise ProtocolError("RECORDS: field 'records' must be a list")
    return recs


def check_bye(body: Body) -> Body:
    """Check a BYE (or an entry of ``ends``); return it."""
    _int(body, "rank", "BYE")
    if body.get("status") not in END_STATUSES:
        raise ProtocolError(
            f"BYE: 'status' must be one of {END_STATUSES}, got {body.get('status')!r}"
        )
    if not isinstance(body.get("detail", ""), str):
        raise ProtocolError("BYE: field 'detail' must be a string")
    return body


def check_envelope(body: Body) -> Body:
    """Check a collector's envelope (shape only; records are checked by the journal)."""
    check_rank_records(body)
    header = body.get("header")
    if header is not None and not isinstance(header, dict):
        raise ProtocolError("RECORDS: field 'header' must be a map")
    ends = body.get("ends", [])
    if not isinstance(ends, list):
        raise ProtocolError("RECORDS: field 'ends' must be a list")
    for e in ends:
        if not isinstance(e, dict):
            raise ProtocolError("RECORDS: every entry of 'ends' must be a map")
        check_bye(e)
    end = body.get("end")
    if end is not None and not isinstance(end, dict):
        raise ProtocolError("RECORDS: field 'end' must be a map")
    compact = body.get("compact", [])
    if not isinstance(compact, list):
        raise ProtocolError("RECORDS: field 'compact' must be a list")
    for c in compact:
        if not isinstance(c, dict):
            raise ProtocolError("RECORDS: every entry of 'compact' must be a map")
        _int(c, "rank", "RECORDS compact")
        _int(c, "conn", "RECORDS compact")
    return body
