"""``cudadoctor why`` on a corpus case: the case's symptom, as written in its thread, judged on its replay.

Shared by the corpus test (tests/corpus/test_why_corpus.py) and ``python -m tests.corpus.figure --why``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.why.decide import Answer, Verdict, diagnose
from cudadoctor.why.matching import recognise
from cudadoctor.why.reading import from_argument
from tests.corpus.replay import Outcome


@dataclass(frozen=True)
class WhyOutcome:
    """What why answered for one case, next to what check reported."""

    answer: Answer
    expected: frozenset[str]  #: the codes the case expects
    check_named: bool  #: check reported every expected code (the corpus's own criterion)
    check_problems: frozenset[str]  #: codes of check's warn/fail findings

    @property
    def recognised(self) -> bool:
        return self.answer.verdict != Verdict.UNRECOGNISED

    @property
    def named(self) -> bool:
        """why's answer is the case's confirmed cause (one of its expected codes)."""
        return self.answer.cause is not None and self.answer.cause.code in self.expected

    @property
    def named_or_check(self) -> bool:
        """named, or the error was not recognised and the check report why prints names it."""
        return self.named or (not self.recognised and self.check_named)

    @property
    def contradicts(self) -> bool:
        """why named a cause that check does not report as a problem."""
        return self.answer.cause is not None and self.answer.cause.code not in self.check_problems


def why_on(case: dict[str, Any], outcome: Outcome, matrix: CompatMatrix) -> WhyOutcome:
    """Run why's recognition and decision on the case's symptom and its replayed findings."""
    text = from_argument(str(case["case"]["symptom"]))
    matches = recognise(text.lines, matrix.error_messages)
    answer = diagnose(matches, outcome.findings, matrix.error_causes, deep=False)
    problems = frozenset(f.code for f in outcome.findings if f.status in (Status.FAIL, Status.WARN))
    expected = frozenset(str(e["code"]) for e in case.get("expect", []))
    return WhyOutcome(answer, expected, outcome.diagnosed, problems)
