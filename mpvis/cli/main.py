"""The ``mpvis`` command: a thin dispatcher over one module per subcommand.

Each subcommand named in :data:`~mpvis.cli.commands.COMMANDS` has a module
``mpvis.cli.<name>`` that defines ``register(subparsers) -> None``, which adds
its subparser and sets ``func=<callable(args) -> int>`` as the parser default.
Only the module of the subcommand that runs is imported (:func:`build_parser`
with the command line): the others are listed by name and help line alone,
which is all ``mpvis --help`` and argparse's errors show of them.  ``mpvis``
with no subcommand opens the window on the built-in demo.

Errors meant for the user are raised as :class:`mpvis.cli.errors.UserError`
and printed as one line on stderr with exit code 2: never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mpvis import __version__
from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError

#: What ``mpvis`` with no arguments runs.
DEFAULT_ARGS: tuple[str, ...] = ("demo", "--gui")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of ``mpvis``; with ``argv`` (a command line without
    the program name), one that parses exactly that line as the full parser does.

    Without ``argv`` every subcommand's module is imported and registered.  With
    it, only the subcommand that argparse will run is: the first word of
    ``argv`` that names a subcommand (the top-level options take no value, so
    argparse's subcommand is that word, or an earlier word that names none and
    makes it fail with the same message either way).  Every other subcommand
    is registered by name and help line (:data:`COMMANDS`), in the same order,
    so ``mpvis --help``, the choices in argparse's errors and the parse of
    ``argv`` are those of the full parser."""
    parser = argparse.ArgumentParser(
        prog="mpvis",
        description="A debugger for message-passing (MPI) programs.",
    )
    parser.add_argument("--version", action="version", version=f"mpvis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((a for a in argv if a in COMMANDS), None) if argv is not None else None
    for name, line in COMMANDS.items():
        if argv is None or name == chosen:
            importlib.import_module(f"mpvis.cli.{name}").register(sub)
        else:
            sub.add_parser(name, help=line)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list and "demo" in COMMANDS:
        args_list = list(DEFAULT_ARGS)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"mpvis: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("mpvis: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
