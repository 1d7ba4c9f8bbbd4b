"""Batched change notifications from the model to its observers (no Qt).

The manager calls every observer once per batch of records, never once per
event, with a :class:`ModelChange` describing what appeared or changed.
A GUI adapter turns these calls into Qt signals on its own thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ModelChange:
    """What one batch changed.

    ``events`` is the range ``[start, stop)`` of new global event indices (in
    arrival order); ``messages`` lists global indices of sends whose consume
    became known; ``races_added``/``races_changed`` are race ids of the
    classifier tracker; ``ranks_changed`` lists ranks whose status changed.
    """

    events: tuple[int, int]
    messages: tuple[int, ...] = ()
    races_added: tuple[int, ...] = ()
    races_changed: tuple[int, ...] = ()
    ranks_changed: tuple[int, ...] = ()
    finished: bool = False
    problems: tuple[str, ...] = field(default=())


class ModelObserver(Protocol):
    """Anything that wants to hear about model changes."""

    def model_changed(self, change: ModelChange) -> None:
        """Called after each batch (on the thread that fed the model)."""
