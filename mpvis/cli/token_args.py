"""Where a run's token comes from: never the command line (any local user can
read another's command line in ``/proc``).

``--token-file FILE`` (a file only its owner may read: mode ``0600`` or
stricter) or the ``MPVIS_TOKEN`` environment variable (``/proc/PID/environ``
is readable by the owner only).  ``--token`` still works but is deprecated:
it warns, since the secret is then visible to every user of the machine.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from mpvis.cli.errors import UserError

__all__ = ["add_token_options", "token_from"]

DEPRECATED = ("warning: --token puts the run's secret on the command line, where every "
              "user of this machine can read it (ps, /proc); use MPVIS_TOKEN or --token-file")


def add_token_options(p: argparse.ArgumentParser, what: str) -> None:
    """``--token-file`` and the deprecated ``--token`` on ``p``."""
    p.add_argument("--token-file", type=Path, metavar="FILE",
                   help=f"{what} in a file only you can read (mode 0600); "
                        "or set MPVIS_TOKEN")
    p.add_argument("--token", help=argparse.SUPPRESS)  # deprecated: visible in /proc


def token_from(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> str | None:
    """The token from ``--token-file``, else ``MPVIS_TOKEN``, else the deprecated
    ``--token`` (with a warning on stderr); ``None`` if none is given.
    Raises :class:`UserError` for a file others may read, or an empty one."""
    env = os.environ if env is None else env
    path: Path | None = getattr(args, "token_file", None)
    if path is not None:
        try:
            st = path.stat()
            if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise UserError(f"--token-file {path}: other users may read it "
                                f"(mode {stat.filemode(st.st_mode)}); chmod 600 {path}")
            token = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UserError(f"--token-file {path}: {exc.strerror or exc}") from None
        if not token:
            raise UserError(f"--token-file {path}: the file is empty")
        return token
    if env.get("MPVIS_TOKEN"):
        return env["MPVIS_TOKEN"]
    if getattr(args, "token", None):
        print(f"mpvis: {DEPRECATED}", file=sys.stderr, flush=True)
        return str(args.token)
    return None
