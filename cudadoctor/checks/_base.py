"""What a check is: a class whose name is its code and whose docstring is its documentation.

A check states a healthy condition (the docstring's first line), names the facts it needs as the
parameters of :meth:`Check.check`, and returns ``None`` when the condition holds or a
:class:`~cudadoctor.checks.findings.Problem` saying what is wrong, with evidence and the fix; it raises
:class:`NotApplicable` when its subject is not there and :class:`CannotJudge` when it lacks a fact or data
to judge it. The engine injects the facts by parameter name; a required fact that is absent makes the
check not applicable, or could-not-judge when the probe for that fact failed.

Docstring layout (``cudadoctor explain CODE`` prints it)::

    One line: the healthy condition.

    What it checks: ...

    Why it matters: ...

    How to fix: ...
"""

from __future__ import annotations

import re
from typing import ClassVar

from cudadoctor.checks.findings import Status

__all__ = ["SECTIONS", "CannotJudge", "Check", "NotApplicable"]

#: The sections every check's docstring has, in this order.
SECTIONS = ("What it checks", "Why it matters", "How to fix")

_CODE = re.compile(r"^CD\d{3}$")


class NotApplicable(Exception):
    """Raised by a check whose subject is not there (no plugin installed, no variable set): the reason says what."""


class CannotJudge(Exception):
    """Raised by a check that has its subject but not what it needs to judge it: the reason names the missing
    fact or data. Never an ok: the report counts it as *could not be judged*."""


class Check:
    """Base of every check. Subclasses are registered automatically by their class name (the code)."""

    #: a short slug for people and for ``--ignore`` (codes are the stable key)
    name: ClassVar[str] = ""
    #: the report category the check belongs to: driver, gpus, toolkit, wheels, cudnn, nccl, tensorrt,
    #: python, host
    category: ClassVar[str] = "host"
    #: what a problem means by default
    severity: ClassVar[Status] = Status.FAIL
    #: checks that only make sense on the machine itself (not for an image root or a snapshot of one)
    live_only: ClassVar[bool] = False

    @property
    def code(self) -> str:
        return type(self).__name__

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0].strip()

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's sections by title (``What it checks`` …)."""
        text = (cls.__doc__ or "").strip()
        found: dict[str, str] = {}
        titles = "|".join(re.escape(t) for t in SECTIONS)
        parts = re.split(rf"^\s*({titles}):", text, flags=re.MULTILINE)
        for title, body in zip(parts[1::2], parts[2::2], strict=False):
            found[title] = " ".join(line.strip() for line in body.strip().splitlines()).strip()
        return found

    @classmethod
    def validate(cls) -> list[str]:
        """Problems with the class as a check definition (run for every check by the registry)."""
        problems = []
        code = cls.__name__
        if not _CODE.match(code):
            problems.append(f"{code}: a check's class name must be its code, CD followed by three digits")
        if not cls.summary():
            problems.append(f"{code}: the docstring's first line (the healthy condition) is missing")
        missing = [s for s in SECTIONS if s not in cls.sections()]
        if missing:
            problems.append(f"{code}: docstring lacks sections {missing}")
        if not cls.name:
            problems.append(f"{code}: no name")
        if "check" not in vars(cls):
            problems.append(f"{code}: no check() method")
        return problems
