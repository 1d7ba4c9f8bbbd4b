"""Export a trace to other tools' formats: OTF2, Perfetto (Chrome trace-event JSON), CSV.

:func:`export_model` writes what a finished model holds (the window's File >
Export uses it on the trace it shows); :func:`export_trace` reads a trace
file or an OTF2 archive first (``mpvis export``).  The formats and their
mappings are described in ``docs/trace-format.md`` ("Other formats").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

from mpvis.analysis.pipeline import Analyses
from mpvis.analysis.report import Report
from mpvis.model.manager import ModelManager
from mpvis.tracefile.csv_export import write_csv
from mpvis.tracefile.otf2_export import write_otf2
from mpvis.tracefile.perfetto import chrome_trace
from mpvis.tracefile.reader import load_trace, read_header

__all__ = ["FORMATS", "export_model", "export_trace"]

#: Format name -> what ``-o`` names.
FORMATS: Final[dict[str, str]] = {
    "otf2": "an archive: OUT.otf2 (anchor file), or a directory that gets traces.otf2",
    "perfetto": "a .json file in the Chrome trace-event format",
    "csv": "a directory that gets events.csv and messages.csv",
}


def export_model(m: ModelManager, header: dict[str, Any], report: Report | None, fmt: str,
                 out: str | Path) -> list[Path]:
    """Write model ``m`` (finished) as ``fmt`` to ``out``; return the files written.

    ``report`` (races and deadlocks) is needed for ``perfetto`` only.
    Raises ``ValueError`` for an unknown format,
    :class:`~mpvis.tracefile.otf2_export.Otf2ExportError` /
    :class:`~mpvis.tracefile.otf2_names.Otf2Missing` for OTF2, ``OSError``
    when the output cannot be written.
    """
    if fmt == "otf2":
        recs = (m.record(r, s) for r in range(m.nprocs) for s in range(m.count(r)))
        return [write_otf2(out, header, recs)]
    if fmt == "perfetto":
        if report is None:
            raise ValueError("a Perfetto export needs the analysis report")
        p = Path(out)
        p.write_bytes(orjson.dumps(chrome_trace(m, report, header)))
        return [p]
    if fmt == "csv":
        return write_csv(m, out)
    raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")


def export_trace(path: str | Path, fmt: str, out: str | Path) -> list[Path]:
    """Read a trace (JSON Lines or OTF2) and export it; see :func:`export_model`.

    Raises :class:`~mpvis.tracefile.reader.TraceFileError` for a bad input.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
    header = read_header(path)
    analyses = Analyses.for_header(header)
    load_trace(path, model=analyses.model)
    report = analyses.report() if fmt == "perfetto" else None
    return export_model(analyses.model, header, report, fmt, out)
