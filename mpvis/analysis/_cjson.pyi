"""Types of the C writer of a race table's JSON rows (``_cjson.c``; see ``race_table.py``)."""

from collections.abc import Sequence

# columns: one-dimensional buffers of signed integers (NumPy arrays), checked in C
def race_rows(columns: Sequence[object], text: list[bytes], lo: int, hi: int, /) -> bytes: ...
