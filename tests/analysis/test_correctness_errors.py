"""``mpvis check`` on traces shaped as the C trace library writes them: the ``errors``
list (collective mismatches, request leaks, lost messages), potential deadlocks,
hung sends, and correct programs that must produce no finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mpvis.cli.main import main
from mpvis.protocol.record_types import Record as Rec


def write(tmp_path: Path, nprocs: int, per_rank: list[list[Rec]]) -> Path:
    """A trace file: each rank's records numbered, every record its own MPI call."""
    lines: list[Rec] = [{"kind": "header", "format": "mpvis-trace", "version": 1,
                         "nprocs": nprocs, "program": "./a.out"}]
    for rank, recs in enumerate(per_rank):
        call = 0
        for seq, rec in enumerate(recs):
            rec = {"rank": rank, "seq": seq, **rec}
            if "call" not in rec and rec["kind"] != "final":
                rec["call"] = call
                call += 1
            lines.append(rec)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["check", str(path), "--json"])
    rep = json.loads(capsys.readouterr().out)
    main(["check", str(path)])
    return code, rep, capsys.readouterr().out


def coll(op: str, **kw: Any) -> list[Rec]:
    return [{"kind": "coll", "op": op, **kw}, {"kind": "coll_exit", "op": op}]


def send(dest: int, tag: int = 0, size: int = 4, **kw: Any) -> Rec:
    return {"kind": "send", "dest": dest, "tag": tag, "blocking": True, "sync": False,
            "mode": "standard", "size": size, **kw}


def recv(src: int, tag: int = 0, **kw: Any) -> Rec:
    return {"kind": "recv", "src": src, "tag": tag, "blocking": True, **kw}


def consume(recv_seq: int, src: int, tag: int = 0) -> Rec:
    return {"kind": "consume", "recv": recv_seq, "src": src, "tag": tag}  # C: no ``send``


FINAL: Rec = {"kind": "final"}


