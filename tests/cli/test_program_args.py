"""The program at the end of ``mpvis run``, ``replay`` and ``explore`` (mpvis.cli.program_args),
parsed by mpvis's real argument parser."""

from __future__ import annotations

import pytest

from mpvis.cli.main import build_parser


def test_replay_and_explore_take_everything_after_dashdash_as_the_program() -> None:
    parser = build_parser()
    ns = parser.parse_args(["replay", "rec", "-n", "2", "--", "p.py", "-n", "9", "--stats"])
    assert ns.record.name == "rec" and ns.nprocs == 2 and not ns.stats
    assert ns.program == ["p.py", "-n", "9", "--stats"]
    ns = parser.parse_args(["explore", "-n", "3", "--json", "--", "p.py", "--json", "--"])
    assert ns.nprocs == 3 and ns.json and ns.program == ["p.py", "--json", "--"]
    assert parser.parse_args(["explore", "-n", "3"]).program == []


def test_run_passes_unknown_options_to_mpiexec() -> None:
    ns = build_parser().parse_args(
        ["run", "-n", "4", "-genv", "X", "1", "--headless", "--", "p.py", "-n", "2"])
    assert ns.nprocs == 4 and ns.headless
    assert ns.mpiexec_options == ["-genv", "X", "1"] and ns.program == ["p.py", "-n", "2"]
    ns = build_parser().parse_args(["run", "-n", "2", "p.py", "--out", "x"])
    assert ns.out is None and ns.mpiexec_options == [] and ns.program == ["p.py", "--out", "x"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "-ppn", "2", "p.py"], "go before '--'"),
        (["explore", "-n", "2", "--nope", "--", "p.py"], "unrecognized arguments: --nope"),
        (["replay", "rec", "--nope", "--", "p.py"], "unrecognized arguments: --nope"),
    ],
)
def test_bad_words_are_usage_errors(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert says in capsys.readouterr().err
