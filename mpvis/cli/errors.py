"""Errors reported to the user as one line, without a traceback."""

from __future__ import annotations

from mpvis.errors import MpvisError


class UserError(MpvisError):
    """An error the user can act on; ``exit_code`` is the command's exit status."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
