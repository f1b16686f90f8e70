"""From the recognised messages and check's findings to one answer: the cause, the causes left, or none.

A cause is *found* when one of the checks its family names reported a problem (warn or fail); it is *ruled
out* when every such check judged it ok or found its subject absent; it stays *open* when a check could not
judge, was not run (``--select``/``--ignore``, ``--no-health``) or needs ``--deep``; a family that no check
decides is *open* too, with the one fact that would decide it. The cause named is always a finding of
``check``'s own report: ``why`` never says more than ``check`` found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from cudadoctor.checks import HEALTH_PREFIXES
from cudadoctor.checks.findings import Finding, Status
from cudadoctor.data.rows import ErrorCause
from cudadoctor.record import record
from cudadoctor.why.matching import Match

__all__ = ["Answer", "CauseState", "Diagnosis", "Verdict", "diagnose"]

_T = TypeVar("_T")

#: The run-time checks: not applicable without ``--deep`` means not looked at, not absent.
RUNTIME_PREFIX = "CD8"


class Verdict:
    CAUSE = "cause"  #: a problem finding among the message's causes
    UNDECIDED = "undecided"  #: none found; some cause could not be judged from these facts
    RULED_OUT = "ruled-out"  #: every cause judged and absent from these facts
    UNRECOGNISED = "unrecognised"  #: no catalogue entry matched


@record
class CauseState:
    """One family of causes of a recognised message, judged from the findings."""

    cause: ErrorCause
    state: str  #: ``found``, ``ruled-out`` (judged ok), ``absent`` (its subject is not there) or ``open``
    findings: tuple[Finding, ...]  #: the findings of its checks (only the problems when found)
    why_open: str | None = None  #: what kept it open


@record
class Diagnosis:
    """A recognised message and the state of each of its causes."""

    match: Match
    causes: tuple[CauseState, ...]


@record
class Answer:
    """What ``why`` says."""

    verdict: str
    diagnoses: tuple[Diagnosis, ...] = ()
    cause: Finding | None = None  #: the cause: a problem finding of check's report
    family: ErrorCause | None = None  #: the family it belongs to
    also: tuple[Finding, ...] = ()  #: other problem findings among the recognised messages' causes
    remaining: tuple[CauseState, ...] = ()  #: causes still open
    decide: str | None = None  #: the one fact that would decide between them
    other_problems: tuple[Finding, ...] = ()  #: check's problems that are none of the causes


def _state(cause: ErrorCause, by_code: Mapping[str, Finding], *, deep: bool, health: bool) -> CauseState:
    mine = [by_code[c] for c in cause.checks if c in by_code]
    problems = tuple(f for f in mine if f.status in (Status.FAIL, Status.WARN))
    if problems:
        return CauseState(cause, "found", problems)
    if not cause.checks:
        return CauseState(cause, "open", (), "no check decides it")
    missing = [c for c in cause.checks if c not in by_code]
    if missing:
        return CauseState(cause, "open", tuple(mine), f"not run in this report: {', '.join(missing)}")
    unknown = [f for f in mine if f.status in (Status.UNKNOWN, Status.ERROR)]
    if unknown:
        reason = "; ".join(f"{f.code}: {f.reason or f.status.value}" for f in unknown)
        return CauseState(cause, "open", tuple(mine), f"could not judge ({reason})")
    absent = [f.code for f in mine if f.status is Status.NOT_APPLICABLE]
    shallow = [c for c in absent if c.startswith(RUNTIME_PREFIX)] if not deep else []
    if shallow:
        return CauseState(cause, "open", tuple(mine), f"{', '.join(shallow)} run only with --deep")
    unexamined = [c for c in absent if c.startswith(HEALTH_PREFIXES)] if not health else []
    if unexamined:
        why = f"{', '.join(unexamined)}: GPU health not examined (--no-health, an image root, or a snapshot without it)"
        return CauseState(cause, "open", tuple(mine), why)
    if all(f.status is Status.NOT_APPLICABLE for f in mine):
        return CauseState(cause, "absent", tuple(mine))
    return CauseState(cause, "ruled-out", tuple(mine))


def diagnose(
    matches: Sequence[Match],
    findings: Sequence[Finding],
    causes: Mapping[str, ErrorCause],
    *,
    deep: bool,
    health: bool = True,
) -> Answer:
    """The answer for the recognised ``matches`` from check's ``findings``.

    ``deep``: the run-time checks ran (``--deep``); ``health``: the GPU health facts were gathered. Without them
    the checks of those families are not applicable because nothing looked, not because the subject is absent.
    """
    if not matches:
        return Answer(Verdict.UNRECOGNISED, other_problems=_problems(findings))
    by_code = {f.code: f for f in findings}
    judged = {c.id: _state(c, by_code, deep=deep, health=health) for c in causes.values()}
    diagnoses = tuple(Diagnosis(m, tuple(judged[c] for c in m.message.causes if c in judged)) for m in matches)
    states = [s for d in diagnoses for s in d.causes]
    found = _first_each([(f, s.cause) for s in states if s.state == "found" for f in s.findings], lambda p: p[0].code)
    named = {f.code for f, _ in found}
    other = tuple(f for f in _problems(findings) if f.code not in named)
    if found:
        first = next(((f, c) for f, c in found if f.status is Status.FAIL), found[0])
        also = tuple(f for f, _ in found if f.code != first[0].code)
        return Answer(Verdict.CAUSE, diagnoses, first[0], first[1], also, other_problems=other)
    remaining = tuple(_first_each([s for s in states if s.state == "open"], lambda s: s.cause.id))
    if remaining:
        return Answer(Verdict.UNDECIDED, diagnoses, remaining=remaining, decide=remaining[0].cause.decide,
                      other_problems=other)  # fmt: skip
    return Answer(Verdict.RULED_OUT, diagnoses, other_problems=other)


def _problems(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    return tuple(f for f in findings if f.status in (Status.FAIL, Status.WARN))


def _first_each(items: Iterable[_T], key: Callable[[_T], str]) -> list[_T]:
    """The first of the items of each ``key``, in order."""
    firsts: dict[str, _T] = {}
    for item in items:
        firsts.setdefault(key(item), item)
    return list(firsts.values())
