"""Render benchmark: open a trace, draw frames at several zoom levels, peak memory.

For traces of 10k, 100k and 1M events on 64 ranks (``--sizes`` to change),
prints the time to open split into the model (read, model, exact-race and
deadlock analyses: :class:`~mpvis.analysis.pipeline.Analyses`) and the
window's own layout step (real-time layout and frame index,
:func:`mpvis.gui.loader.lay_out`), then the logical clocks (computed after
the window shows the trace), the time of a 1600x900 frame showing the whole
run, 1% and 0.01% of it in both layouts (level of detail, painting, grabbing
the pixels), and the peak resident memory.  The machine's load average is
printed next to the figures: on a shared machine they scale with it.
Budget (issue 4): layout <= ~2 s for 1M events, every frame <= 100 ms.

    .venv/bin/python benchmarks/render.py [--sizes 10000,100000,1000000] [--nprocs 64]
        [--traces DIR]   # keep the generated traces there and reuse them
        [--png out.png]  # save the zoomed-out frames (out-N-real.png, out-N-logical.png)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6 import QtWidgets

from mpvis.analysis.pipeline import Analyses
from mpvis.gui.diagram import DiagramView
from mpvis.gui.loader import lay_out
from mpvis.gui.render import DiagramFigure
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.reader import load_trace, read_header


def write_trace(path: Path, n: int, nprocs: int) -> None:
    with path.open("w") as fh:
        fh.write(json.dumps(make_header(nprocs, program="benchmark")) + "\n")
        for rec in generate_records(n, nprocs, seed=1):
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")


def frame_ms(view: DiagramView, repeats: int = 5) -> float:
    """Median time of: LOD for the viewport, update the layers, paint into a pixmap."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        view.redraw()
        view.grab()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def load() -> str:
    return "load average " + " ".join(f"{v:.1f}" for v in os.getloadavg())


def bench(app: QtWidgets.QApplication, n: int, nprocs: int, traces: Path, png: str | None) -> None:
    path = traces / f"bench-{n}-{nprocs}.jsonl"
    if not path.exists():
        write_trace(path, n, nprocs)
    t0 = time.perf_counter()
    analyses = Analyses.for_header(read_header(path), exact=False)  # as the window's loader
    m = load_trace(path, model=analyses.model)
    t1 = time.perf_counter()
    lay, index = lay_out(analyses)
    t2 = time.perf_counter()
    fig = DiagramFigure()
    fig.resize(1600, 960)
    fig.show()
    view = fig.diagram
    app.processEvents()
    view.set_model(m, lay, index)
    view.redraw()
    app.processEvents()
    t3 = time.perf_counter()
    print(
        f"{m.event_count:>9,} events, {nprocs} ranks: open {t3 - t0:6.2f} s (model+deadlocks "
        f"{t1 - t0:.2f} s, layout {t2 - t1:.2f} s, first frame {t3 - t2:.2f} s)  [{load()}]"
    )
    t4 = time.perf_counter()
    if lay.logical_pending:
        lay.update_logical()
        lay.logical_pending = False
    print(f"    logical clocks (after the window shows the trace) {time.perf_counter() - t4:.2f} s")
    t4 = time.perf_counter()
    analyses.add_exact_afterwards()
    print(f"    exact races (after the window shows the trace) {time.perf_counter() - t4:.2f} s")
    for logical in (False, True):
        view.set_logical(logical)
        view.fit_all()
        app.processEvents()
        t5 = time.perf_counter()
        view.redraw()
        first = (time.perf_counter() - t5) * 1e3
        cells = [
            f"out {frame_ms(view):6.1f} ms ({view._syms.point_count():,} symbols, "
            f"{view._msg.segment_count():,} lines)"
        ]
        lo, hi = lay.bounds(logical)
        mid = (lo + hi) / 2
        for share in (0.01, 0.0001):
            view.zoom_x(mid, mid + (hi - lo) * share)
            app.processEvents()
            cells.append(f"{share:.2%} {frame_ms(view):6.1f} ms")
        name = "logical" if logical else "real   "
        print(f"    {name}: index build {first:.0f} ms; frames: " + ", ".join(cells))
        if png:
            view.fit_all()
            app.processEvents()
            view.redraw()
            app.processEvents()
            fig.grab().save(png.replace(".png", f"-{n}-{name.strip()}.png"))
    fig.close()
    fig.deleteLater()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"    peak memory so far {peak:,.0f} MiB  [{load()}]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--nprocs", type=int, default=64)
    ap.add_argument("--traces", help="directory to keep and reuse the generated traces in")
    ap.add_argument("--png", help="save the zoomed-out frames as PNG-N-LAYOUT.png")
    args = ap.parse_args()
    app = QtWidgets.QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="mpvis-bench-") as tmp:
        traces = Path(args.traces) if args.traces else Path(tmp)
        traces.mkdir(parents=True, exist_ok=True)
        for n in (int(s) for s in args.sizes.split(",")):
            bench(app, n, args.nprocs, traces, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
