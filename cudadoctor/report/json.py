"""The JSON report: the facts with their sources, in a versioned, documented envelope.

The layout is described in ``docs/facts-schema.md``. It is written with :func:`json.dumps`
(never through a styled console) with sorted keys, so it is stable to diff and to parse.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from cudadoctor.facts.codec import encode
from cudadoctor.facts.model import SCHEMA_VERSION
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.sanitize import json_text
from cudadoctor.report.summary import categories

__all__ = ["REPORT_KIND", "render_json", "report_document"]

REPORT_KIND = "cudadoctor-report"


def report_document(report: Report) -> dict[str, Any]:
    """The report document; its facts are expected to be redacted already (the application does it)."""
    counts = report.counts
    return {
        "kind": REPORT_KIND,
        "schema_version": SCHEMA_VERSION,
        "facts": encode(report.facts),
        "summary": [
            {"category": c.key, "title": c.title, "status": c.mark.value, "headline": c.headline}
            for c in categories(report.facts, report.findings)
        ],
        "findings": [encode(f) for f in report.findings],
        "counts": {
            "passed": counts.passed,
            "errors": counts.errors,
            "warnings": counts.warnings,
            "not_applicable": counts.not_applicable,
            "unknown": counts.unknown,
        },
        "exit_code": report.exit_code,
        "compat_data_as_of": _iso(report.compat_data_as_of),
        "index_data_as_of": _iso(report.index_data_as_of),
    }


def _iso(date: datetime.date | None) -> str | None:
    return date.isoformat() if date else None


def render_json(report: Report, options: RenderOptions) -> str:
    # json_text: a bidi override or C1 control in a fact stays an escape, never raw (issue #14).
    return json_text(json.dumps(report_document(report), indent=2, sort_keys=True, ensure_ascii=False)) + "\n"