def test_reduction_op_mismatch_in_a_finished_run(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = {"count": 1, "dtype": "MPI_INT", "bytes": 4, "root": 0}
    path = write(tmp_path, 2, [
        [*coll("reduce", redop="MPI_SUM", site="r.c:9", **args), FINAL],
        [*coll("reduce", redop="MPI_MAX", site="r.c:11", **args), FINAL]])
    code, rep, text = check(path, capsys)
    assert code == 1 and rep["deadlocks"] == []
    (e,) = rep["errors"]
    assert e["kind"] == "collective_mismatch" and e["ranks"] == [0, 1]
    assert e["events"] == ["0:0", "1:0"] and e["completed"] is True
    assert "redop" in e["reason"] and "r.c:11" in e["reason"]
    assert "[collective_mismatch] ranks 0, 1:" in text


@pytest.mark.parametrize(("a", "b", "found"), [
    ({"count": 4, "dtype": "MPI_INT", "bytes": 16}, {"count": 1, "dtype": "derived", "bytes": 16},
     False),
    ({"count": 4, "dtype": "MPI_INT", "bytes": 16}, {"count": 4, "dtype": "MPI_FLOAT",
                                                     "bytes": 16}, True),
    ({"count": 4, "dtype": "MPI_INT", "bytes": 16}, {"count": 8, "dtype": "MPI_INT", "bytes": 32},
     True),
    ({"root": 0}, {"root": 1}, True),
    ({"count": 2, "dtype": "MPI_INT"}, {"count": 2, "dtype": "MPI_INT"}, False),
])
def test_bcast_signatures(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          a: Rec, b: Rec, found: bool) -> None:
    a.setdefault("root", 0)
    b.setdefault("root", 0)
    path = write(tmp_path, 2, [[*coll("bcast", **a), FINAL], [*coll("bcast", **b), FINAL]])
    code, rep, _ = check(path, capsys)
    assert [e["kind"] for e in rep["errors"]] == (["collective_mismatch"] if found else [])
    assert code == int(found)


def test_mismatch_the_ranks_hang_in_is_also_a_deadlock(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    path = write(tmp_path, 2, [[{"kind": "coll", "op": "bcast", "root": 0}],
                               [{"kind": "coll", "op": "bcast", "root": 1}]])
    _, rep, _ = check(path, capsys)
    assert [d["kind"] for d in rep["deadlocks"]] == ["collective"]
    assert [e["kind"] for e in rep["errors"]] == ["collective_mismatch"]


def test_request_leaks_from_final_requests(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    isend = {"kind": "send", "dest": 1, "tag": 3, "blocking": False, "sync": False, "req": 7,
             "site": "leak.c:12"}
    leaks = [{"req": 7, "call": "MPI_Isend", "site": "leak.c:12", "state": "active",
              "started": True},
             {"req": 9, "call": "MPI_Recv_init", "site": "leak.c:14", "state": "inactive",
              "started": False}]
    path = write(tmp_path, 2, [
        [isend, {**FINAL, "requests": leaks}],
        [recv(0, 3), consume(0, 0, 3), FINAL]])
    code, rep, text = check(path, capsys)
    assert code == 1
    got = [(e["kind"], e["ranks"], e["events"], e["state"]) for e in rep["errors"]]
    assert got == [("request_leak", [0], ["0:0"], "active"),
                   ("request_leak", [0], [], "inactive")]
    assert "never started nor freed" in rep["errors"][1]["reason"]
    assert "leak.c:12" in text


def test_request_leak_inferred_without_final_requests(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    irecv = {"kind": "recv", "src": 1, "tag": 0, "blocking": False, "req": 1}
    path = write(tmp_path, 2, [[irecv, FINAL], [FINAL]])
    _, rep, _ = check(path, capsys)
    assert [(e["kind"], e["events"]) for e in rep["errors"]] == [("request_leak", ["0:0"])]


def test_lost_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, 3, [
        [send(2, tag=5, site="lost.c:20"), send(1), FINAL],
        [recv(0), consume(0, 0), FINAL],
        [FINAL]])
    code, rep, text = check(path, capsys)
    assert code == 1 and rep["deadlocks"] == []
    (e,) = rep["errors"]
    assert (e["kind"], e["ranks"], e["events"], e["site"]) == (
        "lost_message", [0, 2], ["0:0"], "lost.c:20")
    assert "[lost_message] ranks 0, 2:" in text


def test_no_lost_message_when_a_rank_crashed(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, 2, [[send(1), FINAL], []])
    _, rep, _ = check(path, capsys)
    assert rep["errors"] == []


def test_send_send_cycle_that_finished_is_a_potential_deadlock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, 2, [
        [send(1, site="x.c:7"), recv(1), consume(1, 1), FINAL],
        [send(0, site="x.c:7"), recv(0), consume(1, 0), FINAL]])
    code, rep, text = check(path, capsys)
    assert code == 1 and rep["errors"] == []
    (d,) = rep["deadlocks"]
    assert d["kind"] == "p2p" and d["potential"] is True and d["sends"] == ["0:0", "1:0"]
    assert "[p2p, potential] ranks 0, 1:" in text


def test_send_send_cycle_that_hung_is_a_proven_deadlock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, 2, [[send(1, size=1 << 20)], [send(0, size=1 << 20)]])
    code, rep, _ = check(path, capsys)
    assert code == 1 and rep["errors"] == []
    (d,) = rep["deadlocks"]
    assert d["kind"] == "p2p" and not d.get("potential") and d["cycle"] == [0, 1, 0]
    assert [r["status"] for r in rep["ranks"]] == ["suspended", "suspended"]


def stencil(n: int, steps: int) -> list[list[Rec]]:
    """A 1-D halo exchange: Sendrecv steps, then Isend/Irecv/Waitall steps, an Allreduce."""
    ranks: list[list[Rec]] = [[] for _ in range(n)]
    for r in range(n):
        out = ranks[r]
        left, right = r - 1, r + 1
        for _ in range(steps):
            for dest, src in ((right, left), (left, right)):
                call = len(out)
                if 0 <= dest < n:
                    out.append({**send(dest, size=800), "call": call})
                if 0 <= src < n:
                    out.append({**recv(src), "call": call})
                    out.append({**consume(len(out) - 1, src), "call": call})
            reqs = []
            for nb in (left, right):
                if 0 <= nb < n:
                    req = 100 + len(out)
                    out.append({"kind": "recv", "src": nb, "tag": 1, "blocking": False, "req": req})
                    reqs.append((req, len(out) - 1, nb))
            for nb in (left, right):
                if 0 <= nb < n:
                    req = 100 + len(out)
                    out.append({"kind": "send", "dest": nb, "tag": 1, "blocking": False,
                                "sync": False, "req": req, "mode": "standard", "size": 800})
                    reqs.append((req, -1, nb))
            for _, seq, nb in reqs:
                if seq >= 0:
                    out.append(consume(seq, nb, 1))
            out.append({"kind": "wait", "reqs": [q for q, _, _ in reqs]})
        out.extend(coll("allreduce", count=1, dtype="MPI_DOUBLE", bytes=8, redop="MPI_SUM"))
        out.append(FINAL)
    return ranks


def test_correct_stencil_has_no_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    code, rep, text = check(write(tmp_path, 4, stencil(4, 3)), capsys)
    assert (rep["deadlocks"], rep["errors"]) == ([], [])
    assert code == 0, text
