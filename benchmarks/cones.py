"""Cone queries and drawing on a large synthetic trace.

Prints: model build time, the first query (gathers the clock columns), the
per-query time over random events (past + future cone), and, with Qt
available, the time to compute and draw a cone in the window (cone, dimming,
bands, frontier lines, then one repaint).  Usage::

    python benchmarks/cones.py [N_EVENTS] [NPROCS]
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time

from mpvis.analysis.cones import ConeIndex
from mpvis.model.manager import ModelManager
from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records


def build(n_events: int, nprocs: int) -> ModelManager:
    m = ModelManager(make_header(nprocs, program="bench-cones"), validate=False)
    batch = []
    for rec in generate_records(n_events, nprocs, seed=1):
        batch.append(rec)
        if len(batch) == 50_000:
            m.add_batch(batch)
            batch = []
    m.add_batch(batch)
    m.finish()
    return m


def bench_queries(m: ModelManager, n: int = 200) -> None:
    rng = random.Random(0)
    index = ConeIndex(m)
    t0 = time.perf_counter()
    index.cone(0, m.count(0) // 2)
    print(f"first query (gathers clock columns): {time.perf_counter() - t0:.3f} s")
    times = []
    for _ in range(n):
        r = rng.randrange(m.nprocs)
        s = rng.randrange(m.count(r))
        t0 = time.perf_counter()
        cone = index.cone(r, s)
        cone.past_mask(m.c_rank.view(), m.c_seq.view())
        cone.future_mask(m.c_rank.view(), m.c_seq.view())
        times.append(time.perf_counter() - t0)
    print(
        f"cone + masks, {n} random events: median {statistics.median(times) * 1e3:.1f} ms, "
        f"max {max(times) * 1e3:.1f} ms"
    )


def bench_window(m: ModelManager, n: int = 10) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from mpvis.gui import cones_overlay
    from mpvis.gui.app import make_app
    from mpvis.gui.window import MainWindow

    app = make_app()
    w = MainWindow()
    w.resize(1400, 900)
    w.show()
    t0 = time.perf_counter()
    w.set_model(m, "bench")
    app.processEvents()
    print(f"window shows the model: {time.perf_counter() - t0:.2f} s")
    ctl = cones_overlay.install(w)
    rng = random.Random(1)
    times, shows, redraws = [], [], []
    for _ in range(n):
        r = rng.randrange(m.nprocs)
        g = m.gidx(r, rng.randrange(m.count(r)))
        t0 = time.perf_counter()
        ctl.show(g, past=True, future=True)
        t1 = time.perf_counter()
        w.diagram.redraw()
        t2 = time.perf_counter()
        w.diagram.grab()  # forces the paint of every layer, bands included
        times.append(time.perf_counter() - t0)
        shows.append(t1 - t0)
        redraws.append(t2 - t1)
    print(
        f"cone computed and drawn (both cones), {n} events: "
        f"median {statistics.median(times):.3f} s, max {max(times):.3f} s "
        f"(of which cone + overlays {statistics.median(shows):.3f} s, "
        f"diagram LOD redraw {statistics.median(redraws):.3f} s, rest: painting)"
    )


def main() -> None:
    n_events = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    nprocs = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    t0 = time.perf_counter()
    m = build(n_events, nprocs)
    print(
        f"{m.event_count} events on {nprocs} ranks, model built in {time.perf_counter() - t0:.1f} s"
    )
    bench_queries(m)
    try:
        import PySide6  # noqa: F401
    except ImportError:
        print("no Qt: drawing not measured")
        return
    bench_window(m)


if __name__ == "__main__":
    main()
