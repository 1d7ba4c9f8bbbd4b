"""Two rules of the code base that a reviewer would otherwise check by hand (issue 18).

* Types: mypy runs with ``strict = true`` on the whole package, with no
  per-module exemption, and every ``# type: ignore[code]`` says why on its
  line (``# type: ignore[misc]  # pyqtgraph has no type hints``).
* Events: outside the model (``mpvis/model``) and the Qt-free geometry
  (``mpvis/scene``), code reaches events through the model's classes
  (``model.event(rank, seq)``, ``Event``, ``Message``...) or, for a pass over
  many events at once, through the event store's columnar queries
  (:mod:`mpvis.model.event_arrays`), never by reading the raw ``c_*`` columns
  or the store's ``by_rank`` index; no module is exempt (docs/model.md).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mpvis"
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")
COLUMN_READ = re.compile(r"\.(c_[a-z]|by_rank\b)")


def _sources() -> list[Path]:
    return sorted(p for ext in ("*.py", "*.pyi") for p in PACKAGE.rglob(ext))


def test_mypy_is_strict_for_the_whole_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config.get("strict") is True
    assert config.get("packages") == ["mpvis"]
    exempt = [o for o in config.get("overrides", [])
              if any(str(mod).startswith("mpvis") for mod in _modules(o))]
    assert exempt == [], "no per-module exemption of mpvis from mypy's checks"


def _modules(override: dict[str, object]) -> list[object]:
    mods = override.get("module", [])
    return list(mods) if isinstance(mods, list) else [mods]


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    bare = []
    for path in _sources():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = IGNORE.search(line)
            if m is None:
                continue
            reason = m["rest"].strip().lstrip("#").strip()
            if not m["codes"] or not reason:
                bare.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert bare == [], "a type: ignore needs [code] and a '# reason':\n" + "\n".join(bare)


def test_events_are_reached_through_the_models_classes() -> None:
    reads = []
    for path in _sources():
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("model/", "scene/")):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if COLUMN_READ.search(line.split("#")[0]):
                reads.append(f"mpvis/{rel}:{i}: {line.strip()}")
    assert reads == [], ("read events through model.event(...)/Event/Message, or the "
                         "store's columnar queries (mpvis.model.event_arrays), or add a "
                         "query to the model:\n" + "\n".join(reads))
