"""Every corpus case's symptom, as written in its thread, goes through ``cudadoctor why`` on its replay.

why must never contradict check (the cause it names is one of check's problems), and it must name the case's
confirmed cause at least as often as check reports it: where why does not recognise the symptom it prints
check's report, so such a case counts as check counts it. ``python -m tests.corpus.figure --why`` prints the
figure per class.
"""

from __future__ import annotations

import os

import pytest

from cudadoctor.data import CompatMatrix
from tests.corpus.builder import case_paths, load_case
from tests.corpus.replay import replay
from tests.corpus.why_replay import WhyOutcome, why_on

MATRIX = CompatMatrix()


def _id(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


def _outcomes() -> list[tuple[str, WhyOutcome]]:
    found = []
    for path in case_paths("cases"):
        case = load_case(path)
        found.append((case["case"]["id"], why_on(case, replay(case, MATRIX), MATRIX)))
    return found


@pytest.fixture(scope="module")
def outcomes() -> list[tuple[str, WhyOutcome]]:
    return _outcomes()


def test_why_never_contradicts_check(outcomes: list[tuple[str, WhyOutcome]]) -> None:
    assert [case for case, w in outcomes if w.contradicts] == []


def test_why_names_the_cause_at_least_as_often_as_check(outcomes: list[tuple[str, WhyOutcome]]) -> None:
    why = sum(w.named_or_check for _, w in outcomes)
    check = sum(w.check_named for _, w in outcomes)
    assert why >= check
    # and case by case: where check reports the confirmed cause, why's answer is that cause (or check's report)
    assert [case for case, w in outcomes if w.check_named and not w.named_or_check] == []


def test_why_recognises_most_symptoms_as_written(outcomes: list[tuple[str, WhyOutcome]]) -> None:
    # The symptoms that are prose rather than an error message (a user's sentence) are the ones left
    # (tensorflow-65842's is the reporter's sentence about LD_LIBRARY_PATH: the thread quotes no error;
    # mintdrivers-111's and worker-vllm-246's are the reporters' sentences too).
    unrecognised = [case for case, w in outcomes if not w.recognised]
    assert len(unrecognised) <= 8, unrecognised
