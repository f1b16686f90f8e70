"""GitHub Actions workflow commands: one annotation per problem, then a one-line summary.

Format: ``::error title=TITLE::MESSAGE`` / ``::warning …``, with ``%``, CR and LF escaped as the
workflow-command syntax requires (GitHub docs, "Workflow commands for GitHub Actions").
"""

from __future__ import annotations

from cudadoctor.checks.findings import Status
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.sanitize import terminal

__all__ = ["render_github"]


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report, options: RenderOptions) -> str:
    # A finding's text is made of facts from the examined machine (a file name holding ESC, BEL or a newline):
    # every control character is shown as an escape (sanitize.terminal), since a log viewer or a terminal running
    # the command acts on raw ones (issue #27).
    lines = []
    for f in report.findings:
        if f.status is Status.UNKNOWN:
            title = _escape_property(f"cudadoctor {f.code} {f.name}")
            reason = terminal(f"could not judge: {f.reason}")
            lines.append(f"::notice title={title}::{_escape(reason)}")
            continue
        if not f.status.is_problem:
            continue
        level = "warning" if f.status is Status.WARN else "error"
        message = terminal(f.message or "")
        if f.remediation:
            message += f"\nFix: {terminal(f.remediation.text)}"
            message += "".join(f"\n  $ {terminal(c)}" for c in f.remediation.commands)
        lines.append(f"::{level} title={_escape_property(f'cudadoctor {f.code} {f.name}')}::{_escape(message)}")
    counts = report.counts
    found = counts.problems_phrase() or "no issues"
    lines.append(f"cudadoctor: {found} found ({counts.phrase()})")
    return "\n".join(lines) + "\n"
