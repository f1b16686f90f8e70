"""The check engine and registry: injection, skips, crash isolation, selection, and the meta rules."""

from __future__ import annotations

import os
import re

import pytest

from cudadoctor.checks import ALL_CHECKS, resolve_codes, selected
from cudadoctor.checks._base import Check, Skip
from cudadoctor.checks.engine import run_check, run_checks
from cudadoctor.checks.findings import Problem, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import UsageError
from cudadoctor.facts.model import Facts, HostInfo
from cudadoctor.facts.registry import absent_reason

TESTS = os.path.dirname(__file__)


class _Probe(Check):
    """Placeholder for engine tests.

    What it checks: nothing. Why it matters: nothing. How to fix: nothing.
    """

    name = "engine-test"

    def __init__(self, behaviour):
        self.behaviour = behaviour

    def check(self, driver, torch=None):  # type: ignore[override]
        return self.behaviour(driver, torch)


def _values(**overrides):
    values = {"driver": object(), "torch": None}
    values.update(overrides)
    return values


def test_required_fact_absent_skips_with_reason():
    finding = run_check(_Probe(lambda d, t: None), _values(driver=None))
    assert finding.status is Status.SKIP and finding.skip_reason == absent_reason("driver")


def test_optional_fact_absent_is_passed_as_default():
    seen = []
    run_check(_Probe(lambda d, t: seen.append(t)), _values())
    assert seen == [None]


def test_problem_and_explicit_skip():
    assert run_check(_Probe(lambda d, t: Problem("bad")), _values()).status is Status.FAIL
    assert run_check(_Probe(lambda d, t: Problem("meh", status=Status.WARN)), _values()).status is Status.WARN

    def skip(d, t):
        raise Skip("not today")

    finding = run_check(_Probe(skip), _values())
    assert (finding.status, finding.skip_reason) == (Status.SKIP, "not today")


def test_a_crashing_check_is_one_error_finding():
    finding = run_check(_Probe(lambda d, t: 1 / 0), _values())
    assert finding.status is Status.ERROR
    assert "ZeroDivisionError" in finding.message and "please report" in finding.message


def test_every_check_runs_on_empty_facts_without_crashing():
    findings = run_checks(Facts(host=HostInfo(os="Linux", arch="x86_64")), CompatMatrix())
    assert [f.code for f in findings] == list(ALL_CHECKS)
    assert all(f.status in (Status.OK, Status.SKIP) for f in findings), findings


def test_selection_by_code_prefix_and_name():
    assert resolve_codes(["CD1"], "--select") == {c for c in ALL_CHECKS if c.startswith("CD1")}
    assert resolve_codes(["no-stub-libcuda", "cd104"], "--select") == {"CD103", "CD104"}
    assert "CD701" not in selected([], ["CD7"])
    with pytest.raises(UsageError, match="--ignore 'CD999'"):
        selected([], ["CD999"])


def test_codes_are_well_formed_and_documented():
    for code, check in ALL_CHECKS.items():
        assert re.fullmatch(r"CD\d{3}", code)
        assert check.validate() == []
        assert check.category in {"host", "driver", "gpus", "toolkit", "wheels", "cudnn", "nccl", "tensorrt", "python"}


def test_every_check_has_a_test():
    text = ""
    for directory, _dirs, files in os.walk(TESTS):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    text += handle.read()
    untested = [code for code in ALL_CHECKS if f'"{code}"' not in text and f"{code}()" not in text]
    assert untested == []
