"""The printed fix a case's ``fix_equivalent`` record was judged on, where no comparison is mechanical.

Where the thread's accepted fix holds no pip/uv install (a driver upgrade, a reboot, ``--gpus all``, an
LD_LIBRARY_PATH change …) a person reads what cudadoctor prints for the expected codes and records in
case.toml whether it is the accepted fix (``fix_equivalent``), why (``fix_note``), and a digest of the text
judged (``fix_judged``). The corpus test holds the digest to the printed fix: when the printed fix changes,
the record must be judged again (issue #28).
"""

from __future__ import annotations

import hashlib
from typing import Any

from tests.corpus.replay import Outcome


def printed_fix(case: dict[str, Any], outcome: Outcome) -> str:
    """What the expected findings print as their fix: remediation text, commands and images, by code."""
    codes = {str(e["code"]) for e in case.get("expect", [])}
    lines = []
    for finding in sorted(outcome.findings, key=lambda f: f.code):
        if finding.code in codes and finding.remediation is not None:
            fix = finding.remediation
            lines += [f"{finding.code}: {fix.text}", *(f"  $ {c}" for c in fix.commands)]
            lines += [f"  image {i}" for i in fix.images]
    return "\n".join(lines)


def digest(text: str) -> str:
    """A short stable digest of a printed fix (12 hex digits of its SHA-256)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
