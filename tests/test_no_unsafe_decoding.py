"""No pickle, marshal, eval or exec of data from files or sockets (issue 15).

Every trace, record file and wire message is decoded by JSON (orjson) or
msgpack with extension types refused.  The one use of ``pickle`` is the traced
program's own messages: mpi4py pickles the program's objects, and
:mod:`mpvis.instrument.piggyback` wraps mpi4py's pickle to carry the send's
number; mpvis itself never unpickles anything it read.  This test fails when
any other module of the package names one of these decoders.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mpvis"
UNSAFE = re.compile(
    r"\b(pickle|cPickle|marshal|shelve|dill|cloudpickle|jsonpickle)\b"
    r"|(?<![\w.])(eval|exec|execfile|__import__)\s*\("
    r"|\byaml\.(load|unsafe_load)\b"
    r"|\bnumpy\.load\b|\bnp\.load\([^)]*allow_pickle\s*=\s*True"
)
#: Modules allowed to name pickle, and why.
ALLOWED = {
    "instrument/piggyback.py": "wraps mpi4py's pickle of the program's own messages",
}


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """Lines of ``path`` outside comments and docstrings (rough but strict enough)."""
    out = []
    in_doc = False
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        quotes = text.count('"""') + text.count("\'\'\'")
        if in_doc or text.startswith(('"""', "\'\'\'", "#")):
            if quotes % 2 == 1:
                in_doc = not in_doc
            continue
        out.append((i, line.split("  #")[0]))
    return out


def test_no_module_decodes_data_with_pickle_marshal_or_eval() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for i, line in _code_lines(path):
            if UNSAFE.search(line) and rel not in ALLOWED:
                found.append(f"mpvis/{rel}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_pattern_finds_what_it_must() -> None:
    for bad in ("x = pickle.loads(data)", "eval(text)", "import marshal",
                "yaml.load(fh)", "exec(code, env)", "np.load(f, allow_pickle=True)"):
        assert UNSAFE.search(bad), bad
    for fine in ("self.evaluate(x)", "model.exec_count", "orjson.loads(raw)",
                 "msgpack.unpackb(b)"):
        assert not UNSAFE.search(fine), fine
