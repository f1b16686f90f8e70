"""``why``'s answer as text for people and as versioned JSON for tools.

Every string that came from the error text is shown through :func:`~cudadoctor.report.sanitize.terminal`
(controls and escapes made visible), so a log line cannot rewrite the terminal or forge a report line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cudadoctor.checks.findings import Finding
from cudadoctor.data.rows import XidEntry
from cudadoctor.facts.codec import encode
from cudadoctor.record import record
from cudadoctor.report.sanitize import json_text, terminal
from cudadoctor.why.decide import Answer, CauseState, Verdict
from cudadoctor.why.matching import error_lines
from cudadoctor.why.reading import ErrorText

__all__ = ["WHY_KIND", "WHY_SCHEMA", "Context", "render_json", "render_text"]

WHY_KIND = "cudadoctor-why"
#: The JSON layout's version: raised on any change a reader could notice.
WHY_SCHEMA = 1
#: Characters of a log line shown.
SHOWN_CHARS = 200


@record
class Context:
    """What the answer is shown with: the text read, the catalogue's URLs and the tables it links to."""

    text: ErrorText
    sources: Mapping[str, str]  #: source id -> URL
    xids: Mapping[int, XidEntry]
    cuda_errors: Mapping[int, str]  #: code -> "NAME: summary"


def _line(text: str) -> str:
    shown = text.strip()
    return terminal(shown[:SHOWN_CHARS] + ("…" if len(shown) > SHOWN_CHARS else ""))


def _xid(group: str | None, xids: Mapping[int, XidEntry]) -> str | None:
    if group is None or not group.isdigit():
        return None
    entry = xids.get(int(group))
    if entry is None:
        return f"Xid {int(group)} is not in cudadoctor's table (compat/xid.toml)"
    return f"Xid {entry.code} {entry.mnemonic}: {entry.description}; {entry.verdict}: {entry.action}"


def _finding_lines(finding: Finding, indent: str) -> list[str]:
    lines = [f"{indent}{finding.code} {finding.name} ({finding.status.value}): {terminal(finding.message)}"]
    if finding.remediation is not None:
        lines.append(f"{indent}  fix: {terminal(finding.remediation.text)}")
        lines.extend(f"{indent}    $ {terminal(c)}" for c in finding.remediation.commands)
        lines.extend(f"{indent}    image: {terminal(i)}" for i in finding.remediation.images)
    return lines


def _state_line(state: CauseState) -> str:
    codes = ", ".join(state.cause.checks) or "no check"
    if state.state == "open":
        return f"    ? {state.cause.title} [{codes}]: {state.why_open}"
    reasons: dict[str, list[str]] = {}
    for finding in state.findings:
        reasons.setdefault(finding.reason or "not applicable", []).append(finding.code)
    absent = "; ".join(f"{', '.join(codes)}: {reason}" for reason, codes in reasons.items())
    mark, word = {"found": ("✗", "found"), "ruled-out": ("✓", "ruled out")}.get(
        state.state, ("-", f"not there in these facts ({absent})")
    )
    return f"    {mark} {state.cause.title} [{codes}]: {word}"


