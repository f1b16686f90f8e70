"""The check engine and registry: injection, skips, crash isolation, selection, and the meta rules."""

from __future__ import annotations

import os
import re

import pytest

from cudadoctor.checks import ALL_CHECKS, resolve_codes, selected
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.derived import absent_reason
from cudadoctor.checks.engine import run_check, run_checks
from cudadoctor.checks.findings import Problem, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import UsageError
from cudadoctor.facts.model import Facts, HostInfo

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
    assert finding.status is Status.NOT_APPLICABLE and finding.reason == absent_reason("driver")


def test_optional_fact_absent_is_passed_as_default():
    seen = []
    run_check(_Probe(lambda d, t: seen.append(t)), _values())
    assert seen == [None]


def test_problem_not_applicable_and_could_not_judge():
    assert run_check(_Probe(lambda d, t: Problem("bad")), _values()).status is Status.FAIL
    assert run_check(_Probe(lambda d, t: Problem("meh", status=Status.WARN)), _values()).status is Status.WARN

    def absent(d, t):
        raise NotApplicable("no plugin installed")

    def unknown(d, t):
        raise CannotJudge("no data for release 9.9")

    finding = run_check(_Probe(absent), _values())
    assert (finding.status, finding.reason) == (Status.NOT_APPLICABLE, "no plugin installed")
    finding = run_check(_Probe(unknown), _values())
    assert (finding.status, finding.reason) == (Status.UNKNOWN, "no data for release 9.9")


def test_a_fact_whose_probe_crashed_makes_its_checks_unknown_not_absent():
    """A probe that crashed leaves its fact empty; a check needing it could not judge (never ok, never n/a)."""
    from cudadoctor.facts.model import ProbeError

    facts = Facts(
        host=HostInfo(os="Linux", arch="x86_64"),
        errors=(ProbeError("driver", "probe crashed: ValueError: 5000 digits", crashed=True),),
    )
    values = {"driver": None, "torch": None, "facts": facts}
    finding = run_check(_Probe(lambda d, t: None), values)
    assert finding.status is Status.UNKNOWN
    assert finding.reason == "could not read driver: probe crashed: ValueError: 5000 digits"
    # the same absence without a crash: the driver is simply not there
    values["facts"] = Facts(host=HostInfo(os="Linux", arch="x86_64"))
    assert run_check(_Probe(lambda d, t: None), values).status is Status.NOT_APPLICABLE


def test_a_crashing_check_is_one_error_finding():
    finding = run_check(_Probe(lambda d, t: 1 / 0), _values())
    assert finding.status is Status.ERROR
    assert "ZeroDivisionError" in finding.message and "please report" in finding.message


def test_every_check_runs_on_empty_facts_without_crashing():
    findings = run_checks(Facts(host=HostInfo(os="Linux", arch="x86_64")), CompatMatrix())
    assert [f.code for f in findings] == list(ALL_CHECKS)
    assert all(f.status in (Status.OK, Status.NOT_APPLICABLE) for f in findings), findings


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
        assert check.category in {
            *("host", "driver", "gpus", "health", "toolkit", "wheels", "cudnn", "nccl", "tensorrt", "python"),
            "requirements",
        }


def test_every_check_has_a_test():
    text = ""
    for directory, _dirs, files in os.walk(TESTS):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    text += handle.read()
    untested = [code for code in ALL_CHECKS if f'"{code}"' not in text and f"{code}()" not in text]
    assert untested == []


def test_parameters_read_from_code_are_inspects() -> None:
    """The engine's parameter reader gives what inspect.signature gives, for every check and odd signatures."""
    import functools
    import inspect

    from cudadoctor.checks import ALL_CHECKS
    from cudadoctor.checks.engine import _parameters

    def odd(a, b=1, *, c, d=2):  # type: ignore[no-untyped-def]
        return None

    def star(a, *rest, **more):  # type: ignore[no-untyped-def]
        return None

    # every registered subclass defines check(); the Check base declares none, its parameters being each check's own
    functions = [c.check for c in ALL_CHECKS.values()] + [odd, star, functools.partial(odd, 1)]  # type: ignore[attr-defined]
    for function in functions:
        expected = [(n, p.default) for n, p in inspect.signature(function).parameters.items()]
        assert _parameters(function) == expected, function
    assert _parameters(odd) == [("a", inspect.Parameter.empty), ("b", 1), ("c", inspect.Parameter.empty), ("d", 2)]
