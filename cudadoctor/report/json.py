"""The JSON report: the facts with their sources, in a versioned, documented envelope.

The layout is described in ``docs/facts-schema.md``. It is written with :func:`json.dumps`
(never through a styled console) with sorted keys, so it is stable to diff and to parse.
"""

from __future__ import annotations

import json
from typing import Any

from cudadoctor.checks.findings import Finding
from cudadoctor.facts.codec import encode
from cudadoctor.facts.model import SCHEMA_VERSION, Facts
from cudadoctor.report.summary import categories

__all__ = ["REPORT_KIND", "render_json", "report_document"]

REPORT_KIND = "cudadoctor-report"


def report_document(facts: Facts, findings: list[Finding] | None = None, *, exit_code: int = 0) -> dict[str, Any]:
    """The report document; ``facts`` are expected to be redacted already (the CLI does it)."""
    return {
        "kind": REPORT_KIND,
        "schema_version": SCHEMA_VERSION,
        "facts": encode(facts),
        "summary": [
            {"category": c.key, "title": c.title, "status": c.mark.value, "headline": c.headline}
            for c in categories(facts, findings or [])
        ],
        "findings": [encode(f) for f in findings or []],
        "exit_code": exit_code,
        "compat_data_as_of": _as_of(),
        "index_data_as_of": _index_as_of(),
    }


def _as_of() -> str | None:
    from cudadoctor.matrix import data_as_of

    date = data_as_of()
    return date.isoformat() if date else None


def render_json(facts: Facts, findings: list[Finding] | None = None, *, exit_code: int = 0) -> str:
    document = report_document(facts, findings, exit_code=exit_code)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)


def _index_as_of() -> str | None:
    from cudadoctor.matrix import index_data_as_of

    date = index_data_as_of()
    return date.isoformat() if date else None
