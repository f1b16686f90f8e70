"""Judgements: what the checks concluded from the facts, with evidence and the fix.

Facts (:mod:`cudadoctor.facts.model`) say what is there; findings say whether it fits. A finding is
produced for every check that was evaluated, including the ones that passed, did not apply or could not judge, so
a JSON report shows exactly what was examined.
"""

from __future__ import annotations

import enum
from dataclasses import field

from cudadoctor.record import record

__all__ = ["Finding", "Problem", "Remediation", "Status", "worst"]


class Status(str, enum.Enum):
    """The outcome of one check.

    Three verdicts and two ways of not reaching one: *ok*, a problem (*warn* or *fail*), *not
    applicable* (what the check is about is not there: no vLLM installed) and *could not judge*
    (``unknown``: it is there, but a fact or the data to judge it is missing — the reason says which).
    An unknown is never counted as ok. ``error`` is a crash of the check itself, a bug in cudadoctor.
    """

    OK = "ok"  #: the condition holds
    WARN = "warn"  #: worth a look; does not stop the target from running
    FAIL = "fail"  #: the target will not run (or not correctly) as installed
    NOT_APPLICABLE = "not-applicable"  #: what the check judges is absent (e.g. no torch installed)
    UNKNOWN = "unknown"  #: could not judge: a fact could not be read, or the data does not cover it
    ERROR = "error"  #: the check itself crashed; a bug in cudadoctor

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def is_problem(self) -> bool:
        return self in (Status.WARN, Status.FAIL, Status.ERROR)


_RANK = {
    Status.OK: 0,
    Status.NOT_APPLICABLE: 0,
    Status.UNKNOWN: 1,
    Status.WARN: 2,
    Status.ERROR: 3,
    Status.FAIL: 4,
}


def worst(statuses: list[Status]) -> Status:
    return max(statuses, key=lambda s: s.rank, default=Status.OK)


@record
class Remediation:
    """How to fix a problem: words, then the exact commands or images."""

    text: str
    commands: tuple[str, ...] = ()
    images: tuple[str, ...] = ()


@record
class Problem:
    """What a check returns when its condition does not hold."""

    message: str  #: names the observed values, e.g. "driver 470.82.01 supports CUDA 11.4; torch needs 12.4"
    evidence: dict[str, str] = field(default_factory=dict)  #: fact name -> value and where it was read
    remediation: Remediation | None = None
    #: overrides the check's default severity for this problem (``warn`` or ``fail``)
    status: Status | None = None


@record
class Finding:
    """One check's outcome in a report."""

    code: str  #: stable, never reused: ``CD102``
    name: str  #: a short slug: ``compat-libcuda-older-than-driver``
    category: str  #: the report category it belongs to (``driver``, ``gpus``, ``python`` …)
    status: Status
    summary: str  #: the healthy condition, in the present tense
    message: str = ""  #: what is wrong (empty when ok or skipped)
    evidence: dict[str, str] = field(default_factory=dict)
    remediation: Remediation | None = None
    #: why there is no verdict: what is not there (not applicable) or what was missing (unknown)
    reason: str | None = None
