"""Traced requests: completions of nonblocking sends and receives.

:class:`TracedRequest` is a Python subclass of ``mpi4py.MPI.Request`` (the
copy constructor keeps the MPI handle and, for object receives, mpi4py's
receive buffer).  The traced communicator returns one for every nonblocking
send and receive; every completion function of mpi4py, instance and class
methods, upper case (buffers) and lower case (objects), is overridden so that
a completion records, in this order (trace-format spec, ``wait`` and
``consume``), as one MPI call (the records' ``call``, see
:mod:`mpvis.instrument.recorder`):

* one ``consume`` per completed receive, in the receives' posting order,
  delivered by the receive's communicator (``_mv_finish``, which also strips
  the piggybacked send number from the message, see
  :mod:`mpvis.instrument.traced_comm`);
* one ``wait`` naming every traced request the call completed.

An unsuccessful test records nothing.  Requests that are not traced (from
nonblocking collectives, persistent requests) pass through untouched.

``launch`` puts this class in place of ``MPI.Request`` so that programs calling
``MPI.Request.Waitall(reqs)`` reach these overrides; its metaclass keeps
``isinstance(r, MPI.Request)`` true for every mpi4py request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from mpi4py import MPI

from mpvis.instrument.piggyback import call as _call
from mpvis.instrument.recorder import Recorder

__all__ = ["RECV_BUF", "RECV_OBJ", "SEND", "TracedPrequest", "TracedRequest"]

#: Values of ``TracedRequest._mv_kind``.
SEND = 0
RECV_OBJ = 1  # lower-case irecv: loaded as (send seq or None, obj[, extra]) (piggyback.call)
RECV_BUF = 2  # upper-case Irecv: the consume is matched by its channel (traced_comm)

_Base = MPI.Request
_PBase = MPI.Prequest  # launch replaces MPI.Prequest by TracedPrequest
_Status = MPI.Status
_UNDEFINED = MPI.UNDEFINED


class _RequestMeta(type):
    """``isinstance``/``issubclass`` against a traced class accept any mpi4py request
    of the class it stands for (``_mv_base``: ``MPI.Request``, ``MPI.Prequest``)."""

    _mv_base: type

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._mv_base)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._mv_base)


def _traced(r: object) -> bool:
    """Whether ``r`` is a traced request whose posting event is not completed yet
    (a persistent request is so between its ``Start`` and the completion)."""
    t = type(r)
    return t is TracedRequest or (t is TracedPrequest and r._mv_active)  # type: ignore[attr-defined]  # r is a TracedPrequest here


def _is_live(r: object) -> bool:
    return _traced(r) and bool(r)


class TracedRequest(_Base, metaclass=_RequestMeta):
    """A request created by a traced communicator; see the module docstring."""

    __slots__ = ("_mv_comm", "_mv_kind", "_mv_req", "_mv_taint")
    _mv_rec: ClassVar[Recorder]
    _mv_base = _Base

    _mv_kind: int
    _mv_req: int
    _mv_comm: Any
    _mv_taint: bool

    @classmethod
    def of(cls, raw: MPI.Request, kind: int, req: int, comm: Any) -> TracedRequest:
        """Wrap ``raw`` (the request of the posting event ``req``) for ``comm``."""
        r = cls(raw)
        r._mv_kind = kind
        r._mv_req = req
        r._mv_comm = comm
        r._mv_taint = False
        return r

    # -- bookkeeping shared by every completion function ---------------------

    def _mv_one(self, status: MPI.Status | None, msg: Any) -> Any:
        """Record the completion of this request alone; return the delivered object."""
        self._mv_rec.close_call()  # its consume and wait are this completion's call
        if self._mv_kind != SEND:
            msg = self._mv_comm._mv_finish(self, status, msg)
        self._mv_rec.wait([self._mv_req])
        self._mv_completed()
        return msg

    def _mv_completed(self) -> None:
        """The posting event's completion is recorded (a persistent request goes inactive)."""

    # -- instance methods ------------------------------------------------------

    def _mv_status(self, status: MPI.Status | None) -> MPI.Status | None:
        """A status to complete with: receives need one (the real source and tag)."""
        if status is None and self._mv_kind != SEND:
            return _Status()
        return status

    def Wait(self, status: MPI.Status | None = None) -> Literal[True]:
        if not _is_live(self):  # completed, or not traced (``MPI.Request.Wait(r)``)
            return _Base.Wait(self, status)
        st = self._mv_status(status)
        _Base.Wait(self, st)
        self._mv_one(st, None)
        return True

    def wait(self, status: MPI.Status | None = None) -> Any:
        if not _is_live(self):  # completed, or not traced (``MPI.Request.Wait(r)``)
            return _Base.wait(self, status)
        st = self._mv_status(status)
        return self._mv_one(st, _call(None, None, True, _Base.wait, self, st))

    def Test(self, status: MPI.Status | None = None) -> bool:
        if not _is_live(self):  # completed, or not traced (``MPI.Request.Wait(r)``)
            return _Base.Test(self, status)
        st = self._mv_status(status)
        flag = _Base.Test(self, st)
        if flag:
            self._mv_one(st, None)
        return flag

    def test(self, status: MPI.Status | None = None) -> tuple[bool, Any]:
        if not _is_live(self):  # completed, or not traced (``MPI.Request.Wait(r)``)
            return _Base.test(self, status)
        st = self._mv_status(status)
        flag, msg = _call(None, None, True, _Base.test, self, st)
        if flag:
            msg = self._mv_one(st, msg)
        return flag, msg

    # -- class methods over lists ----------------------------------------------

    @classmethod
    def Waitall(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> Literal[True]:
        live = [i for i, r in enumerate(requests) if _is_live(r)]
        if not live:
            return _Base.Waitall(requests, statuses)
        sts = _statuses(requests, statuses)
        _Base.Waitall(requests, sts)
        _finish(requests, live, sts, None)
        return True

    @classmethod
    def waitall(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> list[Any]:
        live = [i for i, r in enumerate(requests) if _is_live(r)]
        if not live:
            untraced: list[Any] = _Base.waitall(requests, statuses)
            return untraced
        sts = _statuses(requests, statuses)
        objs: list[Any] = _call(None, None, True, _Base.waitall, requests, sts)
        _finish(requests, live, sts, objs)
        return objs

    @classmethod
    def Testall(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> bool:
        live = [i for i, r in enumerate(requests) if _is_live(r)]
        if not live:
            return _Base.Testall(requests, statuses)
        sts = _statuses(requests, statuses)
        flag = _Base.Testall(requests, sts)
        if flag:
            _finish(requests, live, sts, None)
        return flag

    @classmethod
    def testall(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> tuple[bool, list[Any] | None]:
        live = [i for i, r in enumerate(requests) if _is_live(r)]
        if not live:
            return _Base.testall(requests, statuses)
        sts = _statuses(requests, statuses)
        flag, objs = _call(None, None, True, _Base.testall, requests, sts)
        if flag and objs is not None:
            _finish(requests, live, sts, objs)
        return flag, objs

    @classmethod
    def Waitany(cls, requests: Sequence[MPI.Request], status: MPI.Status | None = None) -> int:
        st = _Status() if status is None else status
        index = _Base.Waitany(requests, st)
        if index != _UNDEFINED and _traced(requests[index]):
            requests[index]._mv_one(st, None)  # type: ignore[attr-defined]  # _traced() held
        return index

    @classmethod
    def waitany(
        cls, requests: Sequence[MPI.Request], status: MPI.Status | None = None
    ) -> tuple[int, Any]:
        st = _Status() if status is None else status
        index, msg = _call(None, None, True, _Base.waitany, requests, st)
        return index, _finish_any(requests, index, st, msg)

    @classmethod
    def Testany(
        cls, requests: Sequence[MPI.Request], status: MPI.Status | None = None
    ) -> tuple[int, bool]:
        st = _Status() if status is None else status
        index, flag = _Base.Testany(requests, st)
        if flag and index != _UNDEFINED and _traced(requests[index]):
            requests[index]._mv_one(st, None)  # type: ignore[attr-defined]  # _traced() held
        return index, flag

    @classmethod
    def testany(
        cls, requests: Sequence[MPI.Request], status: MPI.Status | None = None
    ) -> tuple[int, bool, Any]:
        st = _Status() if status is None else status
        index, flag, msg = _call(None, None, True, _Base.testany, requests, st)
        return index, flag, _finish_any(requests, index, st, msg) if flag else msg

    @classmethod
    def Waitsome(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> list[int] | None:
        sts = _statuses(requests, statuses)
        indices = _Base.Waitsome(requests, sts)
        _finish_some(requests, indices, sts, None)
        return indices

    @classmethod
    def waitsome(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> tuple[list[int] | None, list[Any] | None]:
        sts = _statuses(requests, statuses)
        indices, objs = _call(None, None, True, _Base.waitsome, requests, sts)
        _finish_some(requests, indices, sts, objs)
        return indices, objs

    @classmethod
    def Testsome(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> list[int] | None:
        sts = _statuses(requests, statuses)
        indices = _Base.Testsome(requests, sts)
        _finish_some(requests, indices, sts, None)
        return indices

    @classmethod
    def testsome(
        cls, requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None = None
    ) -> tuple[list[int] | None, list[Any] | None]:
        sts = _statuses(requests, statuses)
        indices, objs = _call(None, None, True, _Base.testsome, requests, sts)
        _finish_some(requests, indices, sts, objs)
        return indices, objs


def _statuses(
    requests: Sequence[MPI.Request], statuses: list[MPI.Status] | None
) -> list[MPI.Status]:
    """The caller's status list, or a fresh one: completions need every source and tag."""
    if statuses is None:
        return [_Status() for _ in requests]
    while len(statuses) < len(requests):
        statuses.append(_Status())
    return statuses


def _plain(msg: Any) -> Any:
    """The program's object from a message loaded in wrap mode by a request that is
    not traced (``(seq or None, obj[, extra])``; ``None`` if nothing was loaded)."""
    return msg[1] if type(msg) is tuple else msg


def _finish_any(requests: Sequence[MPI.Request], index: int, st: MPI.Status, msg: Any) -> Any:
    """Waitany/testany: record the completion of ``requests[index]``; return its object."""
    if index == _UNDEFINED:
        return msg
    if _traced(requests[index]):
        return requests[index]._mv_one(st, msg)  # type: ignore[attr-defined]  # _traced() held
    return _plain(msg)


def _finish(
    requests: Sequence[MPI.Request], done: list[int], sts: list[MPI.Status], objs: list[Any] | None
) -> None:
    """Record the completion of ``requests[i]`` for ``i`` in ``done`` (all traced)."""
    if objs is not None:
        traced = set(done)
        for i, msg in enumerate(objs):
            if i not in traced:
                objs[i] = _plain(msg)
    rec = TracedRequest._mv_rec
    rec.close_call()  # the consumes and the wait below are this completion's call
    reqs: list[TracedRequest] = [requests[i] for i in done]  # type: ignore[misc]  # done: traced ones only
    # Receives in posting order: that is the order in which MPI matched them.
    for i in sorted(done, key=lambda i: requests[i]._mv_req):  # type: ignore[attr-defined]  # traced
        r: TracedRequest = requests[i]  # type: ignore[assignment]  # traced
        if r._mv_kind != SEND:
            msg = r._mv_comm._mv_finish(r, sts[i], None if objs is None else objs[i])
            if objs is not None:
                objs[i] = msg
    rec.wait([r._mv_req for r in reqs])
    for r in reqs:
        r._mv_completed()


def _finish_some(
    requests: Sequence[MPI.Request],
    indices: list[int] | None,
    sts: list[MPI.Status],
    objs: list[Any] | None,
) -> None:
    """Waitsome/Testsome: ``objs``/``sts`` are indexed by position in ``indices``."""
    if not indices:
        return
    traced = [k for k, i in enumerate(indices) if _traced(requests[i])]
    if objs is not None and len(traced) < len(indices):
        for k in set(range(len(indices))) - set(traced):
            objs[k] = _plain(objs[k])
    if not traced:
        return
    rec = TracedRequest._mv_rec
    rec.close_call()  # the consumes and the wait below are this completion's call
    order = sorted(traced, key=lambda k: requests[indices[k]]._mv_req)  # type: ignore[attr-defined]  # traced
    for k in order:
        r: TracedRequest = requests[indices[k]]  # type: ignore[assignment]  # traced
        if r._mv_kind != SEND:
            msg = r._mv_comm._mv_finish(r, sts[k], None if objs is None else objs[k])
            if objs is not None:
                objs[k] = msg
    done: list[TracedRequest] = [requests[indices[k]] for k in traced]  # type: ignore[misc]  # traced ones only
    rec.wait([r._mv_req for r in done])
    for r in done:
        r._mv_completed()


class TracedPrequest(TracedRequest, _PBase):
    """A persistent request of a traced communicator (``Send_init``, ``Recv_init``...).

    Each ``Start`` is a new posting event (a nonblocking ``send`` or ``recv``
    record, recorded by the communicator's ``_mv_start``) whose completion
    records the consume and the ``wait`` as for any request; between a
    completion and the next ``Start`` the request is inactive and completion
    functions pass over it, as MPI does.  ``launch`` puts this class in place of
    ``MPI.Prequest`` so that ``MPI.Prequest.Startall(reqs)`` is traced too.
    """

    __slots__ = ("_mv_active", "_mv_args")
    _mv_base = _PBase

    _mv_active: bool
    _mv_args: tuple[int, int, int]  # (peer, tag, send flags) as given to the *_init call

    @classmethod
    def persistent(  # noqa: PLR0917 (one argument per fact of the request)
        cls, raw: MPI.Prequest, kind: int, comm: Any, peer: int, tag: int, flags: int
    ) -> TracedPrequest:
        """Wrap the inactive persistent request ``raw`` of ``comm``."""
        r: TracedPrequest = cls.of(raw, kind, -1, comm)  # type: ignore[assignment]  # of() builds cls
        r._mv_active = False
        r._mv_args = (peer, tag, flags)
        return r

    def _mv_completed(self) -> None:
        self._mv_active = False

    def Start(self) -> None:
        self._mv_comm._mv_start(self)
        _PBase.Start(self)

    @classmethod
    def Startall(cls, requests: list[MPI.Prequest]) -> None:
        cont = False  # the requests' postings are one MPI call
        for r in requests:
            if type(r) is TracedPrequest:
                r._mv_comm._mv_start(r, cont)
                cont = True
        _PBase.Startall(requests)
