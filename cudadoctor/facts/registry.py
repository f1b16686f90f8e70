"""The facts by name: each top-level fact, declared once on its :class:`~cudadoctor.facts.model.Facts` field.

The report's categories and the schema document read this module. What fills a fact is named in the layers above,
which read these declarations: the probe in :data:`cudadoctor.probes.registry.PROBES`, a value computed from
facts (a derived fact) in :data:`cudadoctor.checks.derived.DERIVED`, where the check engine also finds every name a
check's parameter may use.
"""

from __future__ import annotations

from dataclasses import fields

from cudadoctor.facts.model import Facts, FactSpec

__all__ = [
    "FACTS",
    "PROBE_ALIASES",
    "category_of_error",
    "fact_of_error",
    "schema_table",
]

#: Facts by field name, in declaration (= display) order.
FACTS: dict[str, FactSpec] = {f.name: f.metadata["fact"] for f in fields(Facts)}


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


def schema_table() -> str:
    """The "Facts (top level)" table of docs/facts-schema.md, from the declarations (a test keeps them equal)."""
    rows = ["| field | type | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{name}` | {spec.type_doc} | {spec.doc} |" for name, spec in FACTS.items()]
    return "\n".join(rows) + "\n"
