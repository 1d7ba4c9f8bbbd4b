"""End-to-end benchmark of what users run (issue 16): ``mpvis check`` and the window.

Generates a synthetic trace (:func:`mpvis.sim.synthetic.generate_records`,
1,000,000 events on 64 ranks by default; ``--big`` adds 10,000,000 events on
256 ranks, which takes long) and times, each in its own child process:

* ``parse only``: reading the file and ``orjson.loads`` of every line, the
  floor every other figure is compared with (``x parse`` column);
* ``mpvis check TRACE`` (text report) and ``mpvis check TRACE --json``, both
  with ``--no-cache``, and a second ``check --json`` served by the check cache
  (:mod:`mpvis.tracefile.check_cache`; the first one fills it);
* the window (offscreen Qt): ``MainWindow.open_trace`` until the diagram's
  first frame showing events is painted (the trace is shown while it loads),
  until every event is in, and until every analysis is done (logical clocks
  and the exact race pass); meanwhile, and for :data:`AFTER_LOAD_S` after, how
  responsive the window stays: the longest gap between two ticks of a 10 ms
  timer (a frame the user waits for) and the longest paint of the diagram
  (grabbed every second).

Each figure also gives the CPU time of the child and of its own children
(user + system), as a ratio to the parse's: on a shared machine the wall-clock
ratio moves with the load, the CPU ratio much less.  Peak memory is the
child's peak resident size (``ru_maxrss`` from ``wait4``,
which covers the parser process it starts too) divided by the event count;
this process stays small (it generates traces in a child too), since a child
inherits its parent's peak.
The machine's load average is printed before and after: on a busy machine
every figure grows.

    python benchmarks/e2e.py [--events N] [--ranks P] [--big] [--workdir DIR]
                             [--only check,json,cached,window] [--repeat K]

``--workdir`` keeps the generated traces (and the JSON report of the last
``check --json``) there and reuses them on the next run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The window child goes on measuring the waits between frames this long after
#: every analysis is done (what the end of the load leaves to the event loop).
AFTER_LOAD_S = 1.5

PARSE_ONLY = (
    "import sys, orjson\n"
    "n = 0\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        orjson.loads(line); n += 1\n"
)


def _window_child(path: str) -> int:
    """Child mode: open ``path`` in an offscreen window, print timings as JSON."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    t0 = time.perf_counter()
    from PySide6 import QtCore  # Qt only in this child

    from mpvis.gui.app import make_app
    from mpvis.gui.window import MainWindow

    app = make_app()
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    app.processEvents()
    out: dict[str, float] = {"startup": time.perf_counter() - t0}
    done = {"logical": False, "exact": False}
    start = time.perf_counter()
    gaps: list[float] = []
    cpu_gaps: list[float] = []  # CPU of the GUI thread between two ticks: the load aside
    paints: list[float] = []
    last = [start, start]  # last tick, last paint
    last_cpu = [time.thread_time()]

    def paint() -> float:
        t = time.perf_counter()
        window.diagram.viewport().grab()  # paints the diagram with what is loaded
        paints.append(time.perf_counter() - t)
        last[1] = time.perf_counter()
        return last[1] - start

    def tick() -> None:
        now = time.perf_counter()
        now_cpu = time.thread_time()
        gaps.append(now - last[0])
        if gaps[-1] >= max(gaps):
            out["max_gap_at"] = now - start
        last[0] = now
        if "first_frame" not in out and window.model is not None and window.model.event_count:
            out["first_frame"] = paint()
            out["first_frame_events"] = window.model.event_count
        elif now - last[1] > 1.0 and "first_frame" in out:
            paint()
        last[0] = time.perf_counter()  # a paint is measured by itself, not as a gap
        cpu_gaps.append(now_cpu - last_cpu[0])
        last_cpu[0] = time.thread_time()

    ticker = QtCore.QTimer()
    ticker.setInterval(10)
    ticker.timeout.connect(tick)
    ticker.start()

    def first_frame() -> None:
        out["loaded"] = time.perf_counter() - start
        if "first_frame" not in out:
            out["first_frame"] = paint()

    def finished(what: str) -> None:
        done[what] = True
        if all(done.values()):
            window.diagram.viewport().grab()
            out["analyses"] = time.perf_counter() - start
            # the waits go on being measured while the window does what the end of
            # the load left it (its last redraws, the race list, folding 256+ ranks);
            # no processEvents() here: it would run them inside the wait measured
            QtCore.QTimer.singleShot(int(AFTER_LOAD_S * 1e3), app.quit)

    window.open_trace(path)
    loader = window.loader
    assert loader is not None
    loader.loaded.connect(lambda *_: QtCore.QTimer.singleShot(0, first_frame))
    loader.logical_ready.connect(lambda: QtCore.QTimer.singleShot(0, lambda: finished("logical")))
    loader.exact_ready.connect(lambda: QtCore.QTimer.singleShot(0, lambda: finished("exact")))
    loader.failed.connect(lambda msg, *_: (print(msg, file=sys.stderr), app.exit(3)))
    code = app.exec()
    ticker.stop()
    out["max_gap"] = max(gaps, default=0.0)
    out["p99_gap"] = sorted(gaps)[int(0.99 * (len(gaps) - 1))] if gaps else 0.0
    out["max_paint"] = max(paints, default=0.0)
    out["max_gap_cpu"] = max(cpu_gaps, default=0.0)
    out["p99_gap_cpu"] = sorted(cpu_gaps)[int(0.99 * (len(cpu_gaps) - 1))] if cpu_gaps else 0.0
    out.update({f"loader_{k}": v for k, v in loader.timings.items()})
    print(json.dumps(out))
    return int(code)


