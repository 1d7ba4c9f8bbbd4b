"""``mpvis`` imports only the subcommand that runs (issue 16), and its parser
behaves as the full one: same help texts, same parse, same errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from mpvis.cli.commands import COMMANDS
from mpvis.cli.main import build_parser


def _choices(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_table_is_what_the_modules_register() -> None:
    """The help lines ``mpvis --help`` shows without importing the modules are
    the ones each module registers, in the same order."""
    full = _choices(build_parser())
    assert [(a.dest, a.help) for a in full._choices_actions] == list(COMMANDS.items())


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_texts_identical(name: str) -> None:
    full = build_parser()
    lazy = build_parser([name, "--help"])
    assert lazy.format_help() == full.format_help()
    assert lazy.format_usage() == full.format_usage()
    assert (_choices(lazy).choices[name].format_help()
            == _choices(full).choices[name].format_help())


@pytest.mark.parametrize("argv", [
    ["check", "t.jsonl", "--json", "--no-cache"],
    ["--", "check", "t.jsonl"],
    ["cone", "0:0", "t.jsonl"],
    ["run", "-n", "2", "p.py", "--out", "x"],
    ["export", "t.jsonl", "--format", "csv", "-o", "x.csv"],
    ["orderings", "t.jsonl"],
])
def test_parse_identical(argv: list[str]) -> None:
    """A command line parses to the same namespace (``func`` included) or fails
    with the same message as with the full parser."""
    def parse(p: argparse.ArgumentParser) -> object:
        try:
            return vars(p.parse_args(argv))
        except SystemExit as exc:
            return ("exit", exc.code)
    assert parse(build_parser(argv)) == parse(build_parser())


@pytest.mark.parametrize("argv", [
    ["bogus"], ["-1", "check"], ["bogus", "check", "x"], ["check"], ["--bogus", "check", "x"],
    ["check", "x", "--no-such-option"],
])
def test_errors_identical(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's errors (unknown subcommand, missing or unknown arguments)
    name the same choices and usage with either parser."""
    out = []
    for parser in (build_parser(argv), build_parser()):
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(argv)
        out.append((exc.value.code, capsys.readouterr()))
    assert out[0] == out[1]


def test_only_the_running_subcommand_is_imported() -> None:
    """``mpvis check --help`` in a fresh interpreter imports mpvis.cli.check
    but no other subcommand's module (nor networkx, which run's imports load)."""
    code = ("import json, sys\n"
            "from mpvis.cli.main import main\n"
            "try:\n"
            "    main(['check', '--help'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules\n"
            "      if m.startswith('mpvis.cli.') or m.split('.')[0] == 'networkx')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()[-1]
    loaded = set(json.loads(out))
    assert "mpvis.cli.check" in loaded
    assert not loaded & {f"mpvis.cli.{n}" for n in COMMANDS if n != "check"}
    assert not any(m.split(".")[0] == "networkx" for m in loaded)
