"""A command that runs a program: mpvis's options, then ``--``, then the program.

``mpvis run``, ``mpvis replay`` and ``mpvis explore`` end with a program and its
arguments, which argparse alone would read as options of mpvis (``prog.py -n 2``).
:func:`take_program` gives such a subcommand's parser a splitter that says which
words argparse parses and what else goes in the namespace (the program, and for
``mpvis run`` the options passed to mpiexec); :func:`after_dashdash` is the
splitter of the commands where everything after ``--`` is the program.

Contract of a splitter: ``argv -> (words for argparse, {namespace field: words})``;
a ``ValueError`` it raises is the command's usage error (exit status 2 with its
message, like any argparse error).  Words argparse does not know are an error too.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

__all__ = ["Splitter", "after_dashdash", "take_program"]

#: ``argv -> (words for argparse, {namespace field: its words})``
Splitter = Callable[[list[str]], tuple[list[str], dict[str, list[str]]]]


def after_dashdash(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Everything after the first ``--`` is ``program``, whatever it looks like."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return argv[:cut], {"program": argv[cut + 1 :]}


def take_program(p: argparse.ArgumentParser, split: Splitter) -> None:
    """Make ``p`` parse only the words ``split`` gives it and set the other fields as
    it says (see the module docstring)."""
    parse_known = p.parse_known_args

    def parse(
        args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        try:
            ours, fields = split(list(args or []))
        except ValueError as exc:
            p.error(str(exc))
        ns, extra = parse_known(ours, namespace)
        if extra:
            p.error(f"unrecognized arguments: {' '.join(extra)}")
        for name, words in fields.items():
            setattr(ns, name, words)
        return ns, []

    p.parse_known_args = parse  # type: ignore[method-assign,assignment]  # argparse has no hook for a trailing program
