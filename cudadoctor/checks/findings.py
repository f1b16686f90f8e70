"""Judgements: what the checks concluded from the facts, with evidence and the fix.

Facts (:mod:`cudadoctor.facts.model`) say what is there; findings say whether it fits. A finding is
produced for every check that was evaluated, including the ones that passed or were skipped, so
a JSON report shows exactly what was examined.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["Finding", "Problem", "Remediation", "Status", "worst"]


class Status(str, enum.Enum):
    """The outcome of one check, from best to worst (``skip`` and ``error`` aside)."""

    OK = "ok"  #: the condition holds
    WARN = "warn"  #: worth a look; does not stop the target from running
    FAIL = "fail"  #: the target will not run (or not correctly) as installed
    SKIP = "skip"  #: the facts the check needs are absent (e.g. no torch installed)
    ERROR = "error"  #: the check itself crashed; a bug in cudadoctor

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Status.OK: 0, Status.SKIP: 0, Status.WARN: 1, Status.ERROR: 2, Status.FAIL: 3}


def worst(statuses: list[Status]) -> Status:
    return max(statuses, key=lambda s: s.rank, default=Status.OK)


@dataclass(frozen=True)
class Remediation:
    """How to fix a problem: words, then the exact commands or images."""

    text: str
    commands: tuple[str, ...] = ()
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class Problem:
    """What a check returns when its condition does not hold."""

    message: str  #: names the observed values, e.g. "driver 470.82.01 supports CUDA 11.4; torch needs 12.4"
    evidence: dict[str, str] = field(default_factory=dict)  #: fact name -> value and where it was read
    remediation: Remediation | None = None
    #: overrides the check's default severity for this problem (``warn`` or ``fail``)
    status: Status | None = None


@dataclass(frozen=True)
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
    skip_reason: str | None = None
