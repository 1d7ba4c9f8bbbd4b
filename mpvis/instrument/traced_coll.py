"""Collective wrappers of :class:`~mpvis.instrument.traced_comm.TracedIntracomm`.

Each wrapped collective records ``coll`` on entry (with ``op``, and ``root``,
``count``, ``dtype``, ``bytes`` (the type signature's size), ``redop`` where
known) and ``coll_exit`` on return (trace-format spec, "coll / coll_exit").
``root`` is a world rank.  ``count``, ``dtype`` and ``bytes`` are recorded
for buffer (upper-case) calls only, from the buffer every member passes
alike (Roy et al.: collective matching compares these single-valued
arguments); object calls carry none of them.  The first ``coll`` of a
rank on a derived communicator carries ``group``: the communicator's members
as world ranks, in their local rank order, so analyses know who must take part.

A pre-collective check (``check(comm, op, args, site)``, e.g. the ring checker of
:mod:`mpvis.instrument.ringcheck`) may be installed with :func:`set_precheck`;
it runs after the ``coll`` record, before the MPI call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from mpvis.instrument.recorder import Site
from mpvis.instrument.traced_comm import TracedIntracomm

__all__ = [
    "COLLECTIVES",
    "buffer_info",
    "buffer_signature",
    "install_collectives",
    "redop_name",
    "set_precheck",
]

_C = MPI.Intracomm

#: method name -> (op, root position, reduction-op position, buffers giving count/dtype as
#: (position, keyword) pairs: the first, or the second when the first is ``MPI.IN_PLACE``).
_S = (0, "sendbuf")
_R = (1, "recvbuf")
COLLECTIVES: dict[str, tuple[str, int | None, int | None, tuple[tuple[int, str], ...]]] = {
    "barrier": ("barrier", None, None, ()),
    "Barrier": ("barrier", None, None, ()),
    "bcast": ("bcast", 1, None, ()),
    "Bcast": ("bcast", 1, None, ((0, "buf"),)),
    "reduce": ("reduce", 2, 1, ()),
    "Reduce": ("reduce", 3, 2, (_S, _R)),
    "allreduce": ("allreduce", None, 1, ()),
    "Allreduce": ("allreduce", None, 2, (_S, _R)),
    "gather": ("gather", 1, None, ()),
    "Gather": ("gather", 2, None, (_S,)),
    "allgather": ("allgather", None, None, ()),
    "Allgather": ("allgather", None, None, (_S,)),
    "scatter": ("scatter", 1, None, ()),
    "Scatter": ("scatter", 2, None, (_R,)),
    "alltoall": ("alltoall", None, None, ()),
    "Alltoall": ("alltoall", None, None, (_S,)),
    "scan": ("scan", None, 1, ()),
    "Scan": ("scan", None, 2, (_S, _R)),
    "exscan": ("exscan", None, 1, ()),
    "Exscan": ("exscan", None, 2, (_S, _R)),
}

_REDOPS = {
    "sum": MPI.SUM,
    "prod": MPI.PROD,
    "max": MPI.MAX,
    "min": MPI.MIN,
    "land": MPI.LAND,
    "band": MPI.BAND,
    "lor": MPI.LOR,
    "bor": MPI.BOR,
    "lxor": MPI.LXOR,
    "bxor": MPI.BXOR,
    "maxloc": MPI.MAXLOC,
    "minloc": MPI.MINLOC,
    "replace": MPI.REPLACE,
    "no_op": MPI.NO_OP,
}
_REDOP_BY_HANDLE = {op.py2f(): name for name, op in _REDOPS.items()}

#: Buffer-protocol format characters -> trace dtype names.
_FORMATS = {
    "b": "int8",
    "B": "uint8",
    "c": "char",
    "h": "short",
    "H": "ushort",
    "i": "int",
    "I": "uint",
    "l": "long",
    "L": "ulong",
    "q": "int64",
    "Q": "uint64",
    "f": "float",
    "d": "double",
    "?": "bool",
}

Precheck = Callable[[TracedIntracomm, str, dict[str, Any], Site], None]
_precheck: list[Precheck | None] = [None]


def set_precheck(check: Precheck | None) -> None:
    """Run ``check(comm, op, args, site)`` before every traced collective (``None``: none)."""
    _precheck[0] = check


def redop_name(op: object) -> str:
    """``"sum"`` for ``MPI.SUM`` and so on; ``"user"`` for user-defined operations."""
    if isinstance(op, MPI.Op):
        return _REDOP_BY_HANDLE.get(op.py2f(), "user")
    return "user"


def buffer_info(spec: object) -> tuple[int, str] | None:
    """``(count, dtype)`` of an mpi4py buffer specification, or ``None`` if unknown.

    Accepts a buffer-protocol object or ``[data, MPI.TYPE]`` /
    ``[data, count, MPI.TYPE]`` / ``[data, (count, displ), MPI.TYPE]``.
    """
    sig = buffer_signature(spec)
    return None if sig is None else (sig[0], sig[1])


def buffer_signature(spec: object) -> tuple[int, str, int] | None:
    """``(count, dtype, bytes)`` of a buffer specification (see :func:`buffer_info`):
    ``bytes`` is the size of its type signature, count times the type's size."""
    if spec is None or spec is MPI.IN_PLACE:
        return None
    try:
        if isinstance(spec, list | tuple):
            data = spec[0]
            dtype = spec[-1] if isinstance(spec[-1], MPI.Datatype) else None
            count = spec[1] if len(spec) > 2 and type(spec[1]) is int else None
            if dtype is None:
                return buffer_signature(data)
            name = (dtype.Get_name() or "derived").lower().removeprefix("mpi_")
            if count is None:
                count = memoryview(data).nbytes // dtype.Get_extent()[1]
            return count, name, count * dtype.Get_size()
        view = memoryview(spec)  # type: ignore[arg-type]  # any buffer object
        fmt = view.format.lstrip("@=<>!")
        return view.nbytes // max(view.itemsize, 1), _FORMATS.get(fmt, fmt or "byte"), view.nbytes
    except (TypeError, ValueError, IndexError, ZeroDivisionError, MPI.Exception):
        return None


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], pos: int, name: str, default: Any) -> Any:
    return args[pos] if len(args) > pos else kwargs.get(name, default)


