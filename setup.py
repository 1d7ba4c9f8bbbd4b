"""Build of the C part of the trace library (everything else is in pyproject.toml).

``mpvis.instrument._crecorder`` is the in-rank recorder's hot path
(``mpvis/instrument/_crecorder.c``), ``mpvis.analysis._cexact`` the exact race
detector (``mpvis/analysis/_cexact.c``), ``mpvis.model._ccausal`` the model's
walk in causal order (``mpvis/model/_ccausal.c``: clock merges, Lamport
clocks), ``mpvis.protocol._cjournal`` the central process's columns and journal
lines of a rank's compact batch (``mpvis/protocol/_cjournal.c``),
``mpvis.analysis._cjson`` the JSON text of the report's race entries
(``mpvis/analysis/_cjson.c``); ``pip install -e .`` builds them in place.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "mpvis.instrument._crecorder",
            ["mpvis/instrument/_crecorder.c"],
            depends=["mpvis/instrument/pmpi/mvcodes.h"],  # mpvis/protocol/codes.py
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ),
        Extension(
            "mpvis.analysis._cexact",
            ["mpvis/analysis/_cexact.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
        ),
        Extension(
            "mpvis.protocol._cjournal",
            ["mpvis/protocol/_cjournal.c"],
            depends=["mpvis/instrument/pmpi/mvcodes.h"],  # mpvis/protocol/codes.py
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        ),
        Extension(
            "mpvis.analysis._cjson",
            ["mpvis/analysis/_cjson.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
        ),
        Extension(
            "mpvis.model._ccausal",
            ["mpvis/model/_ccausal.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
        ),
    ]
)
