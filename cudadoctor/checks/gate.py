"""The last check before a finding is reported: a pip/uv command the compat data says cannot work is
withheld, and the remediation's text says which and why (principle 10: wrong advice is worse than none).

Only what the data and the facts state is a problem (a release, build, index or Python it lists otherwise, an
install pip would answer with "Requirement already satisfied", or one that breaks another installed package's
Requires-Dist pin, naming that package: :mod:`cudadoctor.fixes.pins`); what it cannot verify is kept. The corpus test
fails on any withheld command, so a builder that makes one is found there, not hidden.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from cudadoctor.checks.findings import Remediation

if TYPE_CHECKING:
    from cudadoctor.data import CompatMatrix
    from cudadoctor.facts.model import Facts

__all__ = ["WITHHELD", "withhold_unworkable"]

#: how the remediation's text introduces a withheld command
WITHHELD = "A command was withheld"


def withhold_unworkable(remediation: Remediation | None, matrix: CompatMatrix, facts: Facts) -> Remediation | None:
    """``remediation`` without the pip/uv commands that would not work on this machine."""
    if remediation is None or not any(" pip " in f" {line} " for line in remediation.commands):
        return remediation
    from cudadoctor.fixes.machine import verify_on
    from cudadoctor.fixes.parse import UnreadCommand, parse

    kept, withheld = [], []
    for line in remediation.commands:
        try:
            command = parse(line)
        except UnreadCommand:
            command = None
        problems = verify_on(command, matrix, facts).problems if command is not None else ()
        if problems:
            withheld.append(f"`{line}`: {'; '.join(problems)}")
        else:
            kept.append(line)
    if not withheld:
        return remediation
    why = f" {WITHHELD} ({', '.join(withheld)})."
    return replace(remediation, text=remediation.text + why, commands=tuple(kept))
