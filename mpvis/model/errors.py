"""Errors of the functional model."""

from __future__ import annotations

from mpvis.errors import MpvisError


class ModelInputError(MpvisError, ValueError):
    """A record breaks a rule that needs context (sequence, references, matching).

    ``rank`` and ``seq`` locate the offending record; ``index`` is its position
    in the batch passed to :meth:`ModelManager.add_batch` when the error was
    found while adding a batch (``None`` when found later, e.g. at ``finish``).
    """

    def __init__(
        self, message: str, *, rank: int | None = None, seq: int | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.rank = rank
        self.seq = seq
        self.index = index
