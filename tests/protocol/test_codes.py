"""Kind and flag codes are defined once (mpvis.protocol.codes) and the C recorders
use them through the generated header instrument/pmpi/mvcodes.h."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpvis.protocol import codes
from mpvis.protocol import records as R

INSTRUMENT = Path(codes.__file__).resolve().parent.parent / "instrument"


def test_the_committed_header_is_the_generated_one() -> None:
    # after an edit of codes.py: python -m mpvis.protocol.codes --write
    assert codes.HEADER.read_text(encoding="utf-8") == codes.c_header()


def test_every_recorder_kind_has_a_name_and_one_code() -> None:
    mvk = {k: v for k, v in vars(codes).items() if k.startswith("MVK_")}
    assert sorted(mvk.values()) == sorted(set(mvk.values()))
    assert set(codes.RECORDER_KIND_NAMES) == set(mvk.values())
    for code, name in codes.RECORDER_KIND_NAMES.items():
        assert name in R.KIND_CODE or code == codes.MVK_RECV_CONSUME
        assert mvk[f"MVK_{name.upper()}"] == code


def test_flags_are_distinct_bits_and_modes_follow_their_names() -> None:
    for prefix in ("MVC_", "MVF_"):
        bits = [v for k, v in vars(codes).items() if k.startswith(prefix)]
        assert all(b > 0 and b & (b - 1) == 0 for b in bits)
        assert len(set(bits)) == len(bits)
    wire = sum(v for k, v in vars(codes).items() if k.startswith("MVC_"))
    assert codes.MVA_CONT & wire == 0  # an argument flag is masked off the record
    for i, mode in enumerate(codes.SEND_MODES):
        assert getattr(codes, f"MVM_{mode.upper()}") == i
    assert (codes.F_BLOCKING, codes.F_SYNC) == (1, 2)
    assert codes.EVENT_KINDS is R.EVENT_KINDS and codes.KIND_CODE is R.KIND_CODE


def test_the_header_compiles_and_names_kinds_by_code(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "names.c"
    src.write_text(
        '#include <stdio.h>\n#include "mvcodes.h"\n'
        "static const char *kinds[] = MVK_NAMES;\nstatic const char *modes[] = MVM_NAMES;\n"
        "int main(void) {\n"
        "  for (unsigned i = 0; i < sizeof kinds / sizeof *kinds; i++)\n"
        "    printf(\"%s\\n\", kinds[i]);\n"
        '  printf("%s %d\\n", modes[MVM_READY], MVC_PAIR | MVF_CANCELLED);\n'
        "  return 0;\n}\n",
        encoding="utf-8",
    )
    exe = tmp_path / "names"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{codes.HEADER.parent}",
                    "-o", str(exe), str(src)], check=True, timeout=60)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True,
                         timeout=10).stdout.splitlines()
    for code, name in codes.RECORDER_KIND_NAMES.items():
        assert out[code] == name
    assert out[-1] == "ready 32"


def test_the_c_recorders_take_their_codes_from_the_header() -> None:
    # no number of their own: every kind/flag enum names the generated codes
    # (and the central process's C reader of their records)
    sources = [INSTRUMENT / "_crecorder.c", INSTRUMENT / "pmpi" / "mvp.h",
               INSTRUMENT.parent / "protocol" / "_cjournal.c"]
    for src in sources:
        text = src.read_text(encoding="utf-8")
        assert re.search(r'#include "(\.\./instrument/pmpi/|pmpi/)?mvcodes\.h"', text), src
        for body in re.findall(r"enum\s*\{([^}]*)\}", text):
            if re.search(r"\b(K|F|MVK|MVF|MVC|MVM)_[A-Z_]+\s*=\s*\d", body):
                raise AssertionError(f"{src.name} numbers its own codes: {body.strip()}")


def test_python_tests_flags_by_name() -> None:
    # a flag bit is tested through its name (codes.F_BLOCKING, MVC_SYNC...), not a number
    root = Path(codes.__file__).resolve().parent.parent
    pattern = re.compile(r"flags[^&\n]{0,20}&\s*\d")
    found = [f"{p.relative_to(root)}:{n}" for p in sorted(root.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert found == []
