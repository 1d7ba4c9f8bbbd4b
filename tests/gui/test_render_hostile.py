"""``mpvis render`` on the hostile trace files of issue 15: a clean error naming
the file, or an image; never a traceback (it gave 22 on 47 bad files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tracefile.hostile import cases
from tests.tracefile.test_hostile import assert_clean, run_cli

#: The big cases are covered by the tracefile tests; rendering them adds nothing.
SMALL = sorted(n for n, data in cases().items() if len(data) < 1 << 20)


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_render_hostile_file(tmp_path: Path, name: str, qapp: object) -> None:
    path = tmp_path / name
    path.write_bytes(cases()[name])
    out = tmp_path / "out.png"
    rc, stdout, err = run_cli("render", str(path), "-o", str(out))
    assert_clean(path, rc, stdout, err)
    assert rc == 2 or out.stat().st_size > 0
