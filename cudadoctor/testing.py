"""Helpers for testing checks: evaluate one check against facts, the way the engine would.

Used by cudadoctor's own tests and meant for anyone adding a check::

    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL
"""

from __future__ import annotations

from cudadoctor.checks import ALL_CHECKS
from cudadoctor.checks.engine import check_values
from cudadoctor.checks.engine import run_check as _run_check
from cudadoctor.checks.findings import Finding
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import Facts

__all__ = ["run_check"]


def run_check(code: str, facts: Facts, matrix: CompatMatrix | None = None) -> Finding:
    """The finding of check ``code`` for ``facts`` (with the shipped compat data by default)."""
    return _run_check(ALL_CHECKS[code], check_values(facts, matrix or CompatMatrix()), live=facts.mode == "live")
