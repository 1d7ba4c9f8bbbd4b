"""Types of the C exact race detector (``_cexact.c``; see ``exact_races.py``)."""

from collections.abc import Sequence
from typing import Any

from typing_extensions import Buffer

from mpvis.protocol.record_types import Record

class Detector:
    def __init__(
        self,
        nprocs: int,
        all_to_all: frozenset[str],
        from_root: frozenset[str],
        to_root: frozenset[str],
    ) -> None: ...
    def feed(self, batch: Sequence[Record]) -> None: ...
    def feed_columns(
        self,
        columns: tuple[Buffer, ...],
        extras: dict[int, dict[str, Any]],
        named: dict[int, tuple[int, int]],
        waits: tuple[Buffer, Buffer, Buffer],
        /,
    ) -> None: ...
    def finish(self) -> None: ...
    def found(self) -> list[tuple[int, int, int, int, int, int]]: ...
    def found_bytes(self) -> bytes: ...
    def contains(self, key: object) -> bool: ...
    def count(self) -> int: ...
    def held(self) -> int: ...
