"""The fact registry: one declaration per fact, read by the collector, the engine and the report."""

from __future__ import annotations

import dataclasses

from packaging.version import Version

from cudadoctor.checks import ALL_CHECKS, _unknown_parameters
from cudadoctor.checks._base import Check
from cudadoctor.checks.derived import absent_reason, injectable_names, injectables
from cudadoctor.checks.findings import Problem
from cudadoctor.facts.model import EnvVar, Facts, HostInfo, InstalledPackage, Source, SourceKind
from cudadoctor.facts.registry import FACTS, category_of_error, fact_of_error
from cudadoctor.probes.registry import PROBES, probe_function, probed


def test_every_facts_field_is_declared_once():
    assert list(FACTS) == [f.name for f in dataclasses.fields(Facts)]


def test_every_probe_resolves_to_a_probe_function_of_the_probes():
    for name, spec in probed().items():
        probe = probe_function(spec)
        assert callable(probe), name
        assert probe.__module__.startswith("cudadoctor.probes.") and probe.__name__.startswith("probe_"), name


def test_every_probe_fills_a_declared_fact_in_declaration_order():
    assert set(PROBES) <= set(FACTS)
    assert list(probed()) == [name for name in FACTS if name in PROBES] == list(PROBES)


def test_a_check_naming_no_fact_is_refused():
    class _Typo(Check):
        """Placeholder.

        What it checks: nothing. Why it matters: nothing. How to fix: nothing.
        """

        name = "typo"

        def check(self, drivr: object) -> Problem | None:
            return None

    assert _unknown_parameters(_Typo) == ["_Typo: parameter 'drivr' names no registered fact"]


def test_every_registered_check_uses_only_registered_names():
    for check in ALL_CHECKS.values():
        assert _unknown_parameters(type(check)) == []


def test_derived_and_context_values_are_injected_by_name():
    torch = InstalledPackage("torch", Version("2.6.0"), "/site", Source(SourceKind.METADATA, "x"))
    facts = Facts(
        host=HostInfo(os="Linux", arch="x86_64", env=(EnvVar("LD_LIBRARY_PATH", "/a::/b"),)),
        packages={"torch": torch},
    )
    values = injectables(facts, {"matrix": "M", "requirements": ("torch",)})
    assert set(values) == set(injectable_names())
    assert values["torch"] is torch and values["vllm"] is None
    assert values["ld_library_path"] == ("/a", "/b")
    assert values["matrix"] == "M" and values["facts"] is facts


def test_absence_reasons_and_error_categories():
    assert absent_reason("driver") == "no NVIDIA driver found"
    assert absent_reason("torch") == "torch is not installed"
    assert absent_reason("requirements") == "no --require given"
    assert fact_of_error("toolkit") == "toolkits" and category_of_error("toolkit") == "toolkit"
    assert category_of_error("libraries") == "wheels"
    assert category_of_error("no-such-probe") == "host" and fact_of_error("no-such-probe") is None
