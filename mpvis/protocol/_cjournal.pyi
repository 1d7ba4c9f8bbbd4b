from typing import Any

def lines(
    prefix: bytes,
    templates: tuple[tuple[bytes | int, ...], ...],
    shape: Any,
    columns: tuple[Any, ...],
    others: tuple[bytes, ...],
    /,
) -> bytes: ...
def expand(
    recs: bytes, nprocs: int, nsites: int, /
) -> tuple[int, bytearray, bytearray, bytearray, int, bool] | None: ...
