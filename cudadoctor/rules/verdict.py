"""What a rule answers: ok, problem, could not judge (and what was missing), or not applicable.

Every compatibility rule returns a :class:`Verdict`. Callers decide what an answer means for them:
a check turns a problem into a finding, the planner into an exclusion; what each does with *could not
judge* is its own policy (the planner keeps a caveat or excludes, a check skips), but the verdict always
says which fact or which data was missing, so that policy can be made explicit everywhere.
"""

from __future__ import annotations

import enum
from typing import Generic, TypeVar

from cudadoctor.record import record

__all__ = ["Outcome", "Verdict", "cannot_judge", "fails", "fits", "not_applicable"]

T = TypeVar("T")
#: a verdict about a ``Verdict[GpuArch]`` is also a ``Verdict[object]`` (frozen, so covariant)
T_co = TypeVar("T_co", covariant=True)


class Outcome(enum.Enum):
    OK = "ok"
    PROBLEM = "problem"
    UNKNOWN = "could not judge"
    NOT_APPLICABLE = "not applicable"


@record
class Verdict(Generic[T_co]):
    """One rule's answer about one subject.

    ``rule`` is the rule's stable id (``driver-floor``, ``gpu-arch-list`` …, the ids ``suggest``
    prints). For a problem, ``observed`` is what was judged and ``required`` what the rule requires; for
    *could not judge*, ``missing`` names the fact or the data that was missing; for ok, ``basis`` says on
    what grounds (``minor-version compatibility`` …). ``detail`` is the rule's typed by-product that
    callers need for their messages (the driver a CUDA major needs, the target that covers a GPU …).
    ``inferred`` is set when the answer follows from how CUDA works rather than from a table that states
    it (the reason, e.g. "CUDA 10.1 predates compute capability 8.x (Ampere)"); callers label it *inferred*.
    """

    outcome: Outcome
    rule: str
    observed: str = ""
    required: str = ""
    missing: str = ""
    basis: str = ""
    detail: T_co | None = None
    inferred: str = ""

    @property
    def is_ok(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def is_problem(self) -> bool:
        return self.outcome is Outcome.PROBLEM

    @property
    def is_unknown(self) -> bool:
        return self.outcome is Outcome.UNKNOWN


def fits(rule: str, basis: str = "", detail: T | None = None, *, inferred: str = "") -> Verdict[T]:
    return Verdict(Outcome.OK, rule, basis=basis, detail=detail, inferred=inferred)


def fails(rule: str, observed: str, required: str, detail: T | None = None, *, inferred: str = "") -> Verdict[T]:
    return Verdict(Outcome.PROBLEM, rule, observed=observed, required=required, detail=detail, inferred=inferred)


def cannot_judge(rule: str, missing: str, observed: str = "", detail: T | None = None) -> Verdict[T]:
    return Verdict(Outcome.UNKNOWN, rule, observed=observed, missing=missing, detail=detail)


def not_applicable(rule: str, why: str) -> Verdict[T]:
    return Verdict(Outcome.NOT_APPLICABLE, rule, basis=why)
