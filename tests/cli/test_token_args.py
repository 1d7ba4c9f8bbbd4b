"""The run's token never on a command line (issue 15): MPVIS_TOKEN or a 0600
file; --token is deprecated and warns; the printed collector command carries
the token in its environment only."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mpvis.cli.errors import UserError
from mpvis.cli.run import _print_remote_instructions
from mpvis.cli.token_args import DEPRECATED, add_token_options, token_from


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_token_options(p, "secret")
    return p.parse_args(list(argv))


def test_token_file_must_be_private(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text("s3cret\n")
    f.chmod(0o644)
    with pytest.raises(UserError, match="other users may read it"):
        token_from(parse("--token-file", str(f)), {})
    f.chmod(0o600)
    assert token_from(parse("--token-file", str(f)), {"MPVIS_TOKEN": "env"}) == "s3cret"
    f.write_text("")
    with pytest.raises(UserError, match="empty"):
        token_from(parse("--token-file", str(f)), {})


def test_environment_then_deprecated_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert token_from(parse(), {"MPVIS_TOKEN": "env"}) == "env"
    assert token_from(parse(), {}) is None
    assert token_from(parse("--token", "old"), {}) == "old"
    assert DEPRECATED in capsys.readouterr().err


def test_remote_instructions_keep_the_token_off_the_command_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    _print_remote_instructions(("10.0.0.1", 7000), "tok-123", "R1", 7001)
    cmd = capsys.readouterr().err.splitlines()[-1].strip()
    env, _, argv = cmd.partition(" mpvis ")
    assert env == "MPVIS_TOKEN=tok-123" and "tok-123" not in argv and "--token" not in argv
