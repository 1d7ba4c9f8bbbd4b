"""Ingest benchmark (issue 2): parse + model building + classification.

Writes a synthetic trace of 1,000,000 events on 64 ranks (with wildcard
receives) to a temporary file, then times :func:`mpvis.tracefile.reader.load_trace`
on it and prints events per second and peak memory per event (traced Python
allocations, which include NumPy buffers).

    python benchmarks/ingest.py [--events N] [--ranks P]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from mpvis.protocol.records import make_header
from mpvis.sim.synthetic import generate_records
from mpvis.tracefile.reader import load_trace
from mpvis.tracefile.writer import write_trace


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "synthetic.jsonl"
        t0 = time.perf_counter()
        n = write_trace(path, make_header(args.ranks, program="synthetic"),
                        generate_records(args.events, args.ranks, seed=1))
        print(f"wrote {n:,} events on {args.ranks} ranks "
              f"({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        m = load_trace(path)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        races = m.potential_races()
        print(f"load (parse + model + classifier): {dt:.2f} s = {n / dt:,.0f} events/s "
              f"(CPU {cpu:.2f} s = {n / cpu:,.0f} events per CPU-second; load average "
              f"{os.getloadavg()[0]:.1f}); {len(races):,} potential races")
        del m, races
        gc.collect()
        if not args.no_memory:
            tracemalloc.start()
            model = load_trace(path)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            del model
            print(f"peak traced memory: {peak / 1e6:.0f} MB = {peak / n:.0f} bytes/event")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(f"process max RSS: {rss / 1e6:.0f} MB (includes interpreter and libraries; "
              f"pid {os.getpid()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
