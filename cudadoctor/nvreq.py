"""``NVIDIA_REQUIRE_*``: the container requirement language of the NVIDIA Container Toolkit.

Semantics as libnvidia-container implements them
(https://github.com/NVIDIA/libnvidia-container/blob/main/src/cli/dsl.c): the
value is split on spaces into alternatives (OR); each alternative is split on commas into
conditions (AND); a condition is ``<property><op><value>`` with ops ``= != < <= > >=``; the
properties are ``cuda``, ``driver`` and ``arch`` (compared as dotted versions, trailing ``.0``
ignored) and ``brand`` (a name, ``=`` / ``!=`` only, case-insensitive). The requirement is
evaluated per visible GPU; without a GPU, ``arch`` and ``brand`` conditions count as met.

Evaluation here is three-valued: a fact cudadoctor does not know (an assumed driver's CUDA
version, an assumed GPU's brand) makes a condition *unknown*, and a requirement is reported as
unmet only when it is definitely unmet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cudadoctor.record import record

__all__ = ["Condition", "RequirementError", "brand_token", "evaluate", "parse_requirement"]

_CONDITION = re.compile(r"^(cuda|driver|arch|brand)(<=|>=|!=|=|<|>)(.+)$", re.IGNORECASE)
#: A dotted version: ASCII digits, few enough for int() (which refuses more than 4300).
_DOTTED = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})*")

#: NVML brand names (as cudadoctor records them) -> the tokens the requirement language uses.
_BRAND_TOKENS = {
    "unknown": "unknown", "quadro": "quadro", "tesla": "tesla", "nvs": "nvs", "grid": "grid",
    "geforce": "geforce", "titan": "titan", "nvidia vapps": "vapps", "nvidia vpc": "vpc", "nvidia vcs": "vcs",
    "nvidia vws": "vws", "nvidia cloud gaming": "cloudgaming", "quadro rtx": "quadrortx",
    "nvidia rtx": "nvidiartx", "nvidia": "nvidia",
}  # fmt: skip


class RequirementError(ValueError):
    """The value is not in the requirement language (libnvidia-container: "invalid expression")."""


@record
class Condition:
    """One comparison of a requirement (``cuda>=12.4``, ``brand=tesla``): the property, operator and value."""

    prop: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.prop}{self.op}{self.value}"


def parse_requirement(text: str) -> list[list[Condition]]:
    """Alternatives of conditions. Parse, e.g.::

    cuda>=13.0 brand=tesla,driver>=535,driver<536
    """
    alternatives: list[list[Condition]] = []
    for term in text.split():
        conditions = []
        for factor in term.split(","):
            match = _CONDITION.match(factor.strip())
            if not match:
                raise RequirementError(f"invalid condition {factor!r}")
            prop, op, value = match.group(1).lower(), match.group(2), match.group(3).strip()
            if prop == "brand" and op not in ("=", "!="):
                raise RequirementError(f"brand takes only = or !=: {factor!r}")
            if prop != "brand" and not _DOTTED.fullmatch(value):
                raise RequirementError(f"{prop} needs a dotted version: {factor!r}")
            conditions.append(Condition(prop, op, value))
        alternatives.append(conditions)
    return alternatives


def _parts(version: str) -> tuple[int, ...]:
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _compare(left: str, op: str, right: str) -> bool:
    a, b = _parts(left), _parts(right)
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def brand_token(brand: str | None) -> str | None:
    return _BRAND_TOKENS.get(brand.lower()) if brand else None


def _condition(cond: Condition, facts: Mapping[str, str | None]) -> bool | None:
    value = facts.get(cond.prop)
    if value is None:
        return None
    if cond.prop == "brand":
        same = value.lower() == cond.value.lower()
        return same if cond.op == "=" else not same
    if not _DOTTED.fullmatch(value):
        return None  # not a version (a snapshot may hold anything): unknown, as a missing fact
    return _compare(value, cond.op, cond.value)


def evaluate(alternatives: list[list[Condition]], facts: Mapping[str, str | None]) -> bool | None:
    """True (met), False (unmet) or None (depends on a fact that is not known).

    ``facts`` maps ``cuda`` (the driver's CUDA version, "13.0"), ``driver`` ("580.159.04"),
    ``arch`` ("9.0") and ``brand`` (a requirement-language token such as "tesla", or the tokens a GPU may
    have joined by ``|``: "tesla|nvidia") to values; for a
    machine without GPUs leave ``arch`` and ``brand`` out and pass ``no_gpu=True``-style facts
    with the key ``"_no_gpu"`` set, which makes those conditions count as met.
    """
    brands = (facts.get("brand") or "").split("|")
    if len(brands) > 1:
        # the GPU has one of these brands (from data, when NVML did not say): known only when all agree
        answers = {_evaluate(alternatives, {**facts, "brand": brand}) for brand in brands}
        return answers.pop() if len(answers) == 1 else None
    return _evaluate(alternatives, facts)


def _evaluate(alternatives: list[list[Condition]], facts: Mapping[str, str | None]) -> bool | None:
    no_gpu = bool(facts.get("_no_gpu"))
    unknown = False
    for conditions in alternatives:
        results: list[bool | None] = []
        for cond in conditions:
            if no_gpu and cond.prop in ("arch", "brand"):
                results.append(True)
            else:
                results.append(_condition(cond, facts))
        if all(r is True for r in results):
            return True
        if not any(r is False for r in results):
            unknown = True
    return None if unknown else False
