"""Message bodies: what the builders make passes the checks; wrong shapes are protocol errors."""

from __future__ import annotations

import pytest

from mpvis.protocol import messages as m
from mpvis.protocol.framing import ProtocolError


def test_builders_pass_their_checks() -> None:
    assert m.check_hello(m.hello_rank(3, "t", pid=1, host="h"))["rank"] == 3
    assert m.check_hello(m.hello_collector("c", "r", None, pid=1, host="h"))["run"] == "r"
    assert m.check_bye(m.bye_body(2, m.CRASHED, "boom"))["status"] == "crashed"
    env = m.envelope_body(4, [], header={"kind": "header"}, ends=[m.bye_body(1)], end={})
    assert m.check_envelope(env) is env
    assert "ends" not in m.envelope_body(0, [], ends=[])


@pytest.mark.parametrize(
    ("check", "body", "reason"),
    [
        (m.check_hello, {"role": "spy"}, "unknown role"),
        (m.check_hello, {"role": "rank", "rank": -1}, "'rank'"),
        (m.check_hello, {"role": "rank", "rank": 0, "token": 5}, "token"),
        (m.check_hello, {"role": "collector", "collector": "c"}, "'run'"),
        (m.check_rank_records, {"batch": 0, "records": {}}, "list"),
        (m.check_rank_records, {"batch": "0", "records": []}, "'batch'"),
        (m.check_bye, {"rank": 0, "status": "fine"}, "status"),
        (m.check_envelope, {"batch": 0, "records": [], "ends": [{"rank": 0}]}, "status"),
        (m.check_envelope, {"batch": 0, "records": [], "header": [1]}, "header"),
    ],
)
def test_wrong_shapes_are_protocol_errors(check, body, reason) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProtocolError, match=reason):
        check(body)
