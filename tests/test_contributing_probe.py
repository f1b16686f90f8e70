"""CONTRIBUTING.md's "A probe (two edits)", followed for a toy fact: the probe named in
``cudadoctor.probes.registry.PROBES`` (edit 1) and the fact declared on ``Facts`` (edit 2) are all a new fact needs
for the collector to run the probe, the engine to inject the fact into a check's parameter of its name, the
report to put the probe's errors in the fact's category and the schema table to list it.

Edit 2 is a field of ``Facts`` in cudadoctor/facts/model.py; here a subclass of ``Facts`` with the one new field
stands in for the edited class (the registry reads the field's declaration exactly as it would from the model).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cudadoctor.checks import _unknown_parameters
from cudadoctor.checks._base import Check
from cudadoctor.checks.engine import check_values, run_check
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts import registry
from cudadoctor.facts.model import Facts, FactSpec, Source, SourceKind, fact
from cudadoctor.probes import collect
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.registry import PROBES, Probe
from cudadoctor.record import record
from tests.conftest import make_ctx

CONTRIBUTING = Path(__file__).resolve().parent.parent / "CONTRIBUTING.md"


@record
class Toy:
    """The toy fact: one value read from the examined environment, with where it was read."""

    colour: str
    source: Source


def probe_toy(ctx: ProbeContext) -> Toy | None:
    """Step 1's probe: reads only through ``ctx``, returns a record whose value carries its ``Source``."""
    colour = ctx.env.get("TOY_COLOUR")
    if colour == "unreadable":
        ctx.fail("toy", "TOY_COLOUR could not be read", source="TOY_COLOUR")
        return None
    return Toy(colour, Source(SourceKind.ENV, "TOY_COLOUR")) if colour else None


@record
class ToyFacts(Facts):
    """Step 2: the fact declared once, as a field of ``Facts`` carrying its ``FactSpec``."""

    toy: Toy | None = fact(FactSpec("gpus", "no toy in this environment", "Toy or null", "a toy"), default=None)


class _ToyCheck(Check):
    """The toy is not red.

    What it checks: the toy fact's colour. Why it matters: it shows a new fact reaching a check. How to fix: paint it.
    """

    name = "toy"

    def check(self, toy: Toy) -> Problem | None:
        if toy.colour == "red":
            return Problem(f"the toy is {toy.colour}", {"toy": str(toy.source)}, Remediation("paint it", ()))
        return None


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two edits, made for the test's duration."""
    monkeypatch.setitem(PROBES, "toy", Probe(lambda: probe_toy))  # edit 1 (probes/registry.py)
    declaration = next(f for f in dataclasses.fields(ToyFacts) if f.name == "toy")
    monkeypatch.setitem(registry.FACTS, "toy", declaration.metadata["fact"])  # edit 2, as the registry reads it
    monkeypatch.setattr(collect, "Facts", ToyFacts)


def _collect(tmp_path: Path, colour: str | None) -> ToyFacts:
    ctx = make_ctx(root=str(tmp_path), env={"TOY_COLOUR": colour} if colour else {})
    facts = collect.collect_facts(ctx)
    assert isinstance(facts, ToyFacts)
    return facts


def test_the_guide_names_the_two_places_this_test_edits() -> None:
    section = CONTRIBUTING.read_text(encoding="utf-8").split("### A probe (two edits)")[1].split("\n### ")[0]
    assert "`PROBES` in `cudadoctor/probes/registry.py`" in section
    assert "as a field of `Facts` in `facts/model.py`" in section


def test_without_the_edits_a_check_naming_the_fact_is_refused() -> None:
    assert _unknown_parameters(_ToyCheck) == ["_ToyCheck: parameter 'toy' names no registered fact"]


@pytest.mark.usefixtures("registered")
def test_the_collector_runs_the_new_probe_and_the_engine_injects_its_fact(tmp_path: Path) -> None:
    assert _unknown_parameters(_ToyCheck) == []
    facts = _collect(tmp_path, "red")
    assert facts.toy == Toy("red", Source(SourceKind.ENV, "TOY_COLOUR"))
    assert "toy" in facts.timings
    finding = run_check(_ToyCheck(), check_values(facts, CompatMatrix()))
    assert finding.status is Status.FAIL and finding.message == "the toy is red"
    assert finding.evidence == {"toy": "env: TOY_COLOUR"}
    assert run_check(_ToyCheck(), check_values(_collect(tmp_path, "blue"), CompatMatrix())).status is Status.OK


@pytest.mark.usefixtures("registered")
def test_an_absent_fact_makes_the_check_not_applicable_with_the_declared_reason(tmp_path: Path) -> None:
    finding = run_check(_ToyCheck(), check_values(_collect(tmp_path, None), CompatMatrix()))
    assert finding.status is Status.NOT_APPLICABLE and finding.reason == "no toy in this environment"


@pytest.mark.usefixtures("registered")
def test_the_probes_errors_go_to_the_facts_category_and_the_schema_lists_it(tmp_path: Path) -> None:
    facts = _collect(tmp_path, "unreadable")
    assert [e.probe for e in facts.errors if e.probe == "toy"] == ["toy"]
    assert registry.category_of_error("toy") == "gpus"
    assert "| `toy` | Toy or null | a toy |" in registry.schema_table()
