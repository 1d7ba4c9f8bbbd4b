"""Call sites of compiled programs: from return addresses to ``file:line``.

The PMPI trace library (``mpvis/instrument/pmpi``) names a call site by the
return address of the program's MPI call, as dladdr describes it, so that the
rank does no symbol lookup on its own path::

    @BASE:PC:FUNC+0xOFF:PATH      (BASE, PC in hex; PATH: the executable or library)

A record carries a site as a small integer and its batch names the ids it
uses first (``"sites": [[id, name], ...]``): a name crosses the wire once.
The collector turns each such name into the record's ``site`` (``file:line``
when the program was built with ``-g``, else ``FUNC+0xOFF``) and ``func``
(the function), once per distinct site, with binutils' ``addr2line``.
Without ``addr2line`` (or debug information) the site is ``FUNC+0xOFF``.
The program's files are read, never executed; ``addr2line`` gets the path
and an address as separate arguments, never through a shell.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["SiteSymbolizer", "is_raw_site"]

_ET_DYN = 3
_RAW_IN_TEXT = re.compile(r"@[0-9a-f]+:[0-9a-f]+:[^:\s]*:/\S+")
#: Seconds one addr2line call may take before its site falls back to FUNC+OFF.
ADDR2LINE_TIMEOUT = 10.0


def is_raw_site(site: object) -> bool:
    """Whether ``site`` is a raw address name of the PMPI library."""
    return isinstance(site, str) and site.startswith("@")


@functools.cache
def _is_position_independent(path: str) -> bool:
    """Whether the ELF file at ``path`` is ET_DYN (a PIE or a shared library)."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return True
    if len(head) < 18 or head[:4] != b"\x7fELF":
        return True
    little = head[5] == 1
    e_type = int.from_bytes(head[16:18], "little" if little else "big")
    return e_type == _ET_DYN


class SiteSymbolizer:
    """Maps raw site names to ``(site, func)``, caching each answer."""

    def __init__(self, addr2line: str | None = None) -> None:
        self._tool = addr2line if addr2line is not None else shutil.which("addr2line")
        self._cache: dict[str, tuple[str, str | None]] = {}
        self._ids: dict[int, dict[int, tuple[str, str | None]]] = {}  # rank -> id -> name

    def __call__(self, raw: str) -> tuple[str, str | None]:
        """``(site, func)`` for a raw name; other strings come back unchanged."""
        hit = self._cache.get(raw)
        if hit is None:
            hit = self._cache[raw] = self._resolve(raw)
        return hit

    def in_text(self, text: str) -> str:
        """``text`` with every raw site name in it (a crashed rank's detail) named."""
        if "@" not in text:
            return text
        return _RAW_IN_TEXT.sub(lambda m: self(m.group(0))[0], text)

    def name_sites(self, rank: int, names: object, records: list[dict[str, Any]]) -> None:
        """Put site names back into one batch of a rank's records, in place.

        ``names`` is the batch's ``sites`` list, ``[[id, raw name], ...]`` for
        the ids it uses first; a record's integer ``site`` becomes ``file:line``
        (or ``FUNC+0xOFF``) and ``func`` its function; the sites of ``final``'s
        ``requests`` are raw names.  An id never named is dropped (a bad peer).
        """
        table = self._ids.setdefault(rank, {})
        if isinstance(names, list):
            for item in names:
                if (isinstance(item, list) and len(item) == 2 and type(item[0]) is int
                        and isinstance(item[1], str)):
                    table[item[0]] = self(item[1])
        for rec in records:
            site = rec.get("site")
            if type(site) is int:
                named = table.get(site)
                if named is None:
                    del rec["site"]
                else:
                    rec["site"] = named[0]
                    if named[1]:
                        rec["func"] = named[1]
            self._name_requests(rec)

    def name_record(self, rec: dict[str, Any]) -> None:
        """Name the raw sites of one record in place: its ``site`` (a raw name,
        as a rank's spill file has it) becomes ``file:line`` and ``func`` its
        function, as :meth:`name_sites` does for ids; so do ``final``'s
        ``requests`` sites.  Records without raw names are left alone."""
        site = rec.get("site")
        if is_raw_site(site):
            assert isinstance(site, str)
            rec["site"], func = self(site)
            if func:
                rec["func"] = func
        self._name_requests(rec)

    def _name_requests(self, rec: dict[str, Any]) -> None:
        reqs = rec.get("requests") if rec.get("kind") == "final" else None
        if isinstance(reqs, list):
            for q in reqs:
                if isinstance(q, dict) and is_raw_site(q.get("site")):
                    q["site"] = self(q["site"])[0]

    def _resolve(self, raw: str) -> tuple[str, str | None]:
        parts = raw[1:].split(":", 3)
        if len(parts) != 4:
            return raw, None
        base_s, pc_s, where, path = parts
        func = where.rpartition("+")[0] or None
        func = None if func == "?" else func
        try:
            base, pc = int(base_s, 16), int(pc_s, 16)
        except ValueError:
            return raw, None
        fallback = (where if func else f"{Path(path).name}+{pc - base:#x}", func)
        if not self._tool or not path.startswith("/") or not Path(path).is_file():
            return fallback
        # A return address points after the call: look up the call itself.
        addr = (pc - base if _is_position_independent(path) else pc) - 1
        try:
            out = subprocess.run(
                [self._tool, "-f", "-C", "-e", path, f"{addr:#x}"],
                capture_output=True,
                text=True,
                timeout=ADDR2LINE_TIMEOUT,
                check=False,
            ).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            return fallback
        if len(out) < 2:
            return fallback
        name = out[0].strip()
        file_line = out[1].strip().split(" (discriminator")[0]
        file_name, _, line = file_line.rpartition(":")
        func = name if name and name != "??" else (func if func != "?" else None)
        if not file_name or file_name == "??" or not line.isdigit() or line == "0":
            return fallback[0], func
        return f"{file_name}:{line}", func
