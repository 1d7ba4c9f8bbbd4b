"""Cost of record mode (Netzer-Miller racing-only tracing) on message-heavy programs.

Usage: ``python benchmarks/record.py [--ranks 4] [--reps 3] [--tasks 20000] [--rounds 5000]``

Runs ``examples/replay/message_heavy.py`` (master-worker: every result is
received with ANY_SOURCE; halo: ring exchange by named source, a wildcard
gather every 100 rounds) four ways, best of ``--reps`` each:

* ``plain``: ``python prog`` (uninstrumented);
* ``traced``: the trace library alone, events dropped (what record mode builds on);
* ``record``: record mode without streaming (``mpvis run --record DIR --no-stream``):
  vector timestamps, the race check, only racing deliveries written;
* ``record-all``: the same, writing every delivery (the traditional baseline).

Prints time per message, overhead against ``plain``, and for the recordings the
messages sent, the deliveries recorded (fraction) and the matching lower bound
on the minimal record (section 4.3, footnote 3).  Timings come from inside the
program (between two barriers), so start-up is excluded; the machine is shared,
so compare figures from one invocation.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "replay" / "message_heavy.py"
sys.path.insert(0, str(ROOT))

from mpvis.cli.record_options import record_optimality  # noqa: E402
from mpvis.instrument.record_file import read_record  # noqa: E402

MODES = ("plain", "traced", "record", "record-all")


def _run(mode: str, ranks: int, args: list[str], record: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPVIS_")}
    env["PYTHONPATH"] = str(ROOT)
    py = [sys.executable]
    if mode == "traced":
        py += ["-m", "mpvis.instrument.launch"]
    elif mode.startswith("record"):
        py += ["-m", "mpvis.instrument.replay_launch"]
        env["MPVIS_RECORD"] = str(record)
        if mode == "record-all":
            env["MPVIS_RECORD_ALL"] = "1"
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    out = subprocess.run(
        [mpiexec, "-n", str(ranks), *py, str(PROGRAM), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    match = re.search(r"elapsed ([0-9.]+)", out)
    if match is None:
        raise RuntimeError(f"no timing in output: {out!r}")
    return float(match.group(1))


def bench(name: str, args: list[str], ranks: int, reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        best: dict[str, float] = {}
        for _ in range(reps):
            for mode in MODES:
                t = _run(mode, ranks, args, Path(tmp) / mode)
                best[mode] = min(best.get(mode, t), t)
        racing = record_optimality(read_record(Path(tmp) / "record"))
        everything = record_optimality(read_record(Path(tmp) / "record-all"))
    msgs = racing.messages
    print(f"\n{name} ({ranks} ranks, {msgs} messages)")
    for mode in MODES:
        over = 100 * (best[mode] / best["plain"] - 1)
        print(
            f"  {mode:10s} {best[mode]:8.3f} s  {1e6 * best[mode] / msgs:7.2f} us/msg  "
            f"overhead {over:+7.1f}%"
        )
    print(f"  record     {racing.text()}")
    print(f"  record-all {everything.recorded} recorded ({100 * everything.fraction:.1f}%)")
    print(
        f"  record mode costs {100 * (best['record'] / best['record-all'] - 1):+.1f}% "
        "against recording every message"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--tasks", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=500)
    a = p.parse_args()
    bench("master-worker", ["master_worker", str(a.tasks)], a.ranks, a.reps)
    bench("halo", ["halo", str(a.rounds)], a.ranks, a.reps)


if __name__ == "__main__":
    main()
