from typing import Any

def lines(
    templates: tuple[tuple[bytes | int, ...], ...],
    shape: Any,
    columns: tuple[Any, ...],
    others: tuple[bytes, ...],
    /,
) -> bytes: ...
def expand(
    recs: bytes, nprocs: int, nsites: int, /
) -> tuple[int, bytearray, bytearray, bytearray] | None: ...
