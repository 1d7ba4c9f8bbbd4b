"""What the OTF2 importer and exporter share: MPI region names, the mpvis attribute, the package.

OTF2 (the archive format of Score-P, read by Vampir) says which MPI call an
event belongs to through the region it is in (``MPI_Ssend``, ``MPI_Waitall``,
...).  These tables name the regions both ways.  The ``otf2`` package from
PyPI is an optional dependency (``pip install 'mpvis[otf2]'``):
:func:`require_otf2` imports it or raises :class:`Otf2Missing` with that
advice.
"""

from __future__ import annotations

import ctypes
import importlib
from ctypes import c_char_p, c_int, c_uint64, c_void_p  # by name: grep '\.c_' finds columns
from types import ModuleType
from typing import Any, Final

from mpvis.errors import MissingExtraError

__all__ = [
    "ATTRIBUTE",
    "BLOCKING_RECV_REGIONS",
    "COMPLETION_REGIONS",
    "SEND_REGIONS",
    "STATE_PARAMETER",
    "Otf2Missing",
    "coll_region",
    "op_of_region",
    "require_otf2",
    "send_region",
]

#: Name of the OTF2 attribute (type STRING) on which mpvis writes each record as JSON.
ATTRIBUTE: Final = "mpvis:record"
#: Name of the string parameter that carries a ``state`` record's variables (JSON).
STATE_PARAMETER: Final = "mpvis:state"

#: Send region -> (blocking, sync, mode of the team's optional ``mode`` field).
SEND_REGIONS: Final[dict[str, tuple[bool, bool, str]]] = {
    "MPI_Send": (True, False, "standard"),
    "MPI_Ssend": (True, True, "synchronous"),
    "MPI_Bsend": (True, False, "buffered"),
    "MPI_Rsend": (True, False, "ready"),
    "MPI_Isend": (False, False, "standard"),
    "MPI_Issend": (False, True, "synchronous"),
    "MPI_Ibsend": (False, False, "buffered"),
    "MPI_Irsend": (False, False, "ready"),
    "MPI_Start": (False, False, "standard"),
    "MPI_Startall": (False, False, "standard"),
}

#: Regions in which a blocking receive is posted and completed.
BLOCKING_RECV_REGIONS: Final = frozenset(
    {"MPI_Recv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Mrecv"})

#: Regions that complete requests (an MPI_Test* that completes nothing leaves no record).
COMPLETION_REGIONS: Final = frozenset({
    "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
    "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
})


class Otf2Missing(MissingExtraError):
    """The optional ``otf2`` package is not installed; ``str()`` says how to get it."""


def require_otf2() -> ModuleType:
    """The ``otf2`` package, or :class:`Otf2Missing` saying how to install it.

    The first call also stops the C library from printing its own error lines
    on stderr: its errors reach the caller as exceptions, which mpvis reports
    in one sentence."""
    try:
        otf2 = importlib.import_module("otf2")
    except ImportError as exc:
        raise Otf2Missing(
            "OTF2 support needs the 'otf2' package: pip install 'mpvis[otf2]' "
            f"(or pip install otf2) [{exc}]") from None
    _quiet_library()
    return otf2


#: OTF2_ErrorCallback (the C va_list is passed as a pointer on the platforms wheels exist for).
_ERROR_CALLBACK = ctypes.CFUNCTYPE(c_int, c_void_p, c_char_p, c_uint64, c_char_p, c_int,
                                   c_char_p, c_void_p)
_quiet: list[Any] = []  # the registered callback, kept alive


def _return_code(_ud: Any, _file: Any, _line: Any, _fn: Any, code: int, _fmt: Any,
                 _va: Any) -> int:
    return code


def _quiet_library() -> None:
    if _quiet:
        return
    try:
        config = importlib.import_module("_otf2.Config")
        register = config.conf.lib.OTF2_Error_RegisterCallback
    except (ImportError, AttributeError):
        return  # another build of the package: its messages stay on stderr
    register.argtypes = [_ERROR_CALLBACK, c_void_p]
    register.restype = c_void_p
    _quiet.append(_ERROR_CALLBACK(_return_code))
    register(_quiet[0], None)


def send_region(blocking: bool, sync: bool, mode: object) -> str:
    """The MPI call a send record stands for (the inverse of :data:`SEND_REGIONS`)."""
    if sync:
        mode = "synchronous"
    for name, (b, _s, m) in SEND_REGIONS.items():
        if b == blocking and m == mode and not name.startswith("MPI_Start"):
            return name
    return "MPI_Send" if blocking else "MPI_Isend"


def coll_region(op: str) -> str:
    """``bcast`` -> ``MPI_Bcast``: the region of a collective's ``op``."""
    return "MPI_" + op[:1].upper() + op[1:]


def op_of_region(name: str) -> str:
    """``MPI_Bcast`` -> ``bcast``: a collective ``op`` from its region's name."""
    return name[4:].lower() if name.upper().startswith("MPI_") else name.lower()
