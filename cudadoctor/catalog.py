"""The checks as documentation: ``list-checks`` and ``explain``, in the formats each supports.

Pure functions from the check registry to text; the CLI offers exactly the formats listed here
(:data:`LIST_FORMATS`, :data:`EXPLAIN_FORMATS`) and rejects any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from cudadoctor.checks import ALL_CHECKS, resolve_codes
from cudadoctor.checks._base import Check
from cudadoctor.errors import UsageError

__all__ = ["EXPLAIN_FORMATS", "LIST_FORMATS", "check_table", "explain", "list_checks"]


def _row(check: Check) -> dict[str, str]:
    return {
        "code": check.code,
        "name": check.name,
        "category": check.category,
        "severity": check.severity.value,
        "summary": check.summary(),
    }


def _list_text() -> str:
    return "".join(f"{c.code}  {c.name:<40} {c.summary()}\n" for c in ALL_CHECKS.values())


def _list_json() -> str:
    return json.dumps({"checks": [_row(c) for c in ALL_CHECKS.values()]}, indent=2) + "\n"


def check_table() -> str:
    """The checks as a Markdown table (the README's; a test keeps them equal)."""
    rows = ["| code | name | a problem is | healthy condition |", "| --- | --- | --- | --- |"]
    for c in ALL_CHECKS.values():
        severity = "an error" if c.severity.value == "fail" else "a warning"
        rows.append(f"| {c.code} | `{c.name}` | {severity} | {c.summary()} |")
    return "\n".join(rows) + "\n"


#: ``list-checks --format`` choices.
LIST_FORMATS: dict[str, Callable[[], str]] = {"text": _list_text, "json": _list_json, "markdown": check_table}


def list_checks(fmt: str) -> str:
    return LIST_FORMATS[fmt]()


def _explain_text(check: Check) -> str:
    out = [f"{check.code} {check.name}", "", check.summary(), ""]
    for title, body in check.sections().items():
        out += [f"{title}:", f"  {body}", ""]
    severity = "an error" if check.severity.value == "fail" else "a warning"
    out.append(f"Category: {check.category}; a problem is {severity}.")
    return "\n".join(out) + "\n"


def _explain_json(check: Check) -> str:
    doc = {**_row(check), "sections": check.sections()}
    return json.dumps(doc, indent=2) + "\n"


def _explain_markdown(check: Check) -> str:
    out = [f"## {check.code} `{check.name}`", "", check.summary(), ""]
    for title, body in check.sections().items():
        out += [f"**{title}:** {body}", ""]
    severity = "an error" if check.severity.value == "fail" else "a warning"
    out.append(f"Category: {check.category}; a problem is {severity}.")
    return "\n".join(out) + "\n"


#: ``explain --format`` choices.
EXPLAIN_FORMATS: dict[str, Callable[[Check], str]] = {
    "text": _explain_text,
    "json": _explain_json,
    "markdown": _explain_markdown,
}


def explain(code: str, fmt: str) -> str:
    """``cudadoctor explain``: the check ``code`` names (a code, CD102, or a name) explained in ``fmt``."""
    matches = resolve_codes([code], "explain")
    if len(matches) != 1:
        raise UsageError(
            f"explain {code!r}: matches {len(matches)} checks ({', '.join(sorted(matches))}); give one code"
        )
    return EXPLAIN_FORMATS[fmt](ALL_CHECKS[matches.pop()])
