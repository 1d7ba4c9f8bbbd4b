"""Hook points for record/replay built on the trace library's wrappers.

Netzer and Miller's optimal tracing and replay (netzer-miller-optimal-tracing-replay,
sections 3-4) needs two things from the message layer: a vector timestamp
piggybacked on every message (to find racing messages while recording), and,
while replaying, the power to force a wildcard receive to take the message it
took in the recorded run.  The wrappers of :mod:`mpvis.instrument.traced_comm`
call a :class:`MessageHooks` object at exactly those points once one is
installed with :func:`install_hooks`; with none installed (the default) the
hot path pays one ``is None`` test.

All ranks passed to and returned by hooks are ``MPI_COMM_WORLD`` ranks, and
wildcards are ``-1``, as in the trace.  ``comm`` is the trace's communicator id.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ACTIVE", "MessageHooks", "active_hooks", "install_hooks"]


class MessageHooks:
    """Override any of these; the defaults change nothing."""

    def outgoing(self, comm: int, dest: int, tag: int, send_seq: int) -> Any:
        """Called as a send is posted; a non-``None`` result (msgpack-able for
        buffer sends, picklable for object sends) travels with the message."""
        return None

    def incoming(  # noqa: PLR0917 (one argument per fact of the delivery)
        self, comm: int, recv_seq: int, src: int, tag: int, send_seq: int | None, extra: Any
    ) -> None:
        """Called as a message is consumed, with what :meth:`outgoing` attached."""
        return None

    def force_source(self, comm: int, recv_seq: int, src: int, tag: int) -> tuple[int, int]:
        """Called before a receive is posted: the (source, tag) to post it with.

        The trace still records the program's own arguments; replay returns
        the recorded sender (and tag) to force the recorded delivery."""
        return src, tag


#: ``ACTIVE[0]``: the installed hooks or ``None`` (the wrappers read it directly).
ACTIVE: list[MessageHooks | None] = [None]


def install_hooks(hooks: MessageHooks | None) -> None:
    """Make ``hooks`` the active hooks of this rank (``None`` removes them)."""
    ACTIVE[0] = hooks


def active_hooks() -> MessageHooks | None:
    """The installed hooks, or ``None``."""
    return ACTIVE[0]
