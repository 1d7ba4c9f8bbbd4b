"""Hostile trace files, built from the sample traces: the cases of issue 15 and
the mutations of the fuzz tests (shared by ``test_hostile.py`` and the GUI's
render test)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import zstandard

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
#: Small sample traces the mutations start from (every kind of record among them).
BASES = ("ring.jsonl", "master_worker.jsonl", "deadlock_recv_recv.jsonl",
         "deadlock_lock_cycle.jsonl", "deadlock_root_mismatch.jsonl",
         "situations/s16_RCRC.jsonl", "false_race.jsonl")


def sample(name: str = "ring.jsonl") -> bytes:
    return (SAMPLES / name).read_bytes()


def zst(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def decompress(name: str, data: bytes) -> bytes:
    """The content of a (well-formed) file named ``name``, by its suffix."""
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".zst"):
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data


def _lines() -> list[bytes]:
    return sample().splitlines(keepends=True)


def _header(**kw: Any) -> bytes:
    head = json.loads(_lines()[0])
    head.update(kw)
    return json.dumps(head).encode() + b"\n"


def _long_trace(events: int = 20000) -> bytes:
    out = [_header(nprocs=2)]
    out += [json.dumps({"rank": 0, "seq": i, "kind": "state", "vars": {"x": i * 7919 % 10007}}
                       ).encode() + b"\n" for i in range(events)]
    return b"".join(out)


@cache
def cases() -> dict[str, bytes]:
    """File name -> content: the hostile files of issue 15 (each must give a clean
    error naming the file, or a valid report)."""
    ring = sample()
    lines = _lines()
    body = b"".join(lines[1:])
    long = _long_trace()
    gz_long, zst_long = gzip.compress(long), zst(long)
    return {
        "corrupt.gz": b"\x1f\x8b\x08\x00garbage" * 10,
        "plain_named.gz": ring,
        "plain_named.zst": ring,
        "gzip_named.zst": gzip.compress(ring),
        "zstd_named.gz": zst(ring),
        "cut_small.gz": gzip.compress(ring)[:300],
        "cut_long.gz": gz_long[: len(gz_long) * 2 // 3],
        "cut_long.zst": zst_long[: len(zst_long) * 2 // 3],
        "wrong_typed_extra.jsonl": b"".join(
            ln.replace(b'"kind":"final"', b'"kind":"final","blocking":"x","dest":[]')
            for ln in lines),
        "sync_on_recv.jsonl": lines[0] + b'{"rank":1,"seq":0,"kind":"recv","src":-1,"tag":-1,'
                                         b'"blocking":true,"sync":"x"}\n',
        "odd_req_on_blocking_send.jsonl": lines[0] + b'{"rank":0,"seq":0,"kind":"send","dest":1,'
                                                     b'"tag":0,"blocking":true,"sync":false,'
                                                     b'"req":"x"}\n',
        "deep_value.jsonl": lines[0] + b'{"rank":0,"seq":0,"kind":"state","vars":{"x":'
                                       + b"[" * 1000 + b"]" * 1000 + b"}}\n",
        "deep_line.jsonl": lines[0] + b"[" * 100000 + b"]" * 100000 + b"\n",
        "nprocs_million.jsonl": _header(nprocs=1_000_000) + body,
        "nprocs_huge.jsonl": _header(nprocs=10**30) + body,
        "nprocs_string.jsonl": _header(nprocs="4") + body,
        "one_huge_line.gz": gzip.compress(
            lines[0] + b'{"rank":0,"seq":0,"kind":"state","vars":{"x":"' + b"a" * (64 << 20)
            + b'"}}\n', 1),
        "blank_lines.gz": gzip.compress(lines[0] + b"\n" * 2_000_000 + body, 1),
        "nul_byte.jsonl": ring.replace(b'"send"', b'"se\x00nd"', 1),
        "huge_seq.jsonl": lines[0] + b'{"rank":0,"seq":100000000000000000000000,"kind":"final"}\n',
        "huge_negative.jsonl": lines[0] + b'{"rank":0,"seq":0,"kind":"final","t":-1e308}\n',
        "nan.jsonl": lines[0] + b'{"rank":0,"seq":0,"kind":"final","t":NaN}\n',
        "binary.jsonl": bytes(range(256)) * 10,
        "empty.gz": gzip.compress(b""),
    }
