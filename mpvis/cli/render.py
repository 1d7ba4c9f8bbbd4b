"""``mpvis render TRACE -o out.png``: the space-time diagram as an image, headless.

Draws the whole run as the window would (``--logical`` for the happened-before
layout) into a PNG, or an SVG when ``-o`` ends in ``.svg``.  Needs no screen:
Qt's offscreen platform is used when no display is set.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.display import require_qt
from mpvis.cli.errors import UserError


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)[xX](\d+)", text)
    if not m or not (16 <= int(m[1]) <= 20000 and 16 <= int(m[2]) <= 20000):
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT in pixels, got {text!r}")
    return int(m[1]), int(m[2])


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "render",
        help=COMMANDS["render"],
        description="Render the space-time diagram of a trace to PNG (or SVG) without a window.",
    )
    p.add_argument("trace", type=Path, help="trace file")
    p.add_argument("-o", "--out", type=Path, required=True, help="output .png or .svg")
    p.add_argument("--size", type=_size, default=(1600, 900), help="WxH pixels (1600x900)")
    p.add_argument("--logical", action="store_true", help="logical (happened-before) layout")
    p.set_defaults(func=render)


def render(args: argparse.Namespace) -> int:
    """Run ``mpvis render`` with parsed ``args``; returns 0, or raises UserError."""
    if not args.trace.is_file():
        raise UserError(f"no such trace file: {args.trace}")
    if args.out.suffix.lower() not in (".png", ".svg"):
        raise UserError("the output must end in .png or .svg")
    require_qt()
    try:
        gui_render = importlib.import_module("mpvis.gui.render")  # Qt only behind this line
    except ImportError as exc:
        raise UserError(f"Qt is not available ({exc})") from None
    try:
        gui_render.render_trace(args.trace, args.out, args.size, logical=args.logical)
    except gui_render.RenderError as exc:
        raise UserError(str(exc)) from None
    print(f"wrote {args.out} ({args.size[0]}x{args.size[1]})")
    return 0
