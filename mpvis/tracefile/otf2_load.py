"""OTF2 archives through the trace reader's functions (:mod:`mpvis.tracefile.reader`).

:func:`~mpvis.tracefile.reader.read_header`,
:func:`~mpvis.tracefile.reader.iter_records` and
:func:`~mpvis.tracefile.reader.load_trace` hand a path that
:func:`~mpvis.tracefile.otf2_import.is_otf2` recognises to this module, so
``mpvis check``, ``mpvis open``, ``mpvis export`` and the Python API read an
archive as they read a JSON Lines file.  An archive is imported once per
(path, modification time, ``MPVIS_OTF2_RECV``) and kept for the next call
(``check`` reads the header, then the records).  Errors are
:class:`~mpvis.tracefile.errors.TraceFileError` without a line number; those
the model finds name the event as ``rank:seq``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from mpvis.model.errors import ModelInputError
from mpvis.model.ingest import extract
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import RecordError, check_header
from mpvis.tracefile.errors import TraceFileError
from mpvis.tracefile.lines import BATCH_LINES
from mpvis.tracefile.otf2_import import Otf2ImportError, read_otf2
from mpvis.tracefile.otf2_names import Otf2Missing

__all__ = ["otf2_header", "otf2_load", "otf2_records"]

from mpvis.protocol.record_types import Record


def _error(path: Path, rule: str, model: ModelManager | None = None) -> Exception:
    return TraceFileError(path, None, rule, model)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        target = path if path.is_file() else next(iter(sorted(path.glob("*.otf2"))), path)
        st = target.stat()
    except OSError as exc:
        raise _error(path, f"cannot open: {exc.strerror or exc}") from None
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=2)
def _imported(path: str, stamp: tuple[int, int], mode: str) -> tuple[Record, tuple[Record, ...]]:
    header, records = read_otf2(path, any_source=mode == "any")
    return header, tuple(records)


def _read(path: Path) -> tuple[Record, tuple[Record, ...]]:
    try:
        header, records = _imported(str(path), _stamp(path),
                                    os.environ.get("MPVIS_OTF2_RECV", "actual"))
        return check_header(header), records
    except (Otf2ImportError, Otf2Missing) as exc:
        raise _error(path, str(exc).removeprefix(f"{path}: ")) from None
    except RecordError as exc:
        raise _error(path, f"header: {exc}") from None


def otf2_header(path: Path) -> Record:
    """The archive's header (checked)."""
    return _read(path)[0]


def otf2_records(path: Path) -> Iterator[tuple[int, Record]]:
    """``(position from 1, record)`` for every record of the archive (copies)."""
    for i, rec in enumerate(_read(path)[1], 1):
        yield i, dict(rec)


def otf2_load(path: Path, m: ModelManager | None,
              progress: Callable[[int, int], None] | None, *, finish: bool = True
              ) -> ModelManager:
    """Feed the archive's records to a model (a new one unless given), then
    ``finish`` it (the input has ended), as :func:`~mpvis.tracefile.reader.load_trace`."""
    header, records = _read(path)
    m = m or ModelManager(header)
    total = len(records)
    for lo in range(0, total, BATCH_LINES):
        batch = [dict(r) for r in records[lo:lo + BATCH_LINES]]
        try:
            m.add_columns(extract(batch, m.nprocs, m.site_table, m.validate))
        except ModelInputError as exc:
            i = exc.index
            bad = batch[i] if i is not None and i < len(batch) else {}
            where = f"event {bad.get('rank')}:{bad.get('seq')}: " if bad else ""
            raise _error(path, f"{where}{exc}", m) from None
        if progress is not None:
            progress(min(lo + BATCH_LINES, total), total)
    if finish:
        try:
            m.finish()
        except ModelInputError as exc:
            raise _error(path, str(exc), m) from None
    return m
