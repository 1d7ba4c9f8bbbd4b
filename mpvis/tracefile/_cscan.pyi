"""Types of the C scanner of trace lines (``_cscan.c``; see ``scan.py``)."""

from typing import Any

#: The known keys' names, by bit of a keys word (see ``Scanner.take``).
KEYS: tuple[str, ...]

class Scanner:
    """Trace lines to a Batch's columns, a chunk at a time (see ``_cscan.c``)."""

    def __init__(self, nprocs: int, kinds: tuple[str, ...], max_lines: int,
                 max_line_bytes: int, f_blocking: int, f_sync: int, fallback_all: bool,
                 give_up: int) -> None: ...
    def scan(self, data: bytes, pos: int, eof: bool, /) -> tuple[int, bool]:
        """Scan the complete lines of ``data[pos:]``: (position reached, chunk done)."""
    def take(self) -> tuple[int, int, int, dict[str, bytes], bytes, list[str], list[int],
                            list[tuple[int, int, bytes]], dict[int, dict[str, Any]], int,
                            bytes, bool]:
        """(lines, bytes, records, columns, line offsets, site names, their first records,
        (record, line offset, line) handed back, extras by record, too-long line or -1,
        keys words, irregular key order)."""
