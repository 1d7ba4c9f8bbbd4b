"""The in-rank event recorder: numbers events and keeps them as compact binary records.

One :class:`Recorder` lives in each traced rank.  Every wrapper of
:mod:`mpvis.instrument.traced_comm` and :mod:`mpvis.instrument.traced_request`
calls one of its methods, which numbers the event (``seq``), takes the time,
finds the caller's site and appends one fixed-size binary record to a buffer
(the layout of :mod:`mpvis.protocol.compact`).  The recorder is written in C
(``_crecorder.c``, built by ``pip install``): a record costs a few tens of
nanoseconds, where building it in Python cost about a microsecond, more than
the 30% budget of a small message allows (MPVisualizer, section 2: the trace
library must disturb the traced program as little as possible).

Nothing here does I/O or touches MPI.  The flusher thread of
:mod:`mpvis.instrument.transport` calls ``drain(max)``, which hands over the
oldest records as bytes, with the site strings interned since the previous
drain and the payloads of variable-size records; records become the spec's
dicts (``shared/spec/trace-format.md``) only in the collector
(:class:`mpvis.protocol.compact.CompactDecoder`).

Methods (positional arguments; each returns the event's ``seq``):

* ``send(comm, dest, tag, flags)``: flags :data:`BLOCKING`, :data:`SYNC`,
  :data:`BUF` (a buffer message: its consume is matched by the channel rule,
  see :mod:`mpvis.protocol.chansend`), :data:`PAIR` (the send half of a
  Sendrecv), :data:`CONT` (see below); a nonblocking send's ``req`` is its seq;
* ``recv(comm, src, tag, flags)`` (wildcards already ``-1``; flags
  :data:`BLOCKING`, :data:`CONT`; a bool is blocking or not);
* ``consume(comm, recv, src, tag, send_seq | None)``;
* ``unwrap(comm, recv, msg, src, tag)``: the consume of an object message
  ``msg`` = ``(send seq or None, obj[, extra])`` (as loaded by
  :mod:`mpvis.instrument.piggyback`); returns ``obj`` (not a seq);
* ``consume_chan(comm, recv, src, tag, exact)``: the consume of a buffer
  message; the recorder counts the messages consumed per channel and records
  the count as ``chan`` when ``exact`` (completions seen in posting order);
* ``wait(reqs)``, ``coll(comm, op, fields)``, ``coll_exit(comm, op)``,
  ``state(variables)``, ``final()``;
* ``close_call()`` (see below);
* ``site()``: ``"file:line"`` of the caller; ``drain(max)``; ``pending()``;
  ``idle_wait(quiet, longest)`` and ``wake()`` (the flusher's wait, without
  the GIL: :class:`mpvis.instrument.transport.Flusher`);
  attributes ``rank``, ``seq`` (the next event's), ``call`` (the next MPI
  call's number), ``t0``.

**Call numbers** (the records' ``call`` field, docs/trace-format.md): every
record but a ``state`` belongs to one MPI call of the rank, numbered from 0.
The recorder keeps, per thread, the call that thread has open: ``send``,
``recv``, ``coll`` and ``final`` start a new call (and open it), unless given
:data:`CONT`; ``consume``, ``unwrap``, ``consume_chan``, ``coll_exit`` and
``wait`` continue the open call (or start one if the thread has none open).
So a blocking receive's consume, a collective's exit and a Sendrecv's receive
(:data:`CONT`) share their call's number; a completion (wait, test...) calls
``close_call()`` first, so that the consumes it records, then its ``wait``,
form a call of their own.  The number costs the recorder a thread-local read
and an increment; it travels in the compact record (no extra call from Python
on the blocking paths).

Call sites are the first frame whose file is outside ``internal_dirs`` (the
trace library, mpi4py), cached per code object and instruction.  Nothing is
validated on the hot path; the collector and journal check every record.
Ranks are ``MPI_COMM_WORLD`` ranks; translating them is the caller's job.
"""

from __future__ import annotations

from typing import Any, Final

from mpvis.instrument._crecorder import RECORD_SIZE, Recorder
from mpvis.protocol.codes import MVA_CONT, MVC_BLOCKING, MVC_BUF, MVC_PAIR, MVC_SYNC

__all__ = [
    "BLOCKING", "BUF", "CONT", "PAIR", "RECORD_SIZE", "SYNC", "Drained", "Recorder", "Site",
    "clean_state",
]

#: A call site, ``"file:line"``.
Site = str

#: ``send`` flags (:mod:`mpvis.protocol.codes`, the compact records' flags).
BLOCKING: Final = MVC_BLOCKING
SYNC: Final = MVC_SYNC
BUF: Final = MVC_BUF
PAIR: Final = MVC_PAIR
#: ``send``/``recv`` flag: the record continues its thread's open call (a
#: Sendrecv's receive half; the second and later requests of a ``Startall``).
CONT: Final = MVA_CONT

#: What ``Recorder.drain`` returns: (records, first new site id, new sites,
#: first payload's index, payloads); see :func:`mpvis.protocol.compact.compact_body`.
Drained = tuple[bytes, int, list[str], int, list[Any]]


def clean_state(variables: dict[str, Any]) -> dict[str, Any]:
    """``state`` variables with values that are not JSON scalars replaced by their
    ``repr``; so are integers beyond 64 bits, which the wire format cannot carry."""
    return {str(k): v if _scalar(v) else repr(v) for k, v in variables.items()}


def _scalar(v: object) -> bool:
    if type(v) is int:
        return -(2**63) <= v < 2**64
    return v is None or type(v) in (float, str, bool)
