"""The C scanner of trace lines (``scan_chunks``) against the reference path.

The reference is what the parser process did before the scanner, and what
the in-process reader still does: :func:`~mpvis.tracefile.lines.chunks`,
:func:`~mpvis.tracefile.lines.parse_chunk` (orjson), then
:func:`~mpvis.model.ingest.extract`.  Every test compares the whole result
chunk by chunk: the columns' bytes (so ``-0.0`` and the NaN of an absent
``t`` count), the extras with their key order and value types (``1`` is not
``1.0`` nor ``True``), the site numbering, the error with its rank and seq,
the records' line numbers, the bad line and its rule, the bytes read.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from random import Random
from typing import Any
from unittest.mock import patch

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpvis.model import ingest
from mpvis.model.errors import ModelInputError
from mpvis.model.ingest import SiteTable, extract
from mpvis.model.manager import ModelManager
from mpvis.protocol.codes import EVENT_KINDS
from mpvis.protocol.records import check_header
from mpvis.tracefile import lines as lines_module
from mpvis.tracefile import scan as scan_module
from mpvis.tracefile.lines import chunks, parse_chunk
from mpvis.tracefile.reader import load_trace
from mpvis.tracefile.scan import DTYPES, as_batch, scan_chunks

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted([*ROOT.glob("sample_traces/**/*.jsonl"), *ROOT.glob("tests/fixtures/**/*.jsonl")])


# ---------------------------------------------------------------- the two paths

def reference(data: bytes, nprocs: int, validate: bool = True) -> list[dict[str, Any]]:
    """The chunks of ``data`` (event lines from file line 2) by the reference path."""
    sites = SiteTable()
    out = []
    line = 2
    for lines in chunks(io.BytesIO(data)):
        chunk = parse_chunk(line, lines)
        known = len(sites.names)
        cols = extract(chunk.records, nprocs, sites, validate)
        out.append(_summary(cols, list(chunk.nums), sum(map(len, lines)), chunk.bad_line,
                            chunk.rule, sites.names[known:]))
        if cols.error is not None or chunk.bad_line is not None:
            break
        line += len(lines)
    return out


def scanned(data: bytes, nprocs: int, validate: bool = True) -> list[dict[str, Any]]:
    """The chunks of ``data`` by :func:`scan_chunks` (as the parser process reads them)."""
    sites = SiteTable()
    out = []
    for chunk in scan_chunks(io.BytesIO(data), 2, nprocs, validate):
        known = len(sites.names)
        cols = as_batch(chunk, sites)
        out.append(_summary(cols, list(chunk.nums), chunk.nbytes, chunk.bad_line, chunk.rule,
                            sites.names[known:]))
        if cols.error is not None or chunk.bad_line is not None:
            break
    return out


def _summary(cols: ingest.Batch, nums: list[int], nbytes: int, bad_line: int | None,  # noqa: PLR0917
             rule: str | None, new_sites: list[str]) -> dict[str, Any]:
    arrays = {}
    for name, dt in DTYPES.items():
        a = np.asarray(getattr(cols, name))
        assert a.dtype == np.dtype(dt), name
        assert len(a) == cols.n, name
        arrays[name] = a.tobytes()
    return {
        "n": cols.n, "cols": arrays, "extras": _typed(cols.extras),
        "error": None if cols.error is None else (type(cols.error), str(cols.error)),
        "error_at": (cols.error_rank, cols.error_seq), "nums": nums, "nbytes": nbytes,
        "bad": (bad_line, rule), "new_sites": new_sites,
    }


def _typed(v: Any) -> Any:
    """``v`` with every value's type beside it and dicts as item lists (key order counts)."""
    if isinstance(v, dict):
        return ("dict", [(_typed(k), _typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    if isinstance(v, float):
        return ("float", v.hex())
    return (type(v).__name__, v)


def assert_same(data: bytes, nprocs: int, validate: bool = True) -> None:
    want = reference(data, nprocs, validate)
    got = scanned(data, nprocs, validate)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for key in w:
            assert g[key] == w[key], (i, key)


@contextmanager
def small_chunks(batch_lines: int, max_line_bytes: int | None = None) -> Iterator[None]:
    """Both paths with ``batch_lines`` lines a chunk (and a shorter line limit)."""
    top = max_line_bytes or lines_module.MAX_LINE_BYTES
    with (patch.object(lines_module, "BATCH_LINES", batch_lines),
          patch.object(scan_module, "BATCH_LINES", batch_lines),
          patch.object(lines_module, "MAX_LINE_BYTES", top),
          patch.object(scan_module, "MAX_LINE_BYTES", top)):
        yield


# ------------------------------------------------------------- generated lines

#: Values that are odd for most fields: other spellings of numbers, other
#: types, bounds of the 32-bit columns and of int64, bad JSON.
ODD = [
    "1.0", "1e0", "1E2", "-0", "0", "-1", "-2", "01", "true", "false", "null", '"1"', '""',
    "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
    "9223372036854775808", "18446744073709551615", "18446744073709551616",
    "123456789012345678", "1234567890123456789", "-123456789012345678", "[1]", "[]", "{}",
    '{"x":1}', "[[1]]", '[1,"x"]', "[1.0]", "[true]", "-", "1.", ".5", "+1", "0x10", "NaN",
    "Infinity", "-Infinity", "1 2", "1e400", "1e-400", "-0.0", "0.1e-5", "4.9e-324",
    '"a\\"b"', '"\\u00e9"', '"\u00e9"', '"tab\there"', "tru", '"unterminated', "[1,]",
    "[,1]", "[1 2]", "[ 1 , 2 ]", '"\\/"',
]
#: Strings in raw UTF-8 bytes, well-formed or not (overlong, surrogate, above
#: U+10FFFF, cut, a stray continuation byte).
UTF8 = [b'"\xc3\xa9.py:1"', b'"\xe2\x82\xac"', b'"\xf0\x9f\x98\x80"', b'"\xf4\x8f\xbf\xbf"',
        b'"\xef\xbf\xbf"', b'"\xed\x9f\xbf"', b'"\xee\x80\x80"', b'"\x7f"', b'"\xc0\x80"',
        b'"\xc1\xbf"', b'"\xe0\x80\x80"', b'"\xe0\x9f\xbf"', b'"\xed\xa0\x80"', b'"\xed\xbf\xbf"',
        b'"\xf0\x8f\xbf\xbf"', b'"\xf4\x90\x80\x80"', b'"\xf5\x80\x80\x80"', b'"\xc3"', b'"\x80"',
        b'"\xe2\x82"', b'"\xff"', b'"\xc3\x28"', b'"\xf0\x9f\x98"']
#: Values of a state record's vars: scalars of every type (read in C), then
#: what goes to orjson (nested values, a duplicate or escaped name, too many).
VARS = ['{"x":1}', '{"y":"a","z":null}', "{}", '{"w":2.5,"v":true,"u":false}',
        '{ "x" : -0.0 , "\u00e9" : 1e5 }', "{" + ",".join(f'"k{i}":{i}' for i in range(64)) + "}",
        '{"a":{"b":1}}', '{"a":[1]}', '{"a":1,"a":2}', '{"k\\n":1}', '{"a":"\\u0041"}',
        "{" + ",".join(f'"k{i}":{i}' for i in range(65)) + "}", '{"a":1,}', '{"a"}', '{1:2}',
        '{"a":12345678901234567890}', '{"a":NaN}']
NAMES = ['"a.py:1"', '"b.py:22"', '"c.c:3"', '"x"', '"barrier"', '"L1"', '""']


def _float_text(rnd: Random) -> str:
    """A float (or an integer) in one of the spellings writers use."""
    how = rnd.randrange(8)
    x = rnd.choice([rnd.random() * 10 ** rnd.randint(-8, 8), rnd.uniform(-1e6, 1e6),
                    rnd.choice([0.0, -0.0, 1e-7, 5e-324, 1.7976931348623157e308, 2.5])])
    if how == 0:
        return repr(x)
    if how == 1:
        return orjson.dumps(x).decode()
    if how == 2:
        return f"{abs(x):.{rnd.randint(0, 20)}f}"
    if how == 3:
        return f"{x:.{rnd.randint(0, 20)}e}".replace("e", rnd.choice("eE"))
    if how == 4:
        return f"{rnd.randrange(10 ** rnd.randint(1, 22))}e{rnd.randint(-40, 40)}"
    if how == 5:
        return f"{rnd.randrange(10 ** 7)}.{rnd.randrange(10 ** rnd.randint(1, 19))}"
    if how == 6:
        return str(rnd.randint(-(2**60), 2**60))
    return str(rnd.randint(-5, 5))


def _int_list(rnd: Random) -> str:
    return "[" + ",".join(str(rnd.randint(-5, 2**40)) for _ in range(rnd.randrange(4))) + "]"


def _valid(rnd: Random, kind: str, f: str, nprocs: int) -> str:
    """A value ``check_record`` accepts for field ``f`` of a ``kind`` record."""
    wild = kind == "recv"
    ints = {
        "rank": (0, nprocs - 1), "seq": (0, 40), "comm": (0, 3), "dest": (0, nprocs - 1),
        "src": (-wild, nprocs - 1), "tag": (-wild, 4), "req": (-3, 9), "recv": (0, 40),
        "size": (0, 10**12), "call": (0, 9), "root": (0, nprocs), "count": (0, 9),
    }
    if f in ints:
        return str(rnd.randint(*ints[f]))
    if f in ("blocking", "sync"):
        return rnd.choice(["true", "false"])
    if f in ("site", "t"):
        return "null" if rnd.randrange(6) == 0 else (
            rnd.choice(NAMES) if f == "site" else _float_text(rnd))
    if f in ("op", "lock"):
        return rnd.choice(NAMES[:-1])
    if f in ("dtype", "redop"):
        return rnd.choice(NAMES)
    if f == "reqs":
        return _int_list(rnd)
    if f == "mode":
        return rnd.choice(['"all"', '"any"'])
    if f == "vars":
        return rnd.choice(VARS[:6])
    return rnd.choice([rnd.choice(NAMES), _float_text(rnd), _int_list(rnd), "true", "null"])


def _near(f: str, nprocs: int) -> list[str]:
    """Values at and just outside what ``check_record`` or the 32-bit columns
    accept for field ``f`` (of some kind)."""
    near = {
        "rank": [-1, 0, nprocs - 1, nprocs], "seq": [-1, 0, 2**31 - 1, 2**31],
        "comm": [-1, 0, 2**31 - 1, 2**31], "dest": [-1, 0, nprocs - 1, nprocs],
        "src": [-2, -1, 0, nprocs - 1, nprocs], "tag": [-2, -1, 0, 2**31 - 1, 2**31],
        "req": [2**31 - 1, 2**31, -(2**31), -(2**31) - 1], "recv": [-1, 0, 2**31 - 1, 2**31],
        "size": [-1, 0, 2**63 - 1], "call": [-1, 0, 2**31 - 1, 2**31], "root": [-1, 0, 2**40],
        "count": [-1, 0, 2**40],
    }
    if f in near:
        return [str(v) for v in near[f]]
    if f == "send":
        return ["[0,0]", "[1,0]", "[0,-1]", "[0,2147483647]", "[0,2147483648]", "[0]",
                "[0,0,0]", "[0.0,0]", "null", "[]", '[0,"1"]', "[-1,0]"]
    return ['""', '"all"', '"any"', '"some"', "[1.5]", '["1"]', "[]", "[-1]", "null"]


def _near_miss(rnd: Random, kind: str, f: str, nprocs: int) -> str:
    """A value just outside what ``check_record`` or the 32-bit columns accept."""
    return rnd.choice(_near(f, nprocs))


_NEEDS = {
    "send": ("dest", "tag", "blocking", "sync"), "recv": ("src", "tag", "blocking"),
    "consume": ("recv", "src", "tag"), "wait": ("reqs",), "waiting": ("reqs",),
    "coll": ("op",), "coll_exit": ("op",), "lock": ("lock",), "locked": ("lock",),
    "unlock": ("lock",), "state": ("vars",), "final": (),
}
_OPTIONAL = ("t", "site", "comm", "call", "req", "size", "send", "root", "count", "dtype",
             "redop", "mode", "sync", "note", "dest", "src", "blocking", "reqs", "op")
_FLAWS = ["missing", "odd", "near", "near", "near", "key", "frame"]


def record_line(rnd: Random, nprocs: int, flaw_rate: float) -> bytes:
    """One event line: a valid record (any kind, optional fields and extras,
    number spellings, spaces) or, with probability ``flaw_rate``, one with a
    flaw: a field missing, an odd or nearly valid value, a duplicate or escaped
    key, or odd framing."""
    flaw = rnd.choice(_FLAWS) if rnd.random() < flaw_rate else None
    kind = rnd.choice(EVENT_KINDS)
    if flaw == "odd" and rnd.randrange(4) == 0:
        kind = rnd.choice(["header", "bogus", "Send", ""])
    fields = ["rank", "seq", "kind", *_NEEDS.get(kind, ())]
    if kind in ("send", "recv"):
        fields.append("req")  # a nonblocking one needs it; a blocking one may have it
    if flaw == "missing":
        fields.remove(rnd.choice(fields))
    fields += [f for f in _OPTIONAL if rnd.randrange(5) == 0 and f not in fields]
    rnd.shuffle(fields)
    bad = rnd.choice(fields) if flaw in ("odd", "near") and fields else None
    items = []
    for f in fields:
        if f == "kind":
            value = json.dumps(kind)
        elif f == bad:
            value = rnd.choice(ODD) if flaw == "odd" else _near_miss(rnd, kind, f, nprocs)
        elif f == "send":
            value = f"[{{src}},{rnd.choice([0, 3, 40, 2**31 - 1])}]"
        else:
            value = _valid(rnd, kind, f, nprocs)
        items.append([f, value])
    src = next((v for f, v in items if f == "src"), "0")
    if flaw == "near" and bad == "send":
        src = str(rnd.choice([nprocs, -1, 2**31]))
    for item in items:
        item[1] = item[1].replace("{src}", src)
    if flaw == "key" and items:
        if rnd.random() < 0.5:
            items.append(list(rnd.choice(items)))  # a duplicate key
        else:
            items.append(["r\\u0061nk", "0"])  # "r\u0061nk" is "rank"
    sp = rnd.choice(["", "", "", " ", "\t", "\r", "  "])
    text = ("{" + sp + ("," + sp).join(f'"{k}"{sp}:{sp}{v}' for k, v in items) + sp + "}"
            ).encode()
    if flaw == "frame":
        how = rnd.randrange(6)
        if how == 0:
            text = text[: rnd.randrange(len(text) + 1)]  # cut
        elif how == 1:
            text = b"\xef\xbb\xbf" + text  # BOM
        elif how == 2:
            text += rnd.choice([b"x", b" }", b"{}", b"\x0c", b"\x00"])
        elif how == 3:
            text = rnd.choice([b"[1, 2]", b"3", b'"x"', b"null", b"", b"  \t ", b"\x0b",
                               b"\xff\xfe", b'{"kind":"send"'])
        elif how == 4:
            text += b"\r"  # CRLF
        else:
            text = text.replace(b'"a.py:1"', rnd.choice(UTF8))
    return text + b"\n"


def trace_body(seed: int) -> tuple[bytes, int]:
    """Event lines from a generator seeded by hypothesis (its own distributions:
    hypothesis's draws would favour the flawed cases and end most chunks at
    their first line), and the ranks."""
    rnd = Random(seed)
    nprocs = rnd.randint(1, 5)
    flaw_rate = rnd.choice([0.0, 0.02, 0.1, 0.3, 0.6])
    data = b"".join(record_line(rnd, nprocs, flaw_rate) for _ in range(rnd.randrange(60)))
    data *= rnd.choice([1, 1, 2, 5])  # chunks long enough for extract's grouped checks
    if data and rnd.random() < 0.3:
        data = data[:-1]  # no newline at the end
    return data, nprocs


# ------------------------------------------------------------------- the tests

def test_dtypes_are_the_batch_columns() -> None:
    assert list(DTYPES) == [*ingest.INT_COLUMNS, "code", "flags", "t", "site"]


SEEDS = st.integers(0, 2**64)


@pytest.mark.slow
@settings(max_examples=400)
@given(SEEDS, st.sampled_from([3, 7, 16384]), st.sampled_from([0.0, 1 / 8, 1.0]))
def test_same_as_the_reference_path(seed: int, batch_lines: int, merge_at_most: float) -> None:
    """Chunks merged or read whole by the reference path (``MERGE_AT_MOST``)."""
    data, nprocs = trace_body(seed)
    with small_chunks(batch_lines), patch.object(scan_module, "MERGE_AT_MOST", merge_at_most):
        assert_same(data, nprocs)


@pytest.mark.parametrize("data", [
    b'{"rank":0,"seq":0,"kind":"final","t":-0}\n',
    b'{"rank":0,"seq":0,"kind":"final","t":1.0e0,"x":-0.0}\n',
    b'{"rank":0,"seq":0,"kind":"final","x":18446744073709551616}\n',
    b'{"rank":0,"seq":0,"kind":"wait","reqs":[1],"reqs":[2]}\n',
    b'\n  \n{"rank":0,"seq":0,"kind":"final","site":"a"}\n\n',
    # the key order of extras follows the first record of a kind and key count
    b'{"rank":0,"seq":0,"kind":"wait","reqs":[],"dest":2}\n'
    b'{"rank":0,"seq":1,"kind":"wait","dest":2,"reqs":[1]}\n',
    b'{"rank":0,"seq":0,"kind":"wait","reqs":[],"dest":2}\n'
    b'{"rank":0,"seq":1,"kind":"wait","dest":2,"reqs":[1]}\n'
    b'{"rank":0,"seq":2,"kind":"wait","x":2,"reqs":[1]}\n',
    b'{"rank":0,"seq":0,"kind":"wait","reqs":[],"dest":2}\n'
    b'{"rank":0,"seq":1,"kind":"wait","dest":2,"reqs":[1]}\n'
    b'{"rank":0,"seq":2,"kind":"wait","reqs":[1],"x":2}\n',
    b'{"rank":0,"seq":0,"kind":"wait","reqs":[],"dest":2}\n'
    b'{"rank":0,"seq":1,"kind":"wait","dest":"\\u0032","reqs":[1]}\n',
])
def test_cases(data: bytes) -> None:
    for merge_at_most in (0.0, 1.0):
        with patch.object(scan_module, "MERGE_AT_MOST", merge_at_most):
            assert_same(data, 3)
            assert_same(data * 40, 3)  # extract's grouped checks


@pytest.mark.slow
def test_every_field_of_every_kind() -> None:
    """Each field of each kind (and fields foreign to it), set in turn to every
    odd and nearly valid value, duplicated, or left out."""
    nprocs = 3
    for kind in [*EVENT_KINDS, "header", "bogus"]:
        rnd = Random(kind)
        fields = ["rank", "seq", "kind", *_NEEDS.get(kind, ()), "t", "site", "comm", "call"]
        base = {f: json.dumps(kind) if f == "kind" else _valid(rnd, kind, f, nprocs)
                for f in fields}
        if kind in ("send", "recv"):
            base["blocking"] = "false"
            base["req"] = "1"
        if kind == "consume":
            base["send"] = f"[{base['src']},2]"
        foreign = [x for x in _OPTIONAL if x not in base]
        for f in [*base, *foreign]:
            odd = ODD if f in base else ["[[1]]", '"\\u00e9"', "1e400", "-0", "1.0",
                                         "9223372036854775808", "18446744073709551616"]
            valid = _valid(rnd, kind, f, nprocs)
            for value in [*_near(f, nprocs), *odd, valid, None]:
                rec = {**base, f: value}
                if value is None:
                    del rec[f]
                text = ",".join(f'"{k}":{v}' for k, v in rec.items())
                assert_same(f"{{{text}}}\n".encode(), nprocs)
            text = ",".join(f'"{k}":{v}' for k, v in {**base, f: valid}.items())
            for value in (valid, _near(f, nprocs)[0]):  # a duplicate key, first or last
                assert_same(f'{{"{f}":{value},{text}}}\n'.encode(), nprocs)
                assert_same(f'{{{text},"{f}":{value}}}\n'.encode(), nprocs)


@pytest.mark.parametrize("value", VARS)
def test_state_vars(value: str) -> None:
    """A state record's vars, as a state's (checked) and as an extra of another kind."""
    for line in (f'{{"rank":0,"seq":0,"kind":"state","vars":{value}}}\n',
                 f'{{"rank":0,"seq":0,"kind":"final","vars":{value},"x":1}}\n'):
        assert_same(line.encode(), 1)
        assert_same(line.encode() * 120, 1)  # extract's grouped checks


def test_utf8_strings() -> None:
    """Raw UTF-8 in a site, an extra, an extra's name, a kind; well-formed or not."""
    for text in UTF8:
        for line in (b'{"rank":0,"seq":0,"kind":"final","site":%s}' % text,
                     b'{"rank":0,"seq":0,"kind":"coll","op":%s}' % text,
                     b'{"rank":0,"seq":0,"kind":"final","x":%s}' % text,
                     b'{"rank":0,"seq":0,"kind":"final",%s:1}' % text,
                     b'{"rank":0,"seq":0,"kind":%s}' % text):
            assert_same(line + b"\n", 1)
            assert_same((line + b"\n") * 120, 1)  # extract's grouped checks


@settings(max_examples=60)
@given(SEEDS, st.sampled_from([3, 16384]))
def test_same_without_validation(seed: int, batch_lines: int) -> None:
    """Without ``validate`` every line takes the Python path: same lines, chunks
    and results (records that ``extract`` cannot column without checks fail
    the same way on both paths)."""
    data, nprocs = trace_body(seed)
    with small_chunks(batch_lines):
        try:
            want = reference(data, nprocs, validate=False)
        except Exception as exc:  # unchecked bad records: both paths must fail alike
            with pytest.raises(type(exc)):
                scanned(data, nprocs, validate=False)
            return
        assert scanned(data, nprocs, validate=False) == want


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sample_trace(path: Path) -> None:
    with path.open("rb") as fh:
        header = json.loads(fh.readline())
        data = fh.read()
    nprocs = header.get("nprocs", 1)
    assert_same(data, nprocs)
    if data:
        with small_chunks(5):
            assert_same(data, nprocs)


MODEL_COLUMNS = ("c_rank", "c_seq", "c_kind", "c_t", "c_site", "c_comm", "c_peer", "c_tag",
                 "c_flags", "c_req", "c_ref", "c_partner", "c_size", "c_call", "c_lamport")


def _reference_model(path: Path) -> ModelManager:
    """The model of ``path`` built from the reference path's batches."""
    with path.open("rb") as fh:
        m = ModelManager(check_header(orjson.loads(fh.readline())))
        line = 2
        for lines in chunks(fh):
            chunk = parse_chunk(line, lines)
            m.add_columns(extract(chunk.records, m.nprocs, m.site_table, m.validate))
            assert chunk.bad_line is None
            line += len(lines)
    return m


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sample_trace_loads_to_the_same_model(path: Path) -> None:
    """``load_trace`` (the scanner, in this process and in the parser process)
    gives the model the reference path's batches give."""
    try:
        want = _reference_model(path)
        want.finish()
    except (ModelInputError, AssertionError):
        pytest.skip("not a loadable trace")
    for parallel in (False, True):
        got = load_trace(path, parallel=parallel)
        assert got.event_count == want.event_count
        for name in MODEL_COLUMNS:
            a, b = getattr(want, name).view(), getattr(got, name).view()
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
        assert got.sites == want.sites
        assert got.extras == want.extras


def _sample_lines() -> list[bytes]:
    out = []
    for path in TRACES:
        out += path.read_bytes().splitlines(keepends=True)[1:]
    return out


SAMPLE_LINES = _sample_lines()


@settings(max_examples=300)
@given(st.lists(st.tuples(st.sampled_from(SAMPLE_LINES), st.integers(0, 500),
                          st.sampled_from(["flip", "insert", "delete", "keep"]),
                          st.integers(0, 255)), min_size=1, max_size=20))
def test_mutated_sample_lines(edits: list[tuple[bytes, int, str, int]]) -> None:
    """Sample lines with a byte flipped, inserted or deleted: no crash, same result."""
    out = []
    for line, at, how, byte in edits:
        i = at % (len(line) + 1)
        if how == "flip" and i < len(line):
            line = line[:i] + bytes([byte]) + line[i + 1:]
        elif how == "insert":
            line = line[:i] + bytes([byte]) + line[i:]
        elif how == "delete":
            line = line[:i] + line[i + 1:]
        out.append(line)
    assert_same(b"".join(out), 4)


@settings(max_examples=200)
@given(st.binary(max_size=400), st.integers(1, 4))
def test_random_bytes(data: bytes, nprocs: int) -> None:
    assert_same(data, nprocs)


@given(st.integers(1, 40), st.integers(0, 3), st.sampled_from([3, 16384]))
def test_too_long_line(top: int, where: int, batch_lines: int) -> None:
    """A line longer than the limit ends the file, wherever it falls."""
    good = b'{"rank":0,"seq":0,"kind":"final"}\n'
    lines = [good, b'{"x":"' + b"y" * top + b'"}\n', good, b"z" * (top + 1)]
    data = b"".join(lines[where:] + lines[:where])
    with small_chunks(batch_lines, max_line_bytes=len(good) + top // 2):
        assert_same(data, 1)


def test_read_error_keeps_the_complete_lines(tmp_path: Path) -> None:
    """A compressed file cut short: the complete lines before the cut, then the
    error, whether a chunk is scanned, merged or read by the reference path."""
    good = b'{"rank":0,"seq":%d,"kind":"recv","src":0,"tag":1,"blocking":true}\n'
    odd = b'{"rank":0,"seq":%d,"kind":"recv","src":0,"tag":1,"blocking":true,"site":"\\u00e9"}\n'
    path = tmp_path / "t.jsonl.gz"
    data = b"".join((odd if i % 1000 == 0 else good) % i for i in range(30000))
    path.write_bytes(gzip.compress(data)[:-200])
    from mpvis.tracefile.compression import open_binary_read

    def collect(read: Any) -> tuple[list[tuple[int, int]], str]:
        got = []
        with open_binary_read(path) as fh:
            try:
                for item in read(fh):
                    got.append(item)
            except OSError as exc:
                return got, str(exc)
        raise AssertionError("no error")

    want = collect(lambda fh: ((len(lines), sum(map(len, lines))) for lines in chunks(fh)))
    assert sum(n for n, _ in want[0]) > 16384
    for merge_at_most in (0.0, 1.0):
        with patch.object(scan_module, "MERGE_AT_MOST", merge_at_most):
            got = collect(lambda fh: ((len(c.nums), c.nbytes)
                                      for c in scan_chunks(fh, 1, 1, True)))
        assert got == want
