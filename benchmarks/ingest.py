"""Ingest benchmark (issue 2): parse + model building + classification.

Writes a synthetic trace of 1,000,000 events on 64 ranks (with wildcard
receives) to a temporary file, then times :func:`mpvis.tracefile.reader.load_trace`
on it and prints events per second and peak memory per event (traced Python
allocations, which include NumPy buffers).

``load_trace`` parses such a file in a second process
(:mod:`mpvis.tracefile.parse_worker`) while this one builds the model; the
figures give the wall-clock rate, the CPU time of each process, and (unless
``--no-memory``) the peak traced memory of the model's process plus the
parser process's peak resident size.  ``--in-process`` also times the load
without the parser process.

    python benchmarks/ingest.py [--events N] [--ranks P]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
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
    ap.add_argument("--in-process", action="store_true",
                    help="also time the load with parsing in this process")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "synthetic.jsonl"
        t0 = time.perf_counter()
        n = write_trace(path, make_header(args.ranks, program="synthetic"),
                        generate_records(args.events, args.ranks, seed=1))
        print(f"wrote {n:,} events on {args.ranks} ranks "
              f"({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        gc.collect()
        for parallel in (True, False) if args.in_process else (True,):
            kids0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
            t0, c0 = time.perf_counter(), time.process_time()
            m = load_trace(path, parallel=parallel)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - kids0
            races = m.potential_races()
            how = "parser process + model process" if parallel else "one process"
            print(f"load (parse + model + classifier, {how}): {dt:.2f} s = {n / dt:,.0f} "
                  f"events/s (CPU: model process {cpu:.2f} s, parser process {kids:.2f} s; "
                  f"load average {os.getloadavg()[0]:.1f}); {len(races):,} potential races")
            del m, races
            gc.collect()
        if not args.no_memory:
            tracemalloc.start()
            model = load_trace(path, parallel=True)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            del model
            kid_rss = _parser_peak_rss(path, args.ranks)
            print(f"peak traced memory of the model process: {peak / 1e6:.0f} MB = "
                  f"{peak / n:.0f} bytes/event; parser process alone: peak RSS "
                  f"{kid_rss / 1e6:.0f} MB (interpreter, libraries and one chunk)")
    return 0


def _parser_peak_rss(path: Path, nprocs: int) -> int:
    """Peak resident size of the parser process over the whole file, in bytes.

    Started from a small launcher: a child forked from this (large) process
    would count this process's pages in its peak."""
    launcher = (
        "import resource, subprocess, sys\n"
        "subprocess.run([sys.executable, '-m', 'mpvis.tracefile.parse_worker', *sys.argv[1:]],"
        " stdout=subprocess.DEVNULL, check=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", launcher, str(path), str(nprocs), "1", "0"],
                         capture_output=True, text=True, check=True).stdout
    return int(out) * 1024


if __name__ == "__main__":
    sys.exit(main())
