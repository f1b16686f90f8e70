"""Every pip/uv command printed over the corpus works (issue #28): read back into the command model, it names
a version, build, index and Python compat data has, and pip would change something given what the case has
installed (cudadoctor.fixes.verify). A package whose releases the data does not list is could-not-verify: it
is allowed only when named in ``tests/unverifiable.py`` with its reason, and each case holding one is
reported as skipped with what could not be verified (``-rs`` output), never passed silently.

The accepted-fix comparison (``fixcheck.compare``) is held to each case's record: a case whose printed
install is not the accepted fix's records ``fix_equivalent`` (false, or true with the reason the printed
command is equivalent) and a ``fix_note``; a recorded false that the comparison now finds equivalent fails
until the record is updated. Where the accepted fix holds no pip/uv install (the comparison is None) the
record is a person's reading of the printed fix, kept with a digest of the text it was judged on
(``fix_judged``, tests/corpus/fixjudged.py): a printed fix that changes fails until it is judged again.
"""

from __future__ import annotations

import copy
import os

import pytest

from cudadoctor.checks.gate import WITHHELD
from cudadoctor.data import CompatMatrix
from tests.corpus.builder import case_paths, load_case
from tests.corpus.fixcheck import compare, counts, printed
from tests.corpus.fixjudged import digest, printed_fix
from tests.corpus.replay import replay
from tests.unverifiable import allowed

MATRIX = CompatMatrix()


def _id(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


@pytest.mark.parametrize("path", case_paths("cases") + case_paths("healthy"), ids=_id)
def test_printed_commands_verify(path: str) -> None:
    outcome = replay(load_case(path), MATRIX)
    withheld = [f.code for f in outcome.findings if f.remediation and WITHHELD in f.remediation.text]
    assert withheld == [], "a check built a command the gate had to withhold (cudadoctor/checks/gate.py)"
    commands = printed(outcome, MATRIX)
    unread = [(p.code, p.command, p.unread) for p in commands if p.verification is None]
    assert unread == [], "a printed pip/uv command the model cannot read cannot be verified"
    items = [(p, p.verification) for p in commands if p.verification is not None]
    problems = [(p.code, p.command, v.problems) for p, v in items if v.problems]
    assert problems == []
    unverified = sorted({u for _, v in items for u in v.unverified})
    assert [u for u in unverified if allowed(u) is None] == []
    if unverified:
        names = ", ".join(u.split(":", 1)[0] for u in unverified)
        pytest.skip(f"checked; could not verify (allowed by tests/unverifiable.py, with its reason): {names}")


@pytest.mark.parametrize("path", case_paths("cases"), ids=_id)
def test_fix_comparison_is_recorded(path: str) -> None:
    case = load_case(path)
    equivalent, why = compare(case, replay(case, MATRIX), MATRIX)
    recorded = case["case"].get("fix_equivalent")
    if recorded is not None:
        assert case["case"].get("fix_note"), "a recorded fix_equivalent says why in fix_note"
    if equivalent is None:  # nothing to compare: the judged record (the test below) holds it
        return
    if equivalent is False:
        assert recorded is not None, f"the printed fix is not the accepted one ({why}): record fix_equivalent"
    if recorded is False:
        assert equivalent is False, f"the printed fix is the accepted one now ({why}): update fix_equivalent"
        note = str(case["case"]["fix_note"])
        if note.startswith("not the accepted fix: "):  # a recorded mechanical reason stays the current one
            assert note == f"not the accepted fix: {why}"


@pytest.mark.parametrize("path", case_paths("cases"), ids=_id)
def test_judged_fix_is_recorded_against_its_text(path: str) -> None:
    case = load_case(path)
    outcome = replay(case, MATRIX)
    record = case["case"]
    if compare(case, outcome, MATRIX)[0] is not None:
        assert "fix_judged" not in record, "a mechanically compared fix is held by the comparison, not a digest"
        return
    assert isinstance(record.get("fix_equivalent"), bool), "no comparison: record fix_equivalent by reading the fix"
    assert record.get("fix_note"), "a recorded fix_equivalent says why in fix_note"
    text = printed_fix(case, outcome)
    if not outcome.diagnosed:
        assert record["fix_equivalent"] is False, "a case not diagnosed prints no fix equivalent to the accepted one"
    judged = digest(text)
    assert record.get("fix_judged") == judged, (
        f"the printed fix changed since fix_equivalent was judged: judge it again against the accepted fix "
        f"({record.get('fix')!r}), then set fix_judged = {judged!r}. It prints:\n{text}"
    )


def test_figure_counts_a_case_by_its_judged_record() -> None:
    path = next(p for p in case_paths("cases") if _id(p) == "xmake-4686-run-env-points-at-stubs")
    case = load_case(path)
    assert compare(case, replay(case, MATRIX), MATRIX)[0] is None, "a case with no pip fix to compare"
    assert counts(case, replay(case, MATRIX), MATRIX) == (True, "")
    judged_false = copy.deepcopy(case)
    judged_false["case"].update(fix_equivalent=False, fix_note="a different fix")
    assert counts(judged_false, replay(judged_false, MATRIX), MATRIX) == (False, "a different fix")
    unjudged = copy.deepcopy(case)
    del unjudged["case"]["fix_equivalent"], unjudged["case"]["fix_note"]
    assert counts(unjudged, replay(unjudged, MATRIX), MATRIX)[0] is False, "neither compared nor judged: not counted"
