"""The ``mpvis`` command: a thin dispatcher over one module per subcommand.

Each module named in :data:`COMMANDS` lives in :mod:`mpvis.cli` and defines
``register(subparsers) -> None``, which adds its subparser and sets
``func=<callable(args) -> int>`` as the parser default.  ``mpvis`` with no
subcommand opens the window on the built-in demo.

Errors meant for the user are raised as :class:`mpvis.cli.errors.UserError`
and printed as one line on stderr with exit code 2: never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mpvis import __version__
from mpvis.cli.errors import UserError

#: Subcommand modules, in the order ``mpvis --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "check",
    "cone",
    "predicate",
    "run",
    "replay",
    "collector",
    "demo",
    "open",
    "render",
    "export",
    "orderings",
    "explore",
    "recover",
)

#: What ``mpvis`` with no arguments runs.
DEFAULT_ARGS: tuple[str, ...] = ("demo", "--gui")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="mpvis",
        description="A debugger for message-passing (MPI) programs.",
    )
    parser.add_argument("--version", action="version", version=f"mpvis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"mpvis.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list and "demo" in COMMANDS:
        args_list = list(DEFAULT_ARGS)
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