def _generate(path: str, events: int, ranks: int) -> int:
    """Child mode: write the synthetic trace."""
    from mpvis.protocol.records import make_header  # here: keeps the parent small
    from mpvis.sim.synthetic import generate_records
    from mpvis.tracefile.writer import write_trace

    write_trace(path, make_header(ranks, program="synthetic"),
                generate_records(events, ranks, seed=1))
    return 0


def _run(cmd: list[str], stdout: Any = subprocess.DEVNULL, env: dict[str, str] | None = None
         ) -> tuple[float, int, str, float]:
    """Run ``cmd``; wall seconds, peak RSS in bytes (with its children), captured
    stdout, and CPU seconds (user + system, with its children)."""
    t0 = time.perf_counter()
    # stderr into a file, not a pipe read at the end: a child writing more than a
    # pipe holds (a traceback per slot, say) would block forever
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=errors, env=env)
        text = ""
        if stdout is subprocess.PIPE:
            assert proc.stdout is not None
            text = proc.stdout.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{cmd} exited {proc.returncode}: {err[-2000:]}")
    return dt, usage.ru_maxrss * 1024, text, usage.ru_utime + usage.ru_stime


def _trace(workdir: Path, events: int, ranks: int) -> tuple[Path, int]:
    path = workdir / f"synthetic-{events}-{ranks}.jsonl"
    if path.exists():
        with open(path, "rb") as f:
            n = sum(1 for _ in f) - 1
        return path, n
    t0 = time.perf_counter()
    # in a child: this process stays small, so the children's peak sizes are their own
    subprocess.run([sys.executable, __file__, "--generate", str(path), str(events), str(ranks)],
                   check=True)
    with open(path, "rb") as f:
        n = sum(1 for _ in f) - 1
    print(f"wrote {n:,} events on {ranks} ranks ({path.stat().st_size / 1e6:.0f} MB) "
          f"in {time.perf_counter() - t0:.1f} s")
    return path, n


def _line(what: str, dt: float, parse: float, rss: int, n: int, *,
          cpu: tuple[float, float] | None = None) -> None:
    """One figure; ``cpu``: (CPU seconds of the step, of the parse), the ratio that a
    busy machine distorts least."""
    text = (f"  {what:<34} {dt:7.2f} s  {dt / parse:5.1f}x parse  "
            f"peak {rss / 1e6:6.0f} MB = {rss / n:5.0f} B/event")
    if cpu is not None:
        text += f"  CPU {cpu[0]:6.2f} s = {cpu[0] / cpu[1]:5.1f}x parse CPU"
    print(text, flush=True)


