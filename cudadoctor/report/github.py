"""GitHub Actions workflow commands: one annotation per problem, then a one-line summary.

Format: ``::error title=TITLE::MESSAGE`` / ``::warning …``, with ``%``, CR and LF escaped as the
workflow-command syntax requires (GitHub docs, "Workflow commands for GitHub Actions").
"""

from __future__ import annotations

from cudadoctor.checks.findings import Finding, Status

__all__ = ["render_github"]


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        if f.status in (Status.OK, Status.SKIP):
            continue
        level = "warning" if f.status is Status.WARN else "error"
        message = f.message
        if f.remediation:
            message += f"\nFix: {f.remediation.text}"
            message += "".join(f"\n  $ {c}" for c in f.remediation.commands)
        lines.append(f"::{level} title={_escape_property(f'cudadoctor {f.code} {f.name}')}::{_escape(message)}")
    bad = [f for f in findings if f.status not in (Status.OK, Status.SKIP)]
    lines.append(
        f"cudadoctor: {len(bad)} problem(s) in {len(findings)} checks"
        if bad
        else f"cudadoctor: no issues found ({len(findings)} checks)"
    )
    return "\n".join(lines) + "\n"
