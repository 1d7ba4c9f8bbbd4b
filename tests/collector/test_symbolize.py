"""Site names of compiled programs' records (mpvis.collector.symbolize), with no MPI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mpvis.collector.symbolize import SiteSymbolizer

PROGRAM = """
int helper(int x) { return x + 1; }
int main(void) { return helper(41) - 42; }
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("sym") / "prog"
    subprocess.run(["cc", "-g", "-O0", "-x", "c", "-", "-o", str(out)], input=PROGRAM,
                   text=True, check=True)
    return out


def _address_in_main(program: Path) -> int:
    """An address inside ``main`` (what a return address there would be), from nm."""
    out = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    main = next(int(line.split()[0], 16) for line in out.splitlines() if line.endswith(" main"))
    return main + 8


def test_ids_are_named_once_per_batch_and_unknown_ids_dropped(program: Path) -> None:
    if shutil.which("addr2line") is None or shutil.which("nm") is None:
        pytest.skip("no binutils")
    sym = SiteSymbolizer()
    pc = _address_in_main(program)
    raw = f"@0:{pc:x}:main+0x8:{program}"  # a PIE loaded at 0 has addresses = offsets
    first = [{"kind": "send", "site": 1}, {"kind": "recv", "site": 2}]
    sym.name_sites(0, [[1, raw]], first)
    assert first[0]["site"].endswith("<stdin>:3") and first[0]["func"] == "main"
    assert "site" not in first[1]  # id 2 was never named: dropped, not passed on as a number
    later = [{"kind": "send", "site": 1}]
    sym.name_sites(0, None, later)  # named in an earlier batch of the same rank
    assert later[0]["site"] == first[0]["site"]
    other_rank = [{"kind": "send", "site": 1}]
    sym.name_sites(1, None, other_rank)
    assert "site" not in other_rank[0]


def test_without_debug_information_a_site_is_function_and_offset(tmp_path: Path) -> None:
    sym = SiteSymbolizer(addr2line="")
    assert sym("@1000:1234:main+0x34:/nonexistent/prog") == ("main+0x34", "main")
    assert sym("@1000:1234:?+0x0:/nonexistent/prog") == ("prog+0x234", None)
    assert sym("not raw") == ("not raw", None)
    final = [{"kind": "final", "requests": [{"site": "@1000:1234:f+0x4:/x/y", "req": 3}, 7]}]
    sym.name_sites(0, [[1, "garbage"], "bad", [2]], final)
    assert final[0]["requests"][0]["site"] == "f+0x4"


def test_raw_sites_in_a_crash_detail_are_named() -> None:
    sym = SiteSymbolizer(addr2line="")
    text = "MPI_Abort(errorcode=7) at @1000:1234:main+0x34:/x/prog then @0:1:?+0x0:/y/z"
    assert sym.in_text(text) == "MPI_Abort(errorcode=7) at main+0x34 then z+0x1"
    assert sym.in_text("no site") == "no site"


def test_a_spilled_record_names_its_raw_site(program: Path) -> None:
    """A compiled rank's spill file carries raw site names (pmpi/spill.c):
    ``name_record`` names them as ``name_sites`` names ids, and leaves others."""
    if shutil.which("addr2line") is None or shutil.which("nm") is None:
        pytest.skip("no binutils")
    sym = SiteSymbolizer()
    pc = _address_in_main(program)
    raw = f"@0:{pc:x}:main+0x8:{program}"
    by_id = [{"kind": "send", "site": 1}]
    sym.name_sites(0, [[1, raw]], by_id)
    spilled = {"kind": "send", "site": raw}
    sym.name_record(spilled)
    assert spilled == by_id[0]
    final = {"kind": "final", "requests": [{"site": raw, "req": 3}, {"site": None}]}
    sym.name_record(final)
    assert final == {"kind": "final", "requests": [{"site": by_id[0]["site"], "req": 3},
                                                   {"site": None}]}
    named = {"kind": "recv", "site": "prog.c:4"}
    sym.name_record(named)
    assert named == {"kind": "recv", "site": "prog.c:4"}