def render_text(answer: Answer, context: Context) -> str:
    """The answer for a terminal; ``check``'s report follows it when the error was not recognised."""
    out = [f"Read {context.text.read_bytes} bytes from {terminal(context.text.origin)}."]
    out.extend(f"  note: {n}" for n in context.text.notes)
    if answer.verdict == Verdict.UNRECOGNISED:
        out.append("cudadoctor does not recognise this error (compat/error_messages.toml has no pattern for it).")
        shown = error_lines(context.text.lines)
        if shown:
            out.append("The last lines that read like an error:")
            out.extend(f"  line {n}: {_line(text)}" for n, text in shown)
        out.append("Here is what `cudadoctor check` finds on these facts:")
        return "\n".join(out) + "\n\n"
    for diagnosis in answer.diagnoses:
        match, message = diagnosis.match, diagnosis.match.message
        out.append("")
        out.append(f"Recognised: {message.title} [{message.id}, {message.library}]")
        out.extend(f"  line {n}: {_line(text)}" for n, text in match.lines)
        if match.count > len(match.lines):
            out.append(f"  … and {match.count - len(match.lines)} more line(s)")
        if message.cuda_error is not None and message.cuda_error in context.cuda_errors:
            out.append(f"  CUDA error {message.cuda_error}: {context.cuda_errors[message.cuda_error]}")
        if message.xid and (xid := _xid(match.group, context.xids)):
            out.append(f"  {xid}")
        out.extend(f"  source: {context.sources[s]}" for s in message.sources if s in context.sources)
        out.append("  Causes it comes from, judged on these facts:")
        out.extend(_state_line(s) for s in diagnosis.causes)
    out.append("")
    if answer.verdict == Verdict.CAUSE and answer.cause is not None and answer.family is not None:
        out.append(f"Cause: {answer.family.title}")
        out.extend(_finding_lines(answer.cause, "  "))
        if answer.also:
            out.append("Also found among these causes:")
            for finding in answer.also:
                out.extend(_finding_lines(finding, "  "))
    elif answer.verdict == Verdict.UNDECIDED:
        out.append("Not decided: these facts cannot tell which cause it is. Left open:")
        out.extend(f"  - {s.cause.title}" for s in answer.remaining)
        out.append(f"To decide: {answer.decide}")
    else:
        out.append(
            "Every cause cudadoctor knows for this error is ruled out by these facts. Were they gathered where the "
            "error happened (the same container, virtual environment and node)?"
        )
    if answer.other_problems:
        out.append("check also reports (none of them among this error's causes):")
        out.extend(f"  {f.code} {f.name}: {terminal(f.message)}" for f in answer.other_problems)
    return "\n".join(out) + "\n"


def _state_json(state: CauseState) -> dict[str, Any]:
    return {
        "id": state.cause.id,
        "title": state.cause.title,
        "checks": list(state.cause.checks),
        "state": state.state,
        "why_open": state.why_open,
        "decide": state.cause.decide,
        "findings": [{"code": f.code, "status": f.status.value} for f in state.findings],
    }


def answer_document(answer: Answer, context: Context, report: dict[str, Any]) -> dict[str, Any]:
    """The JSON document: the answer, the recognised messages and check's whole report (``report``)."""
    recognised = []
    for d in answer.diagnoses:
        m = d.match.message
        recognised.append({
            "id": m.id, "title": m.title, "library": m.library,
            "lines": [{"number": n, "text": text[:SHOWN_CHARS]} for n, text in d.match.lines],
            "count": d.match.count, "cuda_error": m.cuda_error,
            "xid": int(d.match.group) if m.xid and d.match.group and d.match.group.isdigit() else None,
            "sources": [context.sources[s] for s in m.sources if s in context.sources],
            "causes": [_state_json(s) for s in d.causes],
        })  # fmt: skip
    return {
        "kind": WHY_KIND,
        "schema_version": WHY_SCHEMA,
        "input": {
            "origin": context.text.origin,
            "read_bytes": context.text.read_bytes,
            "skipped_bytes": context.text.skipped_bytes,
            "lines": len(context.text.lines),
            "notes": list(context.text.notes),
        },
        "verdict": answer.verdict,
        "cause": encode(answer.cause) if answer.cause is not None else None,
        "cause_family": answer.family.id if answer.family is not None else None,
        "also": [encode(f) for f in answer.also],
        "remaining": [_state_json(s) for s in answer.remaining],
        "decide": answer.decide,
        "other_problems": [f.code for f in answer.other_problems],
        "recognised": recognised,
        "error_lines": [
            {"number": n, "text": text[:SHOWN_CHARS]}
            for n, text in (error_lines(context.text.lines) if answer.verdict == Verdict.UNRECOGNISED else ())
        ],
        "report": report,
        "exit_code": report.get("exit_code"),
    }


def render_json(answer: Answer, context: Context, report: dict[str, Any]) -> str:
    document = answer_document(answer, context, report)
    return json_text(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"