def _make(
    method: str,
    op: str,
    root_pos: int | None,
    redop_pos: int | None,
    bufs: tuple[tuple[int, str], ...],
) -> Callable[..., Any]:
    base = getattr(_C, method)

    def wrapper(self: TracedIntracomm, *args: Any, **kwargs: Any) -> Any:
        rec = self._mv_rec
        check = _precheck[0]
        fields: dict[str, Any] = {}
        if root_pos is not None:
            fields["root"] = self._mv_world(_arg(args, kwargs, root_pos, "root", 0))
        if redop_pos is not None:
            fields["redop"] = redop_name(_arg(args, kwargs, redop_pos, "op", MPI.SUM))
        if bufs:
            spec = _arg(args, kwargs, bufs[0][0], bufs[0][1], None)
            if spec is MPI.IN_PLACE and len(bufs) > 1:
                spec = _arg(args, kwargs, bufs[1][0], bufs[1][1], None)
            info = buffer_signature(spec)
            if info is not None:
                fields["count"], fields["dtype"], fields["bytes"] = info
        if not self._mv_group_sent:
            fields["group"] = list(self._mv_group)
            self._mv_group_sent = True
        rec.coll(self._mv_id, op, fields)
        if check is not None:
            check(self, op, fields, rec.site())
        out = base(self, *args, **kwargs)
        rec.coll_exit(self._mv_id, op)
        return out

    wrapper.__name__ = method
    wrapper.__qualname__ = f"TracedIntracomm.{method}"
    wrapper.__doc__ = f"Traced ``{method}`` (records ``coll``/``coll_exit`` op={op!r})."
    return wrapper


def install_collectives() -> None:
    """Add the collective wrappers to :class:`TracedIntracomm` (idempotent)."""
    for method, (op, root_pos, redop_pos, bufs) in COLLECTIVES.items():
        setattr(TracedIntracomm, method, _make(method, op, root_pos, redop_pos, bufs))
