"""A Markdown report for a bug report or a pull-request comment (always redacted by the CLI)."""

from __future__ import annotations

import json

from cudadoctor.facts.codec import encode
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.summary import Mark, categories

__all__ = ["render_markdown"]

_MARK = {Mark.OK: "✅", Mark.UNKNOWN: "❔", Mark.WARN: "⚠️", Mark.FAIL: "❌", Mark.ABSENT: "➖"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, options: RenderOptions) -> str:
    facts, findings = report.facts, report.findings
    out = [
        f"## cudadoctor report ({facts.tool_version}, {facts.mode})",
        "",
        "| | Component | Found |",
        "| --- | --- | --- |",
    ]
    for cat in categories(facts, findings):
        out.append(f"| {_MARK[cat.mark]} | {_cell(cat.title)} | {_cell(cat.headline)} |")
    problems = report.problems
    out += ["", "### Problems" if problems else "No problems found.", "", report.counts.phrase() + "."]
    for f in problems:
        out += ["", f"**{f.code} {f.name}** ({f.status.value}): {f.message}"]
        if f.remediation:
            out += ["", f"Fix: {f.remediation.text}"]
            if f.remediation.commands:
                out += ["", "```sh", *f.remediation.commands, "```"]
    if report.unknown:
        out += ["", "### Could not be judged", ""]
        out += [f"- **{f.code} {f.name}**: {_cell(f.reason or '')}" for f in report.unknown]
    out += [
        "",
        "<details><summary>All facts (JSON)</summary>",
        "",
        "```json",
        json.dumps(encode(facts), indent=1, sort_keys=True, ensure_ascii=False),
        "```",
        "",
        "</details>",
        "",
    ]
    return "\n".join(out)
