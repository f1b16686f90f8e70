"""The JSON report: the facts with their sources, in a versioned, documented envelope.

The layout is described in ``docs/facts-schema.md``. It is written with :func:`json.dumps`
(never through a styled console) with sorted keys, so it is stable to diff and to parse.
"""

from __future__ import annotations

import json
from typing import Any

from cudadoctor.codec import encode
from cudadoctor.model import SCHEMA_VERSION, Facts
from cudadoctor.report.summary import categories

__all__ = ["REPORT_KIND", "render_json", "report_document"]

REPORT_KIND = "cudadoctor-report"


def report_document(facts: Facts) -> dict[str, Any]:
    """The report document; ``facts`` are expected to be redacted already (the CLI does it)."""
    return {
        "kind": REPORT_KIND,
        "schema_version": SCHEMA_VERSION,
        "facts": encode(facts),
        "summary": [
            {"category": c.key, "title": c.title, "status": c.mark.value, "headline": c.headline}
            for c in categories(facts)
        ],
        "findings": [],
    }


def render_json(facts: Facts) -> str:
    return json.dumps(report_document(facts), indent=2, sort_keys=True, ensure_ascii=False)
