"""The report: built once from the facts, the findings and the data's dates; renderers only format it.

A :class:`Report` is everything any output format says: the facts, every check's finding, the exit code,
how old the data is, and the counts (passed, problems, not applicable, could not be judged). Renderers are
pure functions ``Report -> str`` (:mod:`cudadoctor.report.render`), so a format can never disagree with
another about what was found.
"""

from __future__ import annotations

import datetime

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.facts.model import Facts
from cudadoctor.record import record

__all__ = ["FAIL_ON_LEVELS", "Counts", "Report"]

#: ``--fail-on`` levels and the statuses that fail the run at each (a report keeps its level: ``Report.fail_on``).
FAIL_ON_LEVELS: dict[str, frozenset[Status]] = {
    "error": frozenset({Status.FAIL, Status.ERROR}),
    "warning": frozenset({Status.FAIL, Status.ERROR, Status.WARN}),
    "never": frozenset(),
}


@record
class Counts:
    """How the checks ended."""

    passed: int
    errors: int  #: fail and error (a crashed check)
    warnings: int
    not_applicable: int
    unknown: int  #: could not be judged

    @property
    def total(self) -> int:
        return self.passed + self.errors + self.warnings + self.not_applicable + self.unknown

    def problems_phrase(self) -> str:
        """``1 error and 2 warnings``."""
        parts = [f"{self.errors} error{'s' * (self.errors != 1)}"] if self.errors else []
        parts += [f"{self.warnings} warning{'s' * (self.warnings != 1)}"] if self.warnings else []
        return " and ".join(parts)

    def phrase(self) -> str:
        """``9 passed · 17 not applicable · 3 could not be judged``: zero counts left out, passed always shown."""
        parts = [f"{self.passed} passed"]
        if self.not_applicable:
            parts.append(f"{self.not_applicable} not applicable")
        if self.unknown:
            parts.append(f"{self.unknown} could not be judged")
        return " · ".join(parts)


@record
class Report:
    """One run's outcome, as every format shows it."""

    facts: Facts
    findings: tuple[Finding, ...] = ()
    exit_code: int = 0
    #: ``meta.updated`` of the curated compatibility data (compat/)
    compat_data_as_of: datetime.date | None = None
    #: when ``cudadoctor update`` last read the package index; None when it never did
    index_data_as_of: datetime.date | None = None
    #: the ``--fail-on`` level the exit code was computed at (the scheduler formats judge at it too)
    fail_on: str = "error"

    @property
    def counts(self) -> Counts:
        statuses = [f.status for f in self.findings]
        return Counts(
            passed=statuses.count(Status.OK),
            errors=statuses.count(Status.FAIL) + statuses.count(Status.ERROR),
            warnings=statuses.count(Status.WARN),
            not_applicable=statuses.count(Status.NOT_APPLICABLE),
            unknown=statuses.count(Status.UNKNOWN),
        )

    @property
    def problems(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status.is_problem)

    @property
    def unknown(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status is Status.UNKNOWN)