def bench(path: Path, n: int, only: set[str], repeat: int, workdir: Path) -> None:
    """Time every selected step on ``path`` (``n`` events), best of ``repeat``."""
    py = sys.executable

    def best(cmd: list[str], stdout: Any = subprocess.DEVNULL
             ) -> tuple[float, int, str, float]:
        runs = [_run(cmd, stdout) for _ in range(repeat)]
        return min(runs, key=lambda r: r[0])

    print(f"{path.name}: {n:,} events, {path.stat().st_size / 1e6:.0f} MB; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    parse, prss, _, pcpu = best([py, "-c", PARSE_ONLY, str(path)])
    _line("parse only (orjson, one process)", parse, parse, prss, n, cpu=(pcpu, pcpu))
    if "check" in only:
        dt, rss, _, cpu = best([py, "-m", "mpvis", "check", str(path), "--no-cache"])
        _line("mpvis check", dt, parse, rss, n, cpu=(cpu, pcpu))
    if "json" in only:
        out = workdir / f"{path.stem}.report.json"
        with open(out, "wb") as f:
            dt, rss, _, cpu = best([py, "-m", "mpvis", "check", str(path), "--json",
                                    "--no-cache"], stdout=f)
        _line("mpvis check --json", dt, parse, rss, n, cpu=(cpu, pcpu))
    if "cached" in only:  # a first check fills the cache (its own directory), then time
        env = dict(os.environ, MPVIS_CACHE_DIR=str(workdir / "check-cache"))
        cmd = [py, "-m", "mpvis", "check", str(path), "--json"]
        _run(cmd, env=env)
        dt, rss, _, cpu = min((_run(cmd, env=env) for _ in range(repeat)), key=lambda r: r[0])
        _line("mpvis check --json, cached", dt, parse, rss, n, cpu=(cpu, pcpu))
    if "window" in only:
        dt, rss, text, wcpu = best([py, __file__, "--window-child", str(path)],
                                   stdout=subprocess.PIPE)
        got = json.loads(text.strip().splitlines()[-1])
        _line("window: first frame", got["first_frame"], parse, rss, n)
        _line("window: every event in", got["loaded"], parse, rss, n)
        # CPU of the whole child (Qt startup and the parser process included)
        _line("window: all analyses done", got["analyses"], parse, rss, n, cpu=(wcpu, pcpu))
        print(f"    (first frame showed {got.get('first_frame_events', n):,} events; while "
              f"loading, the longest wait between two frames {got['max_gap'] * 1e3:.0f} ms, "
              f"99% under {got['p99_gap'] * 1e3:.0f} ms, the longest ending "
              f"{got.get('max_gap_at', 0):.1f} s after the start; longest paint "
              f"{got['max_paint'] * 1e3:.0f} ms; in CPU of the GUI thread, the longest "
              f"wait {got['max_gap_cpu'] * 1e3:.0f} ms, 99% under "
              f"{got['p99_gap_cpu'] * 1e3:.0f} ms)")
        steps = ", ".join(f"{k[7:]} {v:.2f} s" for k, v in got.items() if k.startswith("loader_"))
        print(f"    (loader thread: {steps}; Qt startup {got['startup']:.2f} s)")
    print(f"  load average now {os.getloadavg()[0]:.2f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--big", action="store_true", help="also 10,000,000 events on 256 ranks")
    ap.add_argument("--workdir", type=Path, help="keep (and reuse) the generated traces here")
    ap.add_argument("--only", default="check,json,cached,window",
                    help="comma-separated steps: check, json, cached (a second check "
                         "--json, read from the check cache), window")
    ap.add_argument("--repeat", type=int, default=1, help="runs per step (the best is kept)")
    ap.add_argument("--window-child", help=argparse.SUPPRESS)
    ap.add_argument("--generate", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        return _generate(args.generate[0], int(args.generate[1]), int(args.generate[2]))
    if args.window_child:
        return _window_child(args.window_child)
    only = set(args.only.split(","))
    sizes = [(args.events, args.ranks)] + ([(10_000_000, 256)] if args.big else [])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for events, ranks in sizes:
            path, n = _trace(workdir, events, ranks)
            bench(path, n, only, args.repeat, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
