"""The traced communicator: mpi4py point-to-point calls with records and piggyback.

:class:`TracedIntracomm` is a Python subclass of ``mpi4py.MPI.Intracomm``
(mpi4py's C types refuse new attributes, but accept subclasses).  ``launch``
replaces ``MPI.COMM_WORLD`` by one; every communicator derived from a traced
one (``Dup``, ``Split``, ``Create``, ``Create_group``, ``Split_type``) is traced
too.  Collective wrappers are added by :mod:`mpvis.instrument.traced_coll`.

Records follow ``shared/spec/trace-format.md``: ranks are world ranks (a
derived communicator's ranks are translated), wildcards are ``-1``, a blocking
receive is a ``recv`` then a ``consume``, a nonblocking one a ``recv`` whose
``consume`` is recorded by the completing wait or test
(:mod:`mpvis.instrument.traced_request`).

Piggyback: how a consume learns the ``[rank, seq]`` of the send it matched
---------------------------------------------------------------------------
* Object calls (``send``, ``isend``, ``recv``, ``sendrecv``, ...): mpi4py
  pickles the program's object with our ``MPI.pickle`` functions, which append
  the send's ``seq`` after the pickle (:mod:`mpvis.instrument.piggyback`);
  the receiving wrapper gets the number back from the same functions and
  records the consume (the C recorder's ``unwrap`` takes ``(seq, obj)`` apart in
  one call on the Python paths).  The number is inside the message, so it is
  right whatever the wildcards, the order of completion or the use of probes
  (a probe sees the user's source and tag; the byte count of a pickled
  message is not something a program can rely on anyway).  The message's
  real source and tag come from the receive's arguments or, for wildcards,
  its ``Status``.  A message without the number (from an untraced
  communicator) gives a consume without ``send``, which the reader infers.
* Buffer calls (``Send``, ``Isend``, ``Recv``, ``Irecv``, ``Sendrecv``, ...): the
  user's message is sent untouched and alone, so ``Probe``/``Get_count`` see
  exactly the program's message and a small message costs one MPI message,
  not two.  The send record is marked as a buffer send; the consume records
  the channel ordinal ``chan``: this is the k-th buffer message the rank
  consumed from that (source, communicator, tag).  MPI's non-overtaking rule
  makes each (source, dest, communicator, tag) channel FIFO and receives take
  a channel's messages in their posting order, so the k-th completion on a
  channel took the channel's k-th send -- provided completions on a channel
  are observed in posting order.  The central process names that send in the
  consume's ``send`` field before journaling
  (:mod:`mpvis.protocol.chansend`, which states the exactness caveats: a
  message from a send this library does not wrap, ``Isendrecv`` or a
  partitioned send, shifts the count of its channel; persistent requests are
  wrapped: each ``Start`` is a send or receive of its own).
  When a receive completes while an earlier-posted, still pending receive of
  the same communicator could match the same channel, the order is unknown:
  the consume then omits ``chan`` (the reader infers ``send`` by the same
  non-overtaking rule, exactly), and so do the pending receives it overtook.
* With record/replay hooks installed (:mod:`mpvis.instrument.hooks`), buffer
  messages need their extra data: an 8-byte header with the ``seq`` (then the
  hooks' data) goes to the same destination with the same tag on a *shadow*
  communicator (a ``Dup`` made when the traced communicator is created) just
  before the message, and the completing receive takes the next header of
  its (source, tag) with a nonblocking matched probe: the same FIFO property,
  at the price of a second message per send.  Headers are sent with ``Isend``
  (tiny, eager) and reaped without blocking.

Probes (``probe``, ``iprobe``, ``Probe``, ``Iprobe``) are not records (the spec
has no kind for them) and need no wrapper.  Matched probes (``mprobe``,
``Mprobe``...) are wrapped so that ``Message.recv``/``Message.Recv`` records
``recv`` + ``consume`` and strips the piggyback, and ``Message.irecv``/
``Message.Irecv`` a nonblocking ``recv`` whose completion records the consume.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import msgpack
from mpi4py import MPI

from mpvis.instrument._crecorder import FastP2P, configure
from mpvis.instrument.hooks import ACTIVE as _HOOKS
from mpvis.instrument.hooks import MessageHooks
from mpvis.instrument.piggyback import call as _call
from mpvis.instrument.piggyback import install as _install_piggyback
from mpvis.instrument.recorder import BLOCKING, BUF, CONT, PAIR, SYNC, Recorder
from mpvis.instrument.traced_request import (
    RECV_BUF,
    RECV_OBJ,
    SEND,
    TracedPrequest,
    TracedRequest,
)

__all__ = ["TracedIntracomm", "TracedMessage", "bind_world", "reap_headers"]

_ANY_SOURCE = MPI.ANY_SOURCE
_ANY_TAG = MPI.ANY_TAG
_PROC_NULL = MPI.PROC_NULL
_Status = MPI.Status
_BYTE = MPI.BYTE
_C = MPI.Intracomm
_MRecv = MPI.Message.Recv

#: Header receive buffer (8-byte seq, then msgpack of the hooks' extra data).
_HDR_MAX = 1 << 16
_hdr_buf = bytearray(_HDR_MAX)
_hdr_status = MPI.Status()
#: Header send requests not yet known complete (reaped by Testsome).
_hdr_reqs: list[MPI.Request] = []
_REAP_AT = 64

# The hot path calls the recorder's bound C methods through these (set by bind_world).
_rsend: Callable[[int, int, int, int], int]
_rrecv: Callable[[int, int, int, int], int]
_runwrap: Callable[[int, int, Any, int, int], Any]
_rchan: Callable[[int, int, int, int, bool], int]


def _t(tag: int) -> int:
    return -1 if tag == _ANY_TAG else tag


class TracedIntracomm(FastP2P, MPI.Intracomm):
    """An intracommunicator whose point-to-point calls are traced (module docstring).

    The blocking calls ``send``, ``recv``, ``Send`` and ``Recv``, the most
    frequent in mpi4py programs, come from
    :class:`~mpvis.instrument._crecorder.FastP2P`: written in C, they record,
    piggyback and call mpi4py's method with no Python frame of their own;
    whatever their fast path does not cover (record/replay hooks, a derived
    communicator's rank translation, ``PROC_NULL``, a ``Recv`` while receives
    of the communicator are pending) they hand to the ``_mv_*_slow`` methods.
    """

    __slots__ = (
        "_mv_group",
        "_mv_group_sent",
        "_mv_id",
        "_mv_local",
        "_mv_pending",
        "_mv_ring",
        "_mv_shadow",
        "_mv_w",
    )
    _mv_rec: ClassVar[Recorder]
    #: Per-rank state shared by all traced communicators: ``[next creation index, nprocs]``.
    _mv_counter: ClassVar[list[int]] = [1, 1]
    #: Makes the collective checker of a new communicator (``None``: no checks).
    ring_factory: ClassVar[Callable[[TracedIntracomm], Any] | None] = None
    #: Live traced communicators, by id (for the end-of-run checks).
    _mv_live: ClassVar[dict[int, TracedIntracomm]] = {}

    _mv_id: int
    _mv_w: tuple[int, ...] | None  # local rank -> world rank, None for the identity
    _mv_local: dict[int, int] | None  # world rank -> local rank
    _mv_shadow: MPI.Intracomm
    _mv_pending: dict[int, tuple[int, int, TracedRequest]]
    _mv_group: list[int]
    _mv_group_sent: bool
    _mv_ring: Any

    @classmethod
    def traced(cls, raw: MPI.Intracomm, comm_id: int, world: list[int]) -> TracedIntracomm:
        """Wrap ``raw`` (collective over it: duplicates the shadow communicator)."""
        c = cls(raw)
        c._mv_id = comm_id
        identity = world == list(range(len(world))) and comm_id == 0
        c._mv_w = None if identity else tuple(world)
        c._mv_local = None if identity else {g: i for i, g in enumerate(world)}
        c._mv_shadow = _C.Dup(_C(raw))
        c._mv_pending = {}
        c._mv_group = world
        c._mv_group_sent = comm_id == 0
        factory = cls.ring_factory
        c._mv_ring = None if factory is None else factory(c)
        cls._mv_live[comm_id] = c
        return c

    def mv_finalize_checks(self) -> None:
        """End-of-run ring checks of every live traced communicator, in id order.

        Ids grow with creation on every member, so members of overlapping
        communicators finalise them in the same order (no cycle of waits).
        """
        for cid in sorted(self._mv_live):
            ring = self._mv_live[cid]._mv_ring
            if ring is not None:
                ring.finalize()

    # -- helpers ---------------------------------------------------------------

    def _mv_world(self, r: int) -> int:
        w = self._mv_w
        return r if w is None else w[r]

    def _mv_force(self, h: MessageHooks, rseq: int, source: int, tag: int) -> tuple[int, int]:
        src, t = h.force_source(
            self._mv_id, rseq, -1 if source == _ANY_SOURCE else self._mv_world(source), _t(tag)
        )
        loc = self._mv_local
        source = _ANY_SOURCE if src == -1 else (src if loc is None else loc[src])
        return source, _ANY_TAG if t == -1 else t

    def _mv_post_send(self, dest: int, tag: int, flags: int) -> tuple[int, Any]:
        """Record a send; return its seq and the hooks' extra data for it."""
        seq = _rsend(self._mv_id, self._mv_world(dest), tag, flags)
        h = _HOOKS[0]
        if h is None:
            return seq, None
        return seq, h.outgoing(self._mv_id, self._mv_world(dest), tag, seq)

    def _mv_buf_header(self, dest: int, tag: int, flags: int) -> int:
        """Record a buffer send (and send its header when hooks are active); return its seq."""
        if _HOOKS[0] is None:
            return _rsend(self._mv_id, self._mv_world(dest), tag, flags | BUF)
        seq, extra = self._mv_post_send(dest, tag, flags)
        data = seq.to_bytes(8, "little")
        if extra is not None:
            data += msgpack.packb(extra, use_bin_type=True)
        _hdr_reqs.append(_C.Isend(self._mv_shadow, [data, _BYTE], dest, tag))
        if len(_hdr_reqs) >= _REAP_AT:
            reap_headers()
        return seq

    def _mv_post_recv(self, source: int, tag: int, flags: int) -> tuple[int, int, int]:
        """Record a receive (``flags``: :data:`BLOCKING`, :data:`CONT`, or a bool: blocking);
        return its seq and the (source, tag) to post it with."""
        w = self._mv_w
        rseq = _rrecv(
            self._mv_id,
            -1 if source == _ANY_SOURCE else (source if w is None else w[source]),
            -1 if tag == _ANY_TAG else tag,
            flags,
        )
        h = _HOOKS[0]
        if h is not None:
            source, tag = self._mv_force(h, rseq, source, tag)
        return rseq, source, tag

    def _mv_unwrap(self, rseq: int, msg: Any, st: MPI.Status) -> Any:
        """Record the consume of object message ``msg`` (``(send seq, obj[, extra])``)
        received with status ``st``; return the program's object."""
        wsrc, tag = self._mv_world(st.Get_source()), st.Get_tag()
        obj = _runwrap(self._mv_id, rseq, msg, wsrc, tag)
        h = _HOOKS[0]
        if h is not None:
            h.incoming(self._mv_id, rseq, wsrc, tag, msg[0], msg[2] if len(msg) > 2 else None)
        return obj

    def _mv_consume_buf(self, rseq: int, src: int, tag: int, taint: bool) -> None:
        """Record the consume of a buffer message from local rank ``src`` with ``tag``."""
        exact = not taint and not (self._mv_pending and self._mv_overtakes(rseq, src, tag))
        w = self._mv_w
        wsrc = src if w is None else w[src]
        h = _HOOKS[0]
        if h is None:
            _rchan(self._mv_id, rseq, wsrc, tag, exact)
            return
        # The header left the sender before the message; MPICH delivers one
        # sender's messages in order, so it is here -- unless the sender used
        # a call this library does not wrap (Isendrecv, partitioned sends):
        # then the consume omits ``send`` rather than wait forever.
        header = _C.Improbe(self._mv_shadow, src, tag, _hdr_status)
        sseq: int | None = None
        if header is not None:
            _MRecv(header, [_hdr_buf, _BYTE])
            sseq = int.from_bytes(_hdr_buf[:8], "little")
        self._mv_rec.consume(self._mv_id, rseq, wsrc, tag, sseq if exact else None)
        n = _hdr_status.Get_count(_BYTE) if header is not None else 0
        extra = msgpack.unpackb(bytes(_hdr_buf[8:n]), raw=False) if n > 8 else None
        h.incoming(self._mv_id, rseq, wsrc, tag, sseq if exact else None, extra)

    def _mv_consume_status(self, rseq: int, st: MPI.Status, taint: bool) -> None:
        """Record the consume of the buffer message described by ``st`` (none if cancelled)."""
        src = st.Get_source()
        if src != _PROC_NULL and not st.Is_cancelled():
            self._mv_consume_buf(rseq, src, st.Get_tag(), taint)

    def _mv_overtakes(self, rseq: int, src: int, tag: int) -> bool:
        """Whether a pending receive posted before ``rseq`` could match (src, tag).

        Such receives are marked: their own consumes will omit ``send`` too.
        """
        hit = False
        for p_seq, (p_src, p_tag, p_req) in self._mv_pending.items():
            if p_seq < rseq and p_src in (_ANY_SOURCE, src) and p_tag in (_ANY_TAG, tag):
                p_req._mv_taint = True
                hit = True
        return hit

    def _mv_finish(self, req: TracedRequest, st: MPI.Status | None, msg: Any) -> Any:
        """Called by a completing wait/test for a receive request of this communicator.

        ``st`` is the completion's status (never ``None`` for buffer receives).
        """
        if req._mv_kind == RECV_BUF:
            assert st is not None
            self._mv_pending.pop(req._mv_req, None)
            self._mv_consume_status(req._mv_req, st, req._mv_taint)
            return msg
        if msg is None:  # cancelled
            return None
        assert st is not None
        return self._mv_unwrap(req._mv_req, msg, st)

    # -- object (lower-case) point-to-point ---------------------------------------
    # The common case (a real peer, no hooks) is inlined in each method: every
    # Python call on the way costs a noticeable part of a small message.

    def _mv_obj_send(self, fn: Any, obj: Any, dest: int, tag: int, flags: int) -> Any:
        if dest == _PROC_NULL:
            return fn(self, obj, dest, tag)
        seq, extra = self._mv_post_send(dest, tag, flags)
        out = _call(seq, extra, False, fn, self, obj, dest, tag)
        if flags & BLOCKING:
            return out
        return TracedRequest.of(out, SEND, seq, self)

    def _mv_send_slow(self, obj: Any, dest: int, tag: int) -> None:
        """``send`` outside the C fast path."""
        self._mv_obj_send(_C.send, obj, dest, tag, BLOCKING)

    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._mv_obj_send(_C.ssend, obj, dest, tag, BLOCKING | SYNC)

    def bsend(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._mv_obj_send(_C.bsend, obj, dest, tag, BLOCKING)

    def isend(self, obj: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_obj_send(_C.isend, obj, dest, tag, 0)
        return req

    def issend(self, obj: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_obj_send(_C.issend, obj, dest, tag, SYNC)
        return req

    def ibsend(self, obj: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_obj_send(_C.ibsend, obj, dest, tag, 0)
        return req

    def _mv_recv_slow(self, buf: Any, source: int, tag: int, status: MPI.Status | None) -> Any:
        """``recv`` outside the C fast path."""
        if source == _PROC_NULL:
            return _C.recv(self, buf, source, tag, status)
        rseq, source, tag = self._mv_post_recv(source, tag, True)
        st = _Status() if status is None else status
        msg = _call(None, None, True, _C.recv, self, buf, source, tag, st)
        return self._mv_unwrap(rseq, msg, st)

    def irecv(self, buf: Any = None, source: int = _ANY_SOURCE, tag: int = _ANY_TAG) -> MPI.Request:
        if source == _PROC_NULL:
            return _C.irecv(self, buf, source, tag)
        rseq, source, tag = self._mv_post_recv(source, tag, False)
        return TracedRequest.of(_C.irecv(self, buf, source, tag), RECV_OBJ, rseq, self)

    def sendrecv(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = _ANY_SOURCE,
        recvtag: int = _ANY_TAG,
        status: MPI.Status | None = None,
    ) -> Any:
        seq, extra = (None, None)
        if dest != _PROC_NULL:
            seq, extra = self._mv_post_send(dest, sendtag, BLOCKING | PAIR)
        if source == _PROC_NULL:
            args = (self, sendobj, dest, sendtag, recvbuf, source, recvtag, status)
            return _call(seq, extra, False, _C.sendrecv, *args)
        # the receive half is the same MPI call as the send half (when there is one)
        flags = BLOCKING if dest == _PROC_NULL else BLOCKING | CONT
        rseq, source, recvtag = self._mv_post_recv(source, recvtag, flags)
        st = _Status() if status is None else status
        args = (self, sendobj, dest, sendtag, recvbuf, source, recvtag, st)
        msg = _call(seq, extra, True, _C.sendrecv, *args)
        return self._mv_unwrap(rseq, msg, st)

    def mprobe(
        self, source: int = _ANY_SOURCE, tag: int = _ANY_TAG, status: MPI.Status | None = None
    ) -> MPI.Message:
        return TracedMessage.of(_C.mprobe(self, source, tag, status), self, source, tag)

    def improbe(
        self, source: int = _ANY_SOURCE, tag: int = _ANY_TAG, status: MPI.Status | None = None
    ) -> MPI.Message | None:
        m = _C.improbe(self, source, tag, status)
        return None if m is None else TracedMessage.of(m, self, source, tag)

    # -- buffer (upper-case) point-to-point -----------------------------------------

    def _mv_buf_send(self, fn: Any, buf: Any, dest: int, tag: int, flags: int) -> Any:
        if dest == _PROC_NULL:
            return fn(self, buf, dest, tag)
        seq = self._mv_buf_header(dest, tag, flags)
        out = fn(self, buf, dest, tag)
        if flags & BLOCKING:
            return out
        return TracedRequest.of(out, SEND, seq, self)

    def _mv_Send_slow(self, buf: Any, dest: int, tag: int) -> None:
        """``Send`` outside the C fast path."""
        self._mv_buf_send(_C.Send, buf, dest, tag, BLOCKING)

    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._mv_buf_send(_C.Ssend, buf, dest, tag, BLOCKING | SYNC)

    def Bsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._mv_buf_send(_C.Bsend, buf, dest, tag, BLOCKING)

    def Rsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._mv_buf_send(_C.Rsend, buf, dest, tag, BLOCKING)

    def Isend(self, buf: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_buf_send(_C.Isend, buf, dest, tag, 0)
        return req

    def Issend(self, buf: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_buf_send(_C.Issend, buf, dest, tag, SYNC)
        return req

    def Ibsend(self, buf: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_buf_send(_C.Ibsend, buf, dest, tag, 0)
        return req

    def Irsend(self, buf: Any, dest: int, tag: int = 0) -> MPI.Request:
        req: MPI.Request = self._mv_buf_send(_C.Irsend, buf, dest, tag, 0)
        return req

    def _mv_send_init(self, fn: Any, buf: Any, dest: int, tag: int, flags: int) -> MPI.Prequest:
        raw: MPI.Prequest = fn(self, buf, dest, tag)
        if dest == _PROC_NULL:
            return raw
        return TracedPrequest.persistent(raw, SEND, self, dest, tag, flags)

    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> MPI.Prequest:
        return self._mv_send_init(_C.Send_init, buf, dest, tag, 0)

    def Bsend_init(self, buf: Any, dest: int, tag: int = 0) -> MPI.Prequest:
        return self._mv_send_init(_C.Bsend_init, buf, dest, tag, 0)

    def Ssend_init(self, buf: Any, dest: int, tag: int = 0) -> MPI.Prequest:
        return self._mv_send_init(_C.Ssend_init, buf, dest, tag, SYNC)

    def Rsend_init(self, buf: Any, dest: int, tag: int = 0) -> MPI.Prequest:
        return self._mv_send_init(_C.Rsend_init, buf, dest, tag, 0)

    def Recv_init(self, buf: Any, source: int = _ANY_SOURCE, tag: int = _ANY_TAG) -> MPI.Prequest:
        raw = _C.Recv_init(self, buf, source, tag)
        if source == _PROC_NULL:
            return raw
        return TracedPrequest.persistent(raw, RECV_BUF, self, source, tag, 0)

    def _mv_start(self, req: TracedPrequest, cont: bool = False) -> None:
        """A ``Start`` of the persistent request ``req``: its new posting event
        (``cont``: a later request of the same ``Startall``, the same MPI call).

        Record/replay hooks cannot force the source of a persistent receive
        (it is fixed by ``Recv_init``): replay reproduces it only if it is not
        a wildcard receive that raced.
        """
        peer, tag, flags = req._mv_args
        more = CONT if cont else 0
        if req._mv_kind == SEND:
            req._mv_req = self._mv_buf_header(peer, tag, flags | more)
        else:
            rseq, _, _ = self._mv_post_recv(peer, tag, more)
            req._mv_req = rseq
            req._mv_taint = False
            self._mv_pending[rseq] = (peer, tag, req)
        req._mv_active = True

    def _mv_Recv_slow(self, buf: Any, source: int, tag: int, status: MPI.Status | None) -> None:
        """``Recv`` outside the C fast path."""
        if source == _PROC_NULL:
            _C.Recv(self, buf, source, tag, status)
            return
        rseq, source, tag = self._mv_post_recv(source, tag, True)
        st = _Status() if status is None else status
        _C.Recv(self, buf, source, tag, st)
        self._mv_consume_status(rseq, st, False)

    def Irecv(self, buf: Any, source: int = _ANY_SOURCE, tag: int = _ANY_TAG) -> MPI.Request:
        if source == _PROC_NULL:
            return _C.Irecv(self, buf, source, tag)
        rseq, source, tag = self._mv_post_recv(source, tag, False)
        r = TracedRequest.of(_C.Irecv(self, buf, source, tag), RECV_BUF, rseq, self)
        self._mv_pending[rseq] = (source, tag, r)
        return r

    def Sendrecv(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = _ANY_SOURCE,
        recvtag: int = _ANY_TAG,
        status: MPI.Status | None = None,
    ) -> None:
        if dest != _PROC_NULL:
            self._mv_buf_header(dest, sendtag, BLOCKING | PAIR)
        if source == _PROC_NULL:
            return _C.Sendrecv(self, sendbuf, dest, sendtag, recvbuf, source, recvtag, status)
        flags = BLOCKING if dest == _PROC_NULL else BLOCKING | CONT
        rseq, source, recvtag = self._mv_post_recv(source, recvtag, flags)
        st = _Status() if status is None else status
        _C.Sendrecv(self, sendbuf, dest, sendtag, recvbuf, source, recvtag, st)
        self._mv_consume_status(rseq, st, False)
        return None

    def Sendrecv_replace(  # noqa: PLR0917 (mpi4py's signature)
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = _ANY_SOURCE,
        recvtag: int = _ANY_TAG,
        status: MPI.Status | None = None,
    ) -> None:
        if dest != _PROC_NULL:
            self._mv_buf_header(dest, sendtag, BLOCKING | PAIR)
        if source == _PROC_NULL:
            return _C.Sendrecv_replace(self, buf, dest, sendtag, source, recvtag, status)
        flags = BLOCKING if dest == _PROC_NULL else BLOCKING | CONT
        rseq, source, recvtag = self._mv_post_recv(source, recvtag, flags)
        st = _Status() if status is None else status
        _C.Sendrecv_replace(self, buf, dest, sendtag, source, recvtag, st)
        self._mv_consume_status(rseq, st, False)
        return None

    def Mprobe(
        self, source: int = _ANY_SOURCE, tag: int = _ANY_TAG, status: MPI.Status | None = None
    ) -> MPI.Message:
        return TracedMessage.of(_C.Mprobe(self, source, tag, status), self, source, tag)

    def Improbe(
        self, source: int = _ANY_SOURCE, tag: int = _ANY_TAG, status: MPI.Status | None = None
    ) -> MPI.Message | None:
        m = _C.Improbe(self, source, tag, status)
        return None if m is None else TracedMessage.of(m, self, source, tag)

    # -- derived communicators ---------------------------------------------------

    def _mv_derive(self, new: MPI.Comm) -> MPI.Comm:
        """Trace a communicator created collectively from this one (COMM_NULL stays)."""
        if new == MPI.COMM_NULL or not isinstance(new, MPI.Intracomm):
            return new
        raw = _C(new)
        counter = self._mv_counter
        # Members may have created different numbers of communicators: agree
        # on the largest next index, so the id is the same on every member.
        k = _C.allreduce(raw, counter[0], op=MPI.MAX)
        counter[0] = k + 1
        world_group = MPI.COMM_WORLD.Get_group()
        group = raw.Get_group()
        world = MPI.Group.Translate_ranks(group, list(range(raw.Get_size())), world_group)
        group.Free()
        world_group.Free()
        # Disjoint groups made by one Split share k but not their lowest member.
        comm_id = k * counter[1] + min(world)
        return TracedIntracomm.traced(raw, comm_id, world)

    def Dup(self, info: MPI.Info | None = None) -> TracedIntracomm:
        return self._mv_derive(_C.Dup(_C(self), info))  # type: ignore[return-value]  # Dup: intracomm

    def Split(self, color: int = 0, key: int = 0) -> MPI.Comm:
        return self._mv_derive(_C.Split(self, color, key))

    def Create(self, group: MPI.Group) -> MPI.Comm:
        return self._mv_derive(_C.Create(self, group))

    def Create_group(self, group: MPI.Group, tag: int = 0) -> MPI.Intracomm:
        return self._mv_derive(_C.Create_group(self, group, tag))  # type: ignore[return-value]  # an intracomm

    def Split_type(self, split_type: int, key: int = 0, info: MPI.Info = MPI.INFO_NULL) -> MPI.Comm:
        return self._mv_derive(_C.Split_type(self, split_type, key, info))

    def Free(self) -> None:
        if self._mv_ring is not None:
            self._mv_ring.finalize()
        self._mv_live.pop(self._mv_id, None)
        _C.Free(self._mv_shadow)
        _C.Free(self)


class TracedMessage(MPI.Message):
    """A matched-probe message whose receive (blocking or not) is recorded and unwrapped."""

    __slots__ = ("_mv_comm", "_mv_src", "_mv_tag")

    _mv_comm: TracedIntracomm
    _mv_src: int
    _mv_tag: int

    @classmethod
    def of(cls, raw: MPI.Message, comm: TracedIntracomm, source: int, tag: int) -> TracedMessage:
        """Wrap the message ``raw`` probed on ``comm`` with the probe's arguments."""
        m = cls(raw)
        m._mv_comm = comm
        m._mv_src = source
        m._mv_tag = tag
        return m

    def _mv_wsrc(self) -> int:
        src = self._mv_src
        return -1 if src == _ANY_SOURCE else self._mv_comm._mv_world(src)

    def recv(self, status: MPI.Status | None = None) -> Any:
        c = self._mv_comm
        rseq = _rrecv(c._mv_id, self._mv_wsrc(), _t(self._mv_tag), True)
        st = _Status() if status is None else status
        return c._mv_unwrap(rseq, _call(None, None, True, MPI.Message.recv, self, st), st)

    def Recv(self, buf: Any, status: MPI.Status | None = None) -> None:
        c = self._mv_comm
        rseq = _rrecv(c._mv_id, self._mv_wsrc(), _t(self._mv_tag), True)
        st = _Status() if status is None else status
        MPI.Message.Recv(self, buf, st)
        c._mv_consume_status(rseq, st, False)

    def irecv(self) -> MPI.Request:
        c = self._mv_comm
        rseq = _rrecv(c._mv_id, self._mv_wsrc(), _t(self._mv_tag), False)
        return TracedRequest.of(MPI.Message.irecv(self), RECV_OBJ, rseq, c)

    def Irecv(self, buf: Any) -> MPI.Request:
        c = self._mv_comm
        rseq = _rrecv(c._mv_id, self._mv_wsrc(), _t(self._mv_tag), False)
        return TracedRequest.of(MPI.Message.Irecv(self, buf), RECV_BUF, rseq, c)


def reap_headers() -> int:
    """Complete the header sends (hooks only) that have completed; return how many are pending.

    Called at the end of the run so no finished request outlives the program.
    """
    if _hdr_reqs:
        MPI.Request.Testsome(_hdr_reqs)
        _hdr_reqs[:] = [r for r in _hdr_reqs if r]
    return len(_hdr_reqs)


def bind_world(recorder: Recorder) -> TracedIntracomm:
    """Set the recorder of every traced object; return the traced ``COMM_WORLD``."""
    global _rsend, _rrecv, _runwrap, _rchan
    _rsend, _rrecv, _runwrap, _rchan = (
        recorder.send,
        recorder.recv,
        recorder.unwrap,
        recorder.consume_chan,
    )
    configure(
        recorder,
        _C.send,
        _C.recv,
        _HOOKS,
        _PROC_NULL,
        _ANY_SOURCE,
        _ANY_TAG,
        _Status(),
        _C.Send,
        _C.Recv,
    )
    _install_piggyback()
    TracedIntracomm._mv_rec = recorder
    TracedRequest._mv_rec = recorder
    world = _C(MPI.COMM_WORLD)
    n = world.Get_size()
    TracedIntracomm._mv_counter[:] = [1, n]
    return TracedIntracomm.traced(world, 0, list(range(n)))
