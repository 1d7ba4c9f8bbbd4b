"""Every rule of the trace format: a broken file is rejected with file, line and rule.

Each test runs twice: parsed in the loading process, and parsed by the parser
process of :mod:`mpvis.tracefile.parse_worker` (the errors must be the same).
The parser-process runs (a process started per test) are ``slow``: the fast
suite checks each rule once, in the loading process.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mpvis.tracefile.reader import TraceFileError, load_trace

H = {"kind": "header", "format": "mpvis-trace", "version": 1, "nprocs": 2}
SEND = {"rank": 0, "seq": 0, "kind": "send", "dest": 1, "tag": 1, "blocking": True, "sync": False}
RECV = {"rank": 1, "seq": 0, "kind": "recv", "src": -1, "tag": -1, "blocking": True}
CONS = {"rank": 1, "seq": 1, "kind": "consume", "recv": 0, "src": 0, "tag": 1, "send": [0, 0]}


@pytest.fixture(params=[False, pytest.param(True, marks=pytest.mark.slow)],
                ids=["in-process", "parser-process"])
def parallel(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def _w(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def ok_lines() -> list[object]:
    return [H, SEND, RECV, CONS]


def with_(rec: dict, **kw: object) -> dict:
    out = {**rec, **kw}
    return {k: v for k, v in out.items() if v is not _DROP}


_DROP = object()

# (name, lines, line number expected in the error, words expected in the rule)
CASES: list[tuple[str, list[object], int | None, str]] = [
    ("empty file", [""], 1, "empty"),
    ("not json", [H, "{rank: 0}"], 2, "not valid JSON"),
    ("not an object", [H, "[1, 2]"], 2, "JSON object"),
    ("no header", [SEND], 1, "header"),
    ("wrong format", [with_(H, format="other")], 1, "format"),
    ("bad version", [with_(H, version=2)], 1, "version"),
    ("nprocs missing", [with_(H, nprocs=_DROP)], 1, "nprocs"),
    ("nprocs zero", [with_(H, nprocs=0)], 1, "nprocs"),
    ("second header", [H, H], 2, "second header"),
    ("unknown kind", [H, with_(SEND, kind="teleport")], 2, "unknown event kind"),
    ("kind not a string", [H, with_(SEND, kind=["send"])], 2, "unknown event kind"),
    ("rank out of range", [H, with_(SEND, rank=2)], 2, "out of range"),
    ("rank negative", [H, with_(SEND, rank=-1)], 2, "rank"),
    ("rank not int", [H, with_(SEND, rank="0")], 2, "rank"),
    ("rank bool", [H, with_(SEND, rank=True)], 2, "rank"),
    ("seq missing", [H, with_(SEND, seq=_DROP)], 2, "seq"),
    ("seq gap", [H, with_(SEND, seq=1)], 2, "skips"),
    ("seq repeat", [H, SEND, SEND], 3, "repeats"),
    ("t not number", [H, with_(SEND, t="now")], 2, "'t'"),
    ("site not string", [H, with_(SEND, site=3)], 2, "'site'"),
    ("comm negative", [H, with_(SEND, comm=-2)], 2, "comm"),
    ("send dest wildcard", [H, with_(SEND, dest=-1)], 2, "dest"),
    ("send dest not a rank", [H, with_(SEND, dest=5)], 2, "dest"),
    ("send tag wildcard", [H, with_(SEND, tag=-1)], 2, "tag"),
    ("send blocking missing", [H, with_(SEND, blocking=_DROP)], 2, "blocking"),
    ("send sync not bool", [H, with_(SEND, sync=1)], 2, "sync"),
    ("isend without req", [H, with_(SEND, blocking=False)], 2, "req"),
    ("recv tag below -1", [H, SEND, with_(RECV, tag=-2)], 3, "tag"),
    ("recv src out of range", [H, with_(RECV, src=7)], 2, "src"),
    ("irecv without req", [H, with_(RECV, blocking=False)], 2, "req"),
    ("req live twice", [H, with_(SEND, blocking=False, req=1),
                        with_(SEND, seq=1, blocking=False, req=1)], 3, "already live"),
    ("consume src wildcard", [H, SEND, RECV, with_(CONS, src=-1)], 4, "src"),
    ("consume recv missing", [H, SEND, RECV, with_(CONS, recv=_DROP)], 4, "recv"),
    ("consume recv is not a recv", [H, SEND, with_(RECV, kind="final", src=_DROP, tag=_DROP,
                                                   blocking=_DROP), CONS], 4, "final"),
    ("consume recv later", [H, SEND, RECV, with_(CONS, recv=5)], 4, "earlier"),
    ("consume mismatches recv", [H, SEND, with_(RECV, src=0, tag=2), CONS], 4, "does not match"),
    ("consume not right after blocking recv",
     [H, SEND, RECV, {"rank": 1, "seq": 1, "kind": "state", "vars": {}},
      with_(CONS, seq=2, recv=0)], 5, "just after"),
    ("consume send names other rank", [H, SEND, RECV, with_(CONS, send=[1, 0])], 4, "names rank"),
    ("consume send malformed", [H, SEND, RECV, with_(CONS, send=[0])], 4, "[rank, seq]"),
    ("consume of a non-send", [H, with_(SEND, kind="final", dest=_DROP, tag=_DROP,
                                        blocking=_DROP, sync=_DROP), RECV, CONS], 4,
     "not a send"),
    ("tag differs between send and consume", [H, with_(SEND, tag=2), RECV, CONS], 4, "tag"),
    ("send consumed twice", [H, SEND, RECV, CONS, with_(RECV, seq=2),
                             with_(CONS, seq=3, recv=2)], 6, "consumed twice"),
    ("recv consumed twice", [H, SEND, with_(SEND, seq=1), with_(RECV, blocking=False, req=1),
                             with_(CONS), with_(CONS, seq=2, send=[0, 1])], 6, "consumed twice"),
    ("send never in trace", [H, {"rank": 0, "seq": 0, "kind": "final"}, RECV,
                             with_(CONS, send=[0, 4])], 4, "not in the trace"),
    ("no send to infer", [H, {"rank": 0, "seq": 0, "kind": "final"}, RECV,
                          with_(CONS, send=_DROP)], 4, "no send to match"),
    ("wait unknown req", [H, {"rank": 0, "seq": 0, "kind": "wait", "reqs": [3]}], 2, "not live"),
    ("wait reqs not list", [H, {"rank": 0, "seq": 0, "kind": "wait", "reqs": 3}], 2, "reqs"),
    ("wait irecv not consumed", [H, with_(RECV, blocking=False, req=4),
                                 {"rank": 1, "seq": 1, "kind": "wait", "reqs": [4]}], 3,
     "no consume"),
    ("coll without op", [H, {"rank": 0, "seq": 0, "kind": "coll"}], 2, "op"),
    ("coll_exit without coll", [H, {"rank": 0, "seq": 0, "kind": "coll_exit", "op": "barrier"}],
     2, "without a coll"),
    ("coll_exit op differs", [H, {"rank": 0, "seq": 0, "kind": "coll", "op": "barrier"},
                              {"rank": 0, "seq": 1, "kind": "coll_exit", "op": "bcast"}], 3,
     "differs"),
    ("lock name missing", [H, {"rank": 0, "seq": 0, "kind": "lock"}], 2, "lock"),
    ("state vars not object", [H, {"rank": 0, "seq": 0, "kind": "state", "vars": [1]}], 2, "vars"),
    ("state value not scalar", [H, {"rank": 0, "seq": 0, "kind": "state", "vars": {"x": [1]}}],
     2, "scalar"),
    ("event after final", [H, {"rank": 0, "seq": 0, "kind": "final"}, with_(SEND, seq=1)], 3,
     "after its 'final'"),
]


@pytest.mark.parametrize(("name", "lines", "line", "words"), CASES, ids=[c[0] for c in CASES])
def test_rule(  # noqa: PLR0917 (pytest passes parameters positionally)
    tmp_path: Path, name: str, lines: list[object], line: int | None, words: str,
    parallel: bool,
) -> None:
    path = _w(tmp_path / "t.jsonl", lines)
    with pytest.raises(TraceFileError) as info:
        load_trace(path, parallel=parallel)
    err = info.value
    assert err.line == line, str(err)
    assert words in err.rule, str(err)
    assert str(err).startswith(f"{path}:{line}: ")


def test_good_file_passes(tmp_path: Path, parallel: bool) -> None:
    m = load_trace(_w(tmp_path / "t.jsonl", ok_lines()), parallel=parallel)
    assert m.event_count == 3


def test_good_records_before_the_bad_one_are_kept(tmp_path: Path, parallel: bool) -> None:
    path = _w(tmp_path / "t.jsonl", [*ok_lines(), "garbage"])
    with pytest.raises(TraceFileError) as info:
        load_trace(path, parallel=parallel)
    assert info.value.line == 5
    path = _w(tmp_path / "t.jsonl", [*ok_lines(), with_(SEND, seq=5)])
    with pytest.raises(TraceFileError) as info:
        load_trace(path, parallel=parallel)
    assert info.value.model is not None and info.value.model.event_count == 3


def test_blank_lines_and_compression(tmp_path: Path, parallel: bool) -> None:
    text = "".join(json.dumps(x) + "\n\n" for x in ok_lines())
    (tmp_path / "t.jsonl").write_text(text)
    assert load_trace(tmp_path / "t.jsonl", parallel=parallel).event_count == 3
    with gzip.open(tmp_path / "t.jsonl.gz", "wt") as fh:
        fh.write(text)
    assert load_trace(tmp_path / "t.jsonl.gz", parallel=parallel).event_count == 3
    import zstandard

    (tmp_path / "t.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    assert load_trace(tmp_path / "t.jsonl.zst", parallel=parallel).event_count == 3


def test_truncated_gzip_and_bad_utf8(tmp_path: Path, parallel: bool) -> None:
    raw = gzip.compress(("".join(json.dumps(x) + "\n" for x in ok_lines()) * 50).encode())
    (tmp_path / "t.jsonl.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TraceFileError, match=r"truncated|corrupt"):
        load_trace(tmp_path / "t.jsonl.gz", parallel=parallel)
    (tmp_path / "u.jsonl").write_bytes(json.dumps(H).encode() + b"\n\xff\xfe\n")
    with pytest.raises(TraceFileError) as info:
        load_trace(tmp_path / "u.jsonl", parallel=parallel)
    assert info.value.line == 2


def test_missing_file(tmp_path: Path, parallel: bool) -> None:
    with pytest.raises(TraceFileError, match="cannot open"):
        load_trace(tmp_path / "nope.jsonl", parallel=parallel)


def test_inferred_send_by_non_overtaking(tmp_path: Path, parallel: bool) -> None:
    lines = [H, SEND, with_(SEND, seq=1), RECV, with_(CONS, send=_DROP),
             with_(RECV, seq=2), with_(CONS, seq=3, recv=2, send=_DROP)]
    m = load_trace(_w(tmp_path / "t.jsonl", lines), parallel=parallel)
    assert m.partner(1, 1) == (0, 0) and m.partner(1, 3) == (0, 1)
    # consumes first, sends later: the same matching
    lines = [H, RECV, with_(CONS, send=_DROP), with_(RECV, seq=2),
             with_(CONS, seq=3, recv=2, send=_DROP), SEND, with_(SEND, seq=1)]
    m = load_trace(_w(tmp_path / "t.jsonl", lines), parallel=parallel)
    assert m.partner(1, 1) == (0, 0) and m.partner(1, 3) == (0, 1)
