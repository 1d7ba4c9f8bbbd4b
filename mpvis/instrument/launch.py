"""``python -m mpvis.instrument.launch prog.py [args]``: run one rank of a program, traced.

This is what ``mpvis run`` puts after ``mpiexec``.  It installs the trace
library (:func:`mpvis.instrument.runtime.start`, which initialises MPI), then
runs ``prog.py`` as ``__main__`` with ``sys.argv = [prog.py, args...]`` and
``sys.path[0]`` its directory, as ``python prog.py`` would.  Like
``python -m mpi4py``, it never leaves a job hanging on an error:

* normal end (or ``sys.exit(0)``): ``final`` record, flush, ``BYE final``;
  exit status 0;
* an uncaught exception or a nonzero ``sys.exit``: the traceback on stderr,
  flush, ``BYE crashed`` (its detail is the traceback), then
  ``MPI_Abort`` on ``COMM_WORLD``, which ends every rank of the job.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Sequence

from mpvis.instrument.runtime import Runtime, start

__all__ = ["main", "run_program"]


def run_program(runtime: Runtime, argv: Sequence[str]) -> int:
    """Run ``argv[0]`` with arguments ``argv[1:]``; end the trace; return the exit status."""
    path = argv[0]
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            runtime.finish()
            return 0
        detail = f"sys.exit({code!r})"
        if not isinstance(code, int):
            print(code, file=sys.stderr)
        _abort(runtime, detail, code if isinstance(code, int) else 1)
    except BaseException:
        detail = traceback.format_exc()
        sys.stderr.write(detail)
        _abort(runtime, detail, 1)
    runtime.finish()
    return 0


def _abort(runtime: Runtime, detail: str, code: int) -> None:
    sys.stderr.flush()
    runtime.crash(detail)
    from mpi4py import MPI

    MPI.COMM_WORLD.Abort(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``argv`` is ``[prog.py, args...]`` (default ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m mpvis.instrument.launch PROGRAM.py [ARGS...]", file=sys.stderr)
        return 2
    runtime = start(program=" ".join(["python", *args]))
    return run_program(runtime, args)


if __name__ == "__main__":
    sys.exit(main())
