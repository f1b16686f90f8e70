"""The fact registry: every value a probe fills, a check may ask for, or the report shows, by name.

Three kinds of names, one namespace:

* **probed facts**: the fields of :class:`~cudadoctor.facts.model.Facts`, each declared once with
  its :class:`~cudadoctor.facts.model.FactSpec` (probe, report category, why absent, schema doc);
* **derived facts**: :data:`cudadoctor.facts.derive.DERIVED`, computed once from the probed facts;
* **context**: what a run supplies besides facts (the whole ``facts``, the compat ``matrix``, the
  ``--require`` assertions).

The collector, the check engine, the report's categories and the schema document all read this
module; the check registry refuses, at import, a check whose parameter names none of these.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import fields
from types import ModuleType
from typing import Any

from cudadoctor.facts.derive import DERIVED
from cudadoctor.facts.model import Facts, FactSpec

__all__ = [
    "CONTEXT",
    "FACTS",
    "PROBE_ALIASES",
    "absent_reason",
    "category_of_error",
    "fact_of_error",
    "injectable_names",
    "injectables",
    "probe_function",
    "probed",
    "schema_table",
]

#: Probed facts by field name, in declaration (= display) order.
FACTS: dict[str, FactSpec] = {f.name: f.metadata["fact"] for f in fields(Facts)}

#: Values a run supplies besides the facts, and why a check needing one is not applicable without it.
CONTEXT: dict[str, str] = {"facts": "", "matrix": "", "requirements": "no --require given"}


#: Probe names in :class:`~cudadoctor.facts.model.ProbeError` that are not fact names (kept: they
#: appear in saved snapshots), and the fact each one is about.
PROBE_ALIASES: dict[str, str] = {"toolkit": "toolkits", "libraries": "cuda_wheels", "linkage": "loader"}


def fact_of_error(probe: str) -> str | None:
    """The fact a probe error is about (``toolkit`` → ``toolkits``); None for an unknown probe name."""
    name = PROBE_ALIASES.get(probe, probe)
    return name if name in FACTS else None


def category_of_error(probe: str) -> str:
    """The report category a probe error belongs to (``host`` when the probe is unknown)."""
    name = fact_of_error(probe)
    return FACTS[name].category if name is not None else "host"


def probed() -> dict[str, FactSpec]:
    """The facts a probe fills, in the order they are collected and shown."""
    return {name: spec for name, spec in FACTS.items() if spec.probe is not None}


#: Each probe module by name, imported when one of its probes runs (a run whose file probes answer from the memo
#: never imports the loader's view). Fixed names only: nothing in cudadoctor imports a module whose name is
#: computed (tests/security/test_static.py); a new probe module is added here.
_PROBE_MODULES: dict[str, Callable[[], ModuleType]] = {
    "cudadoctor.probes.driver": lambda: importlib.import_module("cudadoctor.probes.driver"),
    "cudadoctor.probes.gpus": lambda: importlib.import_module("cudadoctor.probes.gpus"),
    "cudadoctor.probes.health": lambda: importlib.import_module("cudadoctor.probes.health"),
    "cudadoctor.probes.host": lambda: importlib.import_module("cudadoctor.probes.host"),
    "cudadoctor.probes.libraries": lambda: importlib.import_module("cudadoctor.probes.libraries"),
    "cudadoctor.probes.linkage": lambda: importlib.import_module("cudadoctor.probes.linkage"),
    "cudadoctor.probes.origin": lambda: importlib.import_module("cudadoctor.probes.origin"),
    "cudadoctor.probes.packages": lambda: importlib.import_module("cudadoctor.probes.packages"),
    "cudadoctor.probes.toolkit": lambda: importlib.import_module("cudadoctor.probes.toolkit"),
}


def probe_function(spec: FactSpec) -> Callable[..., Any]:
    """The probe a spec names (``"cudadoctor.probes.module:function"``), imported on first use."""
    if spec.probe is None:
        raise ValueError("this fact has no probe")
    module, _, function = spec.probe.partition(":")
    probe: Callable[..., Any] = getattr(_PROBE_MODULES[module](), function)
    return probe


def injectable_names() -> frozenset[str]:
    """Every name a check's parameter may use."""
    return frozenset(FACTS) | frozenset(DERIVED) | frozenset(CONTEXT)


def absent_reason(name: str) -> str:
    """Why a check that needs ``name`` is not applicable when the value is absent."""
    if name in FACTS:
        return FACTS[name].absent
    if name in DERIVED:
        return DERIVED[name].absent
    return CONTEXT.get(name, "")


def injectables(facts: Facts, context: Mapping[str, Any]) -> dict[str, Any]:
    """Every value a check may ask for, by name: probed, derived and context; None or empty means absent."""
    values: dict[str, Any] = {name: getattr(facts, name) for name in FACTS}
    matrix: Any = context.get("matrix")  # the CompatMatrix of the run (None only in tests of facts alone)
    values.update({name: derived.compute(facts, matrix) for name, derived in DERIVED.items()})
    values.update(context)
    values["facts"] = facts
    return values


def schema_table() -> str:
    """The "Facts (top level)" table of docs/facts-schema.md, from the declarations (a test keeps them equal)."""
    rows = ["| field | type | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{name}` | {spec.type_doc} | {spec.doc} |" for name, spec in FACTS.items()]
    return "\n".join(rows) + "\n"
