"""The JSON report: the facts with their sources, in a versioned, documented envelope.

The layout is described in ``docs/facts-schema.md``. It is written with :func:`json.dumps`
(never through a styled console) with sorted keys, so it is stable to diff and to parse.
"""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING, Any

from cudadoctor.checks.findings import Finding
from cudadoctor.facts.codec import encode
from cudadoctor.facts.model import SCHEMA_VERSION, Facts
from cudadoctor.report.summary import categories

if TYPE_CHECKING:
    from cudadoctor.data import DataDates

__all__ = ["REPORT_KIND", "render_json", "report_document"]

REPORT_KIND = "cudadoctor-report"


def report_document(
    facts: Facts, findings: list[Finding] | None = None, *, exit_code: int = 0, dates: DataDates | None = None
) -> dict[str, Any]:
    """The report document; ``facts`` are expected to be redacted already (the CLI does it).

    ``dates``: how old the data the checks used is (:attr:`cudadoctor.data.CompatMatrix.dates`).
    """
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
        "compat_data_as_of": _iso(dates.compat if dates else None),
        "index_data_as_of": _iso(dates.index if dates else None),
    }


def _iso(date: datetime.date | None) -> str | None:
    return date.isoformat() if date else None


def render_json(
    facts: Facts, findings: list[Finding] | None = None, *, exit_code: int = 0, dates: DataDates | None = None
) -> str:
    document = report_document(facts, findings, exit_code=exit_code, dates=dates)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
