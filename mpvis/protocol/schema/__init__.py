"""JSON Schemas of the trace format (``record.schema.json``) and of the report
(``report.schema.json``), shipped as package data; ``docs/trace-format.md`` is
their prose.  :func:`load_schema` reads one (no validator needed at run time)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["load_schema"]


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``"record"`` or ``"report"`` as a dict."""
    if name not in ("record", "report"):
        raise ValueError(f"no schema named {name!r} (record, report)")
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
