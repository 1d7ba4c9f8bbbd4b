"""``mpvis collector --central HOST:PORT --run ID``: a collector for another machine.

In a run across machines (``mpvis run --listen HOST:PORT``) every machine but
the one running ``mpvis run`` needs its own collector (MPVisualizer, section 2):
with ``MPVIS_TLS_PIN`` (printed by ``mpvis run --listen``) its link to the
central process is TLS, the certificate checked against that pin; its ranks
connect to it on loopback (``MPVIS_COLLECTOR``, propagated by
mpiexec, names the port), and it forwards to the central process, presenting
the run's token (``MPVIS_TOKEN`` or ``--token-file``: never on the command
line, :mod:`mpvis.cli.token_args`).  It keeps retrying until the central process is up, and exits
when the central process says the run is over, or on Ctrl-C after forwarding
what it has.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mpvis.cli.commands import COMMANDS
from mpvis.cli.errors import UserError
from mpvis.cli.token_args import add_token_options, token_from
from mpvis.collector.auth import format_address, parse_address
from mpvis.collector.collector import Collector


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "collector",
        help=COMMANDS["collector"],
        description="Forward the records of this machine's ranks to a central process.",
    )
    p.add_argument(
        "--central",
        required=True,
        metavar="HOST:PORT",
        help="address of the central process (mpvis run --listen)",
    )
    add_token_options(p, "the run's shared secret")
    p.add_argument("--run", required=True, metavar="ID", help="the run id printed by mpvis run")
    p.add_argument(
        "--port",
        type=int,
        default=0,
        help="loopback port the ranks connect to (mpvis run prints it)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        central = parse_address(args.central)
    except ValueError as exc:
        raise UserError(f"--central: {exc}") from None
    token = token_from(args)
    if token is None:
        raise UserError("no token: set MPVIS_TOKEN or give --token-file (mpvis run --listen "
                        "prints the command)")
    pin = os.environ.get("MPVIS_TLS_PIN") or None  # TLS (mpvis.collector.tls)
    collector = Collector(central, token, args.run, port=args.port, tls_pin=pin)
    try:
        collector.start()
    except OSError as exc:
        raise UserError(f"cannot listen on port {args.port}: {exc}") from None
    print(
        f"mpvis: collector on {format_address(collector.address)} forwarding to "
        f"{format_address(central)}",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not collector.stopped_by_central.wait(0.5):
            pass
    except KeyboardInterrupt:
        print("mpvis: interrupted: forwarding what is left", file=sys.stderr, flush=True)
    finally:
        collector.finish(None, timeout=10.0)
        collector.stop()
    if collector.refused:
        raise UserError(f"the central process refused this collector: {collector.refused}")
    return 0
