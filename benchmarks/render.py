"""Render benchmark: open a trace, draw frames zoomed out and zoomed in, peak memory.

For traces of 10k, 100k and 1M events on 64 ranks (``--sizes`` to change),
prints the time to open (read, build the model, lay out both time axes),
the time of a 1600x900 frame showing the whole run and one showing 1% of it
(level of detail, painting and grabbing the pixels), in both layouts, and
the process's peak resident memory.  Budget (issue 4): open <= 15 s for 1M
events, every frame <= 100 ms.

    .venv/bin/python benchmarks/render.py [--sizes 10000,100000,1000000] [--nprocs 64]
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

from mpvis.gui.diagram import DiagramView
from mpvis.protocol.records import make_header
from mpvis.scene.layout import Layout
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.reader import load_trace


def write_trace(path: Path, n: int, nprocs: int) -> int:
    count = 0
    with path.open("w") as fh:
        fh.write(json.dumps(make_header(nprocs, program="benchmark")) + "\n")
        for rec in generate_records(n, nprocs, seed=1):
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            count += 1
    return count


def frame_ms(app: QtWidgets.QApplication, view: DiagramView, repeats: int = 5) -> float:
    """Median time of: LOD for the viewport, update the layers, paint into a pixmap."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        view.redraw()
        view.grab()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench(app: QtWidgets.QApplication, n: int, nprocs: int, tmp: Path) -> None:
    path = tmp / f"bench-{n}.jsonl"
    events = write_trace(path, n, nprocs)
    t0 = time.perf_counter()
    m = load_trace(path)
    t1 = time.perf_counter()
    lay = Layout(m)
    lay.update()
    t2 = time.perf_counter()
    view = DiagramView()
    view.resize(1600, 900)
    view.show()
    app.processEvents()
    view.set_model(m, lay)
    app.processEvents()
    t3 = time.perf_counter()
    print(
        f"{events:>9,} events, {nprocs} ranks: open {t3 - t0:6.2f} s "
        f"(read+model {t1 - t0:.2f} s, layout {t2 - t1:.2f} s)"
    )
    for logical in (False, True):
        view.set_logical(logical)
        view.fit_all()
        app.processEvents()
        out = frame_ms(app, view)
        drawn = view._syms.point_count(), view._msg.segment_count()
        lo, hi = lay.bounds(logical)
        mid = (lo + hi) / 2
        view.zoom_x(mid, mid + (hi - lo) / 100)
        app.processEvents()
        zin = frame_ms(app, view)
        name = "logical" if logical else "real   "
        print(
            f"    {name}: frame zoomed out {out:6.1f} ms ({drawn[0]:,} symbols, "
            f"{drawn[1]:,} lines drawn), zoomed in to 1% {zin:6.1f} ms"
        )
    view.close()
    view.deleteLater()
    path.unlink()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"    peak memory so far {peak:,.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--nprocs", type=int, default=64)
    args = ap.parse_args()
    app = QtWidgets.QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory(prefix="mpvis-bench-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            bench(app, n, args.nprocs, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
