"""Kind and flag codes: every number that stands for a record kind, a flag or a mode, once.

Two families, each defined here and nowhere else:

* **Model codes** (Python only).  An event's kind code is the position of its
  kind in :data:`EVENT_KINDS` (the model's ``c_kind`` column, the scene's
  symbol tables); :data:`F_BLOCKING` and :data:`F_SYNC` are the bits of the
  model's ``c_flags`` column (``blocking + 2 * sync`` of a send or receive).
* **Recorder codes**, shared with the C recorders: ``MVK_*`` kinds of their
  fixed-size records (the mpi4py path's ``_crecorder.c``, whose records travel
  in ``COMPACT`` frames and are expanded by :mod:`mpvis.protocol.compact`, and
  the PMPI library ``instrument/pmpi/``, which names the kinds itself before
  sending); ``MVC_*`` flags of a ``COMPACT`` record; ``MVF_*`` flags of a PMPI
  library record (they never leave the library); ``MVM_*`` send modes.

The C sources include ``instrument/pmpi/mvcodes.h``, which this module
writes (``python -m mpvis.protocol.codes --write``; a test checks that the
committed header is what this module writes, so an edit here without a new
header fails CI).  A generated header rather than a check that parses the C
sources: the numbers then exist once, the C compiler holds both recorders to
them, and no C parser has to follow enum syntax (implicit increments,
expressions).

This module imports nothing of mpvis (every layer, the in-rank library
included, may import it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

# -- kinds of the trace format (their names: shared/spec/trace-format.md) ---------

SEND: Final = "send"
RECV: Final = "recv"
CONSUME: Final = "consume"
WAIT: Final = "wait"
COLL: Final = "coll"
COLL_EXIT: Final = "coll_exit"
LOCK: Final = "lock"
LOCKED: Final = "locked"
UNLOCK: Final = "unlock"
STATE: Final = "state"
FINAL: Final = "final"
#: Optional kind: a rank entered MPI_Wait* on ``reqs`` (``mode`` "all" or "any") and
#: did not complete at once; written by the PMPI library, used by deadlock detection.
WAITING: Final = "waiting"

# -- model codes ---------------------------------------------------------------------

#: Event kinds in a fixed order; the position is the kind's code in model columns.
EVENT_KINDS: Final[tuple[str, ...]] = (
    SEND, RECV, CONSUME, WAIT, COLL, COLL_EXIT, LOCK, LOCKED, UNLOCK, STATE, FINAL, WAITING,
)
KIND_CODE: Final[dict[str, int]] = {k: i for i, k in enumerate(EVENT_KINDS)}

#: Bits of the model's ``c_flags`` column.
F_BLOCKING: Final = 1
F_SYNC: Final = 2

# -- recorder codes (C: instrument/pmpi/mvcodes.h) ---------------------------------

MVK_SEND: Final = 1
MVK_RECV: Final = 2
MVK_CONSUME: Final = 3
MVK_WAIT: Final = 4
MVK_COLL: Final = 5
MVK_COLL_EXIT: Final = 6
MVK_STATE: Final = 7
MVK_FINAL: Final = 8
#: ``_crecorder`` only: a blocking receive and its consume in one record
#: (:mod:`mpvis.protocol.compact`, kind 9).
MVK_RECV_CONSUME: Final = 9
#: PMPI library only: a ``waiting`` record.
MVK_WAITING: Final = 10

#: ``COMPACT`` record flags (``_crecorder.c`` -> :mod:`mpvis.protocol.compact`).
MVC_BLOCKING: Final = 1
MVC_SYNC: Final = 2
#: consume: ``d`` is the matched send's seq.
MVC_SEND: Final = 4
#: consume: ``d`` is the channel ordinal (field ``chan``).
MVC_CHAN: Final = 8
#: send: a buffer message (field ``buf``).
MVC_BUF: Final = 16
#: send: the send half of a Sendrecv (field ``call``).
MVC_PAIR: Final = 32

#: Argument flag of the mpi4py recorder's ``send``/``recv`` (not on the wire): the
#: record continues its thread's open call (a Sendrecv's receive half...).
MVA_CONT: Final = 64

#: PMPI library record flags (internal to the library).
MVF_BLOCKING: Final = 1
MVF_SYNC: Final = 2
MVF_NONBLOCKING_REQ: Final = 4
MVF_PROBED: Final = 8
MVF_ANY: Final = 16
MVF_CANCELLED: Final = 32

#: Send modes (field ``mode``), by code.
SEND_MODES: Final[tuple[str, ...]] = ("standard", "buffered", "ready", "synchronous")
MVM_STANDARD: Final = 0
MVM_BUFFERED: Final = 1
MVM_READY: Final = 2
MVM_SYNCHRONOUS: Final = 3

#: Each recorder kind's name in the trace (``recv_consume`` is two records).
RECORDER_KIND_NAMES: Final[dict[int, str]] = {
    MVK_SEND: SEND, MVK_RECV: RECV, MVK_CONSUME: CONSUME, MVK_WAIT: WAIT, MVK_COLL: COLL,
    MVK_COLL_EXIT: COLL_EXIT, MVK_STATE: STATE, MVK_FINAL: FINAL,
    MVK_RECV_CONSUME: "recv_consume", MVK_WAITING: WAITING,
}

#: The committed C header.
HEADER: Final = Path(__file__).resolve().parent.parent / "instrument" / "pmpi" / "mvcodes.h"

_GROUPS: Final = (
    ("Record kinds of both C recorders (mpvis.protocol.compact for _crecorder.c).", "MVK_"),
    ("Flags of a COMPACT record (_crecorder.c -> mpvis.protocol.compact).", "MVC_"),
    ("Argument flags of the mpi4py recorder's send()/recv() (not on the wire).", "MVA_"),
    ("Flags of a PMPI library record (internal to the library).", "MVF_"),
    ("Send modes (field `mode`): MVM_NAMES[code].", "MVM_"),
)


def c_header() -> str:
    """The text of :data:`HEADER`: this module's recorder codes as C enums, and
    the names of kinds and modes as array initialisers (``MVK_NAMES``, ``MVM_NAMES``)."""
    g = globals()
    out = [
        "/* Generated by `python -m mpvis.protocol.codes --write` from",
        " * mpvis/protocol/codes.py: edit that file, not this one (a test checks that",
        " * they agree).  Kind, flag and mode codes of the C recorders. */",
        "#ifndef MVCODES_H",
        "#define MVCODES_H",
    ]
    for comment, prefix in _GROUPS:
        names = sorted((v, k) for k, v in g.items() if k.startswith(prefix) and type(v) is int)
        out += ["", f"/* {comment} */", "enum {"]
        out += [f"    {k} = {v}," for v, k in names]
        out.append("};")
    top = max(RECORDER_KIND_NAMES)
    kinds = ", ".join(f'"{RECORDER_KIND_NAMES.get(i, "")}"' for i in range(top + 1))
    modes = ", ".join(f'"{m}"' for m in SEND_MODES)
    out += [
        "",
        "/* The trace format's name of each kind, by code: static const char *x[] = MVK_NAMES; */",
        f"#define MVK_NAMES {{{kinds}}}",
        f"#define MVM_NAMES {{{modes}}}",
        "",
        "#endif",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m mpvis.protocol.codes [--write]``: print (or write) the C header."""
    import argparse  # here: the in-rank library imports this module

    ap = argparse.ArgumentParser(prog="python -m mpvis.protocol.codes", description=main.__doc__)
    ap.add_argument("--write", action="store_true", help=f"write {HEADER.name} in place")
    args = ap.parse_args(argv)
    if args.write:
        HEADER.write_text(c_header(), encoding="utf-8")
    else:
        sys.stdout.write(c_header())
    return 0


if __name__ == "__main__":
    sys.exit(main())
