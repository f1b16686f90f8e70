"""A Markdown report for a bug report or a pull-request comment (always redacted by the CLI)."""

from __future__ import annotations

import json

from cudadoctor.facts.codec import encode
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.sanitize import code_fence, markdown, terminal
from cudadoctor.report.summary import Mark, categories

__all__ = ["render_markdown"]

_MARK = {Mark.OK: "✅", Mark.UNKNOWN: "❔", Mark.WARN: "⚠️", Mark.FAIL: "❌", Mark.ABSENT: "➖"}


def _cell(text: str) -> str:
    """Untrusted text in a paragraph or table cell (os-release, names, values): inert."""
    return markdown(text)


def _code(lines: list[str] | tuple[str, ...], info: str) -> list[str]:
    """A fenced code block no line of ``lines`` can close early."""
    fence = code_fence(lines)
    return [fence + info, *(terminal(line) for line in lines), fence]


def render_markdown(report: Report, options: RenderOptions) -> str:
    facts, findings = report.facts, report.findings
    out = [
        f"## cudadoctor report ({_cell(facts.tool_version)}, {_cell(facts.mode)})",
        "",
        "| | Component | Found |",
        "| --- | --- | --- |",
    ]
    for cat in categories(facts, findings):
        out.append(f"| {_MARK[cat.mark]} | {_cell(cat.title)} | {_cell(cat.headline)} |")
    problems = report.problems
    out += ["", "### Problems" if problems else "No problems found.", "", report.counts.phrase() + "."]
    for f in problems:
        out += ["", f"**{f.code} {f.name}** ({f.status.value}): {_cell(f.message)}"]
        if f.remediation:
            out += ["", f"Fix: {_cell(f.remediation.text)}"]
            if f.remediation.commands:
                out += ["", *_code(f.remediation.commands, "sh")]
    if report.unknown:
        out += ["", "### Could not be judged", ""]
        out += [f"- **{f.code} {f.name}**: {_cell(f.reason or '')}" for f in report.unknown]
    # ensure_ascii: every control character in a fact is a \u escape inside the block.
    document = json.dumps(encode(facts), indent=1, sort_keys=True, ensure_ascii=True)
    out += ["", "<details><summary>All facts (JSON)</summary>", "", *_code(document.splitlines(), "json")]
    out += ["", "</details>", ""]
    return "\n".join(out)
