"""Helpers for the live-path tests: a recording central process and a cuttable TCP proxy."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mpvis.collector.central import CentralProcess


@dataclass
class Recorded:
    """What the central process's callbacks saw."""

    starts: list[tuple[dict, Path]] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    rank_ends: list[tuple[int, str, str]] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    ended: threading.Event = field(default_factory=threading.Event)

    def end(self, info: dict[str, Any]) -> None:
        self.ends.append(info)
        self.ended.set()


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


@pytest.fixture
def central(tmp_path: Path, recorded: Recorded) -> Iterator[CentralProcess]:
    c = CentralProcess(
        journal_dir=tmp_path,
        on_run_start=lambda h, p: recorded.starts.append((h, p)),
        on_records=recorded.records.extend,
        on_rank_end=lambda r, s, d: recorded.rank_ends.append((r, s, d)),
        on_run_end=recorded.end,
        hello_timeout=2.0,
    ).start()
    yield c
    c.stop()


def journal_lines(path: str | Path) -> list[dict]:
    """The journal as parsed JSON lines (header first)."""
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def assert_each_record_once(lines: list[dict], counts: dict[int, int]) -> None:
    """Every rank's records 0..count-1 appear exactly once and in seq order."""
    per_rank: dict[int, list[int]] = {}
    for rec in lines[1:]:
        per_rank.setdefault(rec["rank"], []).append(rec["seq"])
    assert {r: seqs for r, seqs in per_rank.items()} == {
        r: list(range(n)) for r, n in counts.items()
    }


class Proxy:
    """A TCP forwarder whose connections the test can cut at will."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = self._server.getsockname()[:2]
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._socks += [client, upstream]
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        """Cut every current connection (both directions)."""
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._server.close()
        self.drop()
