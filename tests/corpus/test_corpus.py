"""The real-case corpus: every case is diagnosed (its expected codes at the expected severity, with a fix)
and every healthy configuration comes out without an error.

Cases not diagnosed yet are listed in ``missed.toml`` with the reason; such a case must stay missed
(a case that starts being diagnosed fails here until it is taken off the list), so the list is always
the exact set of known gaps. ``python -m tests.corpus.figure`` prints the figure per class.
"""

from __future__ import annotations

import os

import pytest
import tomllib

from cudadoctor.data import CompatMatrix
from tests.corpus.builder import CORPUS, case_paths, load_case
from tests.corpus.replay import replay

MATRIX = CompatMatrix()

with open(os.path.join(CORPUS, "missed.toml"), "rb") as _handle:
    MISSED: dict[str, str] = tomllib.load(_handle)["missed"]


def _id(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


@pytest.mark.parametrize("path", case_paths("cases"), ids=_id)
def test_case_is_diagnosed(path: str) -> None:
    case = load_case(path)
    outcome = replay(case, MATRIX)
    case_id = case["case"]["id"]
    if case_id in MISSED:
        assert not outcome.diagnosed, f"{case_id} is diagnosed now: take it off tests/corpus/missed.toml"
        pytest.xfail(MISSED[case_id])
    assert outcome.diagnosed, f"expected {outcome.missing}; reported {outcome.errors or 'no error'}"


@pytest.mark.parametrize("path", case_paths("healthy"), ids=_id)
def test_healthy_configuration_has_no_error(path: str) -> None:
    outcome = replay(load_case(path), MATRIX)
    assert outcome.errors == ()


@pytest.mark.parametrize("path", case_paths("cases") + case_paths("healthy"), ids=_id)
def test_case_records_its_provenance(path: str) -> None:
    case = load_case(path)
    meta = case["case"]
    assert all(meta.get(key) for key in ("id", "class", "project", "source", "date"))
    assert meta["id"] == _id(path)
    assert meta["source"].startswith("https://")
    if "/healthy/" in path:
        assert "expect" not in case
        return
    assert all(meta.get(key) for key in ("symptom", "root_cause", "fix", "confirmed_by"))
    assert meta["confirmed_by"] in ("maintainer", "reporter")
    assert case["expect"], "a broken case names what cudadoctor must report"


def test_missed_list_names_only_real_cases() -> None:
    ids = {_id(p) for p in case_paths("cases")}
    assert set(MISSED) <= ids


def test_at_most_ten_cases_per_class() -> None:
    classes: dict[str, int] = {}
    for path in case_paths("cases"):
        cls = load_case(path)["case"]["class"]
        classes[cls] = classes.get(cls, 0) + 1
    assert max(classes.values()) <= 10
