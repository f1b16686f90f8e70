"""CD9xx: what the user asked cudadoctor to assert (``--require``), and cudadoctor's own state."""

# CD9xx: cudadoctor
#   CD901  every --require assertion holds
#   CD902  the compatibility data is recent

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from cudadoctor.bounded import parse_requirement, parse_specifier
from cudadoctor.checks._base import Check
from cudadoctor.checks.driver import effective_cuda
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue
from cudadoctor.facts.model import Facts

__all__ = ["CD901", "CD902", "STALE_AFTER_DAYS", "Assertion", "parse_assertion"]

#: Names that are not packages: the CUDA version applications get, and the driver's version.
_SPECIAL = ("cuda", "driver")


@dataclass(frozen=True)
class Assertion:
    """One ``--require``: a package requirement, or ``cuda`` / ``driver`` with a version specifier."""

    text: str
    name: str
    specifier: SpecifierSet


def parse_assertion(text: str) -> Assertion:
    """``torch>=2.6``, ``vllm``, ``cuda>=12.4``, ``driver>=550``; InvalidValue when it is none of these."""
    raw = text.strip()
    # Not a package that merely starts so ("cuda-python", "driverkit").
    match = re.fullmatch(r"(cuda|driver)(?![A-Za-z0-9._-])\s*(.*)", raw, flags=re.IGNORECASE)
    if match:
        try:
            return Assertion(raw, match.group(1).lower(), parse_specifier(match.group(2)))
        except InvalidSpecifier:
            raise InvalidValue(text, f"{match.group(2)[:60]!r} is not a version specifier") from None
    try:
        req = parse_requirement(raw)
    except InvalidRequirement:
        raise InvalidValue(text, "expected a requirement such as 'torch>=2.6', 'cuda>=12.4' or 'vllm'") from None
    return Assertion(raw, req.name.lower().replace("_", "-").replace(".", "-"), req.specifier)


class CD901(Check):
    """Every --require assertion holds.

    What it checks: the assertions given with --require (or `require` in the project settings):
    a package that must be installed, optionally at a version (`torch>=2.6`, `vllm`), `cuda` (the
    CUDA version applications get from the driver, forward compatibility included) and `driver`.

    Why it matters: a pre-flight step in a Dockerfile or CI job states what the job needs; a build
    that silently lost torch, or a host whose driver is too old for the pinned CUDA, fails here
    instead of at run time.

    How to fix: install what is named, at a version the assertion accepts, or correct the assertion.
    """

    name = "requirements-met"
    category = "host"

    def check(self, requirements: tuple[str, ...], facts: Facts, matrix: CompatMatrix) -> Problem | None:
        unmet: list[str] = []
        evidence: dict[str, str] = {}
        commands: list[str] = []
        for assertion in (parse_assertion(r) for r in requirements):
            found: Version | None
            if assertion.name == "cuda":
                found = effective_cuda(facts.driver, matrix)[0] if facts.driver else None
                what = "the CUDA version the driver supports"
            elif assertion.name == "driver":
                found = facts.driver.version if facts.driver else None
                what = "the driver"
            else:
                pkg = facts.packages.get(assertion.name)
                found = pkg.version if pkg else None
                what = assertion.name
            ok = found is not None and (
                not assertion.specifier or assertion.specifier.contains(found, prereleases=True)
            )
            evidence[assertion.text] = f"{what}: {found if found is not None else 'not found'}"
            if not ok:
                unmet.append(f"{assertion.text} (found: {found if found is not None else 'nothing'})")
                if assertion.name not in _SPECIAL:
                    commands.append(f"python -m pip install '{assertion.text}'")
        if not unmet:
            return None
        return Problem(
            "required but not met: " + "; ".join(unmet),
            evidence,
            Remediation("Install what the assertion names, or fix the assertion.", tuple(commands)),
        )


#: Compatibility data older than this many days earns a warning: torch and vLLM release monthly.
STALE_AFTER_DAYS = 180


class CD902(Check):
    """The compatibility data is recent.

    What it checks: the as-of date of the compatibility data this cudadoctor ships (compat/*.toml), against
    today; a refreshed index cache (`cudadoctor update`) counts too, and a cache that cannot be read is
    reported (the bundled data is used instead).

    Why it matters: torch, vLLM and NVIDIA ship releases every month; old data cannot know a new release's
    pins, CUDA variants or drivers, so suggestions go stale and new releases look unknown.

    How to fix: run `cudadoctor update`, or upgrade cudadoctor.
    """

    name = "compat-data-recent"
    category = "host"
    severity = Status.WARN

    def check(self, matrix: CompatMatrix) -> Problem | None:
        import datetime

        oldest = matrix.curated_as_of
        index = matrix.index_data
        if matrix.index_warning:
            return Problem(
                f"the package-index cache cannot be used ({matrix.index_warning}); the bundled data "
                f"as of {oldest} is used instead",
                {"compat data": str(oldest)},
                Remediation("Rebuild the cache.", ("cudadoctor update",)),
            )
        newest_cache = index.updated if index is not None else None
        as_of = max(oldest, newest_cache) if newest_cache else oldest
        age = (datetime.date.today() - as_of).days
        if age <= STALE_AFTER_DAYS:
            return None
        return Problem(
            f"the compatibility data is {age} days old (as of {as_of}); releases since then are unknown to it",
            {"compat data": str(oldest), "index cache": str(newest_cache) if newest_cache else "none"},
            Remediation("Refresh it.", ("cudadoctor update",)),
        )
