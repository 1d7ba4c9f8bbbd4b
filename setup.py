"""Build of the C part of the trace library (everything else is in pyproject.toml).

``mpvis.instrument._crecorder`` is the in-rank recorder's hot path
(``mpvis/instrument/_crecorder.c``), ``mpvis.analysis._cexact`` the exact race
detector (``mpvis/analysis/_cexact.c``), ``mpvis.model._ccausal`` the model's
walk in causal order (``mpvis/model/_ccausal.c``: clock merges, Lamport
clocks), ``mpvis.protocol._cjournal`` the central process's columns and journal
lines of a rank's compact batch (``mpvis/protocol/_cjournal.c``),
``mpvis.analysis._cjson`` the JSON text of the report's race entries
(``mpvis/analysis/_cjson.c``), ``mpvis.tracefile._cscan`` a trace file's lines
to checked columns in the parser process (``mpvis/tracefile/_cscan.c``);
``pip install -e .`` builds them in place.
"""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra"]
_CODES = "mpvis/instrument/pmpi/mvcodes.h"  # mpvis/protocol/codes.py


def _c(module: str, *, codes: bool = False) -> Extension:
    """The extension ``module`` built from its one C file (``codes``: it takes
    the record codes from mvcodes.h, which its Python callers share)."""
    extra = ["-Wno-unused-parameter"] if codes else []
    return Extension(module, [module.replace(".", "/") + ".c"],
                     depends=[_CODES] if codes else [], extra_compile_args=_FLAGS + extra)


setup(
    ext_modules=[
        _c("mpvis.instrument._crecorder", codes=True),
        _c("mpvis.analysis._cexact"),
        _c("mpvis.protocol._cjournal", codes=True),
        _c("mpvis.analysis._cjson"),
        _c("mpvis.model._ccausal"),
        _c("mpvis.tracefile._cscan"),
        _c("mpvis.scene._cdensity"),
    ]
)
