"""The MPI side of replay: route traced messages over a replay channel.

Composes with the trace library instead of changing it: the point-to-point
methods of the traced ``COMM_WORLD`` are wrapped (on that one object's class,
at run time) so that, before each call, the replay hooks
(:class:`mpvis.instrument.replay.ReplayHooks`) decide from the event number the
call is about to get (the recorder's next ``seq``) where it goes:

* a send of a traced message (collated plan) goes, unchanged, through the
  trace library's wrapper of the *channel*, a traced duplicate of
  ``COMM_WORLD`` with the same communicator id, so the trace records it
  exactly as the program wrote it;
* a traced receive goes through the channel's wrapper, which asks the hooks'
  ``force_source`` for the recorded source and tag (the trace still records
  the program's wildcards);
* once a flip has made this rank free, a blocking receive probes both
  communicators and takes the first matching message.

Only ``COMM_WORLD`` is routed; sends and receives on derived communicators,
``sendrecv`` and matched probes pass through (a race recorded there cannot be
forced, and the replay's check says so).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mpi4py import MPI

from mpvis.instrument.replay import CHANNEL, POLL, ReplayHooks

__all__ = ["install_routing", "make_channel"]

_ANY_SOURCE = MPI.ANY_SOURCE
_ANY_TAG = MPI.ANY_TAG
_SENDS = ("send", "ssend", "isend", "issend", "Send", "Ssend", "Isend", "Issend")
_BLOCKING_RECVS = ("recv", "Recv")
_RECVS = (*_BLOCKING_RECVS, "irecv", "Irecv")


def make_channel(world: Any) -> Any:
    """A traced duplicate of the traced ``world`` with the same id (collective).

    Uses the trace library's ``traced`` constructor, keeping its registry of
    live communicators and its ring checks about the program's own ``world``.
    """
    cls = type(world)
    live = dict(cls._mv_live)
    factory = cls.ring_factory
    cls.ring_factory = None
    try:
        channel = cls.traced(MPI.Intracomm.Dup(world), 0, list(range(world.Get_size())))
    finally:
        cls.ring_factory = factory
        cls._mv_live.clear()
        cls._mv_live.update(live)
    return channel


def install_routing(
    world: Any, channel: Any, hooks: ReplayHooks, next_seq: Callable[[], int]
) -> None:
    """Wrap the point-to-point methods of ``type(world)`` for ``world`` (module docstring)."""
    cls = type(world)
    for name in _SENDS:
        setattr(cls, name, _send_wrapper(getattr(cls, name), world, channel, hooks, next_seq))
    for name in _RECVS:
        setattr(
            cls,
            name,
            _recv_wrapper(
                getattr(cls, name),
                name in _BLOCKING_RECVS,
                world=world,
                channel=channel,
                hooks=hooks,
                next_seq=next_seq,
            ),
        )


def _send_wrapper(
    orig: Callable[..., Any],
    world: Any,
    channel: Any,
    hooks: ReplayHooks,
    next_seq: Callable[[], int],
) -> Callable[..., Any]:
    def send(self: Any, obj: Any, dest: int, tag: int = 0) -> Any:
        if self is world and hooks.route_send(next_seq(), dest, tag):
            return orig(channel, obj, dest, tag)
        return orig(self, obj, dest, tag)

    send.__name__ = send.__qualname__ = orig.__name__
    send.__doc__ = orig.__doc__
    return send


def _recv_wrapper(
    orig: Callable[..., Any],
    blocking: bool,
    *,
    world: Any,
    channel: Any,
    hooks: ReplayHooks,
    next_seq: Callable[[], int],
) -> Callable[..., Any]:
    if blocking:

        def recv(
            self: Any,
            buf: Any = None,
            source: int = _ANY_SOURCE,
            tag: int = _ANY_TAG,
            status: MPI.Status | None = None,
        ) -> Any:
            if self is not world or source == MPI.PROC_NULL:
                return orig(self, buf, source, tag, status)
            route = hooks.route_recv(next_seq(), True)
            if route == CHANNEL:
                return orig(channel, buf, source, tag, status)
            if route == POLL:
                comm = _poll(world, channel, source, tag, hooks)
                return orig(comm, buf, source, tag, status)
            return orig(self, buf, source, tag, status)

        fn: Callable[..., Any] = recv
    else:

        def irecv(
            self: Any, buf: Any = None, source: int = _ANY_SOURCE, tag: int = _ANY_TAG
        ) -> Any:
            if (
                self is world
                and source != MPI.PROC_NULL
                and hooks.route_recv(next_seq(), False) == CHANNEL
            ):
                return orig(channel, buf, source, tag)
            return orig(self, buf, source, tag)

        fn = irecv
    fn.__name__ = fn.__qualname__ = orig.__name__
    fn.__doc__ = orig.__doc__
    return fn


def _poll(world: Any, channel: Any, source: int, tag: int, hooks: ReplayHooks) -> Any:
    """Wait for a message matching ``(source, tag)`` on either communicator; return which.

    The hooks' next ``force_source`` answer is set to the probed source and tag,
    so the receive takes exactly the probed message.
    """
    st = MPI.Status()
    delay = 1e-5
    while True:
        for comm in (world, channel):
            if MPI.Intracomm.Iprobe(comm, source, tag, st):
                hooks.next_force = (st.Get_source(), st.Get_tag())
                return comm
        time.sleep(delay)
        delay = min(delay * 2, 1e-3)
