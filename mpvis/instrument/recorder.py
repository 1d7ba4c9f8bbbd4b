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
  Sendrecv: the record gets ``call``, so analyses know its receive runs
  concurrently); a nonblocking send's ``req`` is its seq;
* ``recv(comm, src, tag, blocking)`` (wildcards already ``-1``);
* ``consume(comm, recv, src, tag, send_seq | None)``;
* ``unwrap(comm, recv, msg, src, tag)``: the consume of an object message
  ``msg`` = ``(send seq or None, obj[, extra])`` (as loaded by
  :mod:`mpvis.instrument.piggyback`); returns ``obj`` (not a seq);
* ``consume_chan(comm, recv, src, tag, exact)``: the consume of a buffer
  message; the recorder counts the messages consumed per channel and records
  the count as ``chan`` when ``exact`` (completions seen in posting order);
* ``wait(reqs)``, ``coll(comm, op, fields)``, ``coll_exit(comm, op)``,
  ``state(variables)``, ``final()``;
* ``site()``: ``"file:line"`` of the caller; ``drain(max)``; ``pending()``;
  ``idle_wait(quiet, longest)`` and ``wake()`` (the flusher's wait, without
  the GIL: :class:`mpvis.instrument.transport.Flusher`);
  attributes ``rank``, ``seq`` (the next event's), ``t0``.

Call sites are the first frame whose file is outside ``internal_dirs`` (the
trace library, mpi4py), cached per code object and instruction.  Nothing is
validated on the hot path; the collector and journal check every record.
Ranks are ``MPI_COMM_WORLD`` ranks; translating them is the caller's job.
"""

from __future__ import annotations

from typing import Any

from mpvis.instrument._crecorder import RECORD_SIZE, Recorder

__all__ = [
    "BLOCKING", "BUF", "PAIR", "RECORD_SIZE", "SYNC", "Drained", "Recorder", "Site", "clean_state",
]

#: A call site, ``"file:line"``.
Site = str

#: ``send`` flags.
BLOCKING = 1
SYNC = 2
BUF = 16
PAIR = 32

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
