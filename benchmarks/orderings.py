"""Counting the orderings of Figure 10's POEG (Schaeli et al., section 7).

Prints, for 3 to NPROCS ranks and 1 to ITERATIONS iterations, the POEG's
nodes, the exact number of orderings, the counts after process and subgroup
partitioning, and the time to build the POEG from the model and to count and
decompose it (best of 3).  Usage::

    python benchmarks/orderings.py [NPROCS] [ITERATIONS]     # default 6 3
"""

from __future__ import annotations

import sys
import time

from mpvis.analysis.linext import approx
from mpvis.analysis.poeg import poeg_of
from mpvis.analysis.poeg_decompose import decompose
from mpvis.model.manager import ModelManager
from mpvis.sim.neighbor_exchange import neighbor_exchange_trace


def main() -> None:
    max_np = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    max_it = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"{'ranks':>5} {'iter':>4} {'nodes':>5} {'orderings':>14} {'after PD':>9} "
          f"{'after SG':>8} {'build s':>8} {'count s':>8}")
    for nprocs in range(3, max_np + 1):
        for it in range(1, max_it + 1):
            header, records = neighbor_exchange_trace(nprocs, it)
            m = ModelManager(header)
            m.add_batch(records)
            m.finish()
            build = count = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                poeg = poeg_of(m)
                t1 = time.perf_counter()
                d = decompose(poeg)
                t2 = time.perf_counter()
                build, count = min(build, t1 - t0), min(count, t2 - t1)
            total = "limit" if d.orderings is None else approx(d.orderings)
            print(f"{nprocs:>5} {it:>4} {len(poeg.nodes):>5} {total:>14} "
                  f"{d.after_process:>9} {d.after_subgroups:>8} {build:>8.4f} {count:>8.4f}")


if __name__ == "__main__":
    main()
