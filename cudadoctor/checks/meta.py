"""CD9xx: what the user asked cudadoctor to assert (``--require``), and cudadoctor's own state."""

# CD9xx: cudadoctor
#   CD901  every --require assertion holds
#   CD902  the compatibility data is recent

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from cudadoctor.bounded import parse_specifier, requirement_or_none
from cudadoctor.checks._base import Check
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue
from cudadoctor.facts.model import Facts
from cudadoctor.facts.names import canonical_name
from cudadoctor.record import record
from cudadoctor.rules.driver import effective_cuda

__all__ = ["CD901", "CD902", "STALE_AFTER_DAYS", "Assertion", "parse_assertion"]

#: Names that are not packages: the CUDA version applications get, and the driver's version.
_SPECIAL = ("cuda", "driver")


@record
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
    # packaging.requirements (markers, tags, logging) costs ~7 ms to import: only --require needs it (imported there).
    req = requirement_or_none(raw)
    if req is None:
        raise InvalidValue(text, "expected a requirement such as 'torch>=2.6', 'cuda>=12.4' or 'vllm'")
    return Assertion(raw, canonical_name(req.name), req.specifier)


class CD901(Check):
    """Every --require assertion holds.

    What it checks: the assertions given with --require (or `require` in the project settings):
    a package that must be installed, optionally at a version (`torch>=2.6`, `vllm`), `cuda` (this
    machine runs code built for that CUDA version: the driver's own CUDA, older releases, and within a
    major minor-version compatibility and forward compatibility) and `driver`.

    Why it matters: a pre-flight step in a Dockerfile or CI job states what the job needs; a build
    that silently lost torch, or a host whose driver is too old for the pinned CUDA, fails here
    instead of at run time.

    How to fix: install what is named, at a version the assertion accepts, or correct the assertion.
    """

    name = "requirements-met"
    category = "requirements"

    def check(self, requirements: tuple[str, ...], facts: Facts, matrix: CompatMatrix) -> Problem | None:
        unmet: list[str] = []
        evidence: dict[str, str] = {}
        commands: list[str] = []
        notes: list[str] = []
        for assertion in (parse_assertion(r) for r in requirements):
            if assertion.name == "cuda":
                ok, evidence[assertion.text] = _cuda_holds(assertion, facts, matrix)
                if not ok:
                    unmet.append(f"{assertion.text} ({evidence[assertion.text]})")
                continue
            found, what = _found(assertion, facts)
            ok = found is not None and (
                not assertion.specifier or assertion.specifier.contains(found, prereleases=True)
            )
            evidence[assertion.text] = f"{what}: {found if found is not None else 'not found'}"
            if ok:
                continue
            unmet.append(f"{assertion.text} (found: {found if found is not None else 'nothing'})")
            if assertion.name != "driver":
                command, note = _install_advice(assertion, facts)
                commands += [command] if command else []
                notes += [note] if note else []
        if not unmet:
            return None
        return Problem(
            "required but not met: " + "; ".join(unmet),
            evidence,
            Remediation(" ".join(["Install what the assertion names, or fix the assertion.", *notes]), tuple(commands)),
        )


def _found(assertion: Assertion, facts: Facts) -> tuple[Version | None, str]:
    if assertion.name == "driver":
        return (facts.driver.version if facts.driver else None), "the driver"
    pkg = facts.packages.get(assertion.name)
    return (pkg.version if pkg else None), assertion.name


def _install_advice(assertion: Assertion, facts: Facts) -> tuple[str | None, str | None]:
    """The pip command for a package known to exist, else a note (a typo must not become a pip command).

    A name cudadoctor cannot vouch for is never put in a command: ``pip install 'torhc'`` would install
    whatever a typo-squatter published under that name (https://pypi.org/help/#typosquatting is PyPI's
    own warning). Known names are those cudadoctor reads on purpose and those installed here.
    """
    import difflib

    from cudadoctor.facts.names import INTERESTING_NAMES

    if assertion.name in INTERESTING_NAMES or assertion.name in facts.packages:
        return f"python -m pip install '{assertion.text}'", None
    known = sorted(INTERESTING_NAMES | set(facts.packages))
    close = difflib.get_close_matches(assertion.name, known, n=1, cutoff=0.75)
    if close:
        return None, f"{assertion.name!r} is not a package cudadoctor knows: did you mean {close[0]!r}?"
    return None, f"{assertion.name!r} is not a package cudadoctor knows: check its name on the index before installing."


def _cuda_holds(assertion: Assertion, facts: Facts, matrix: CompatMatrix) -> tuple[bool, str]:
    """Whether this machine runs code built for a CUDA version the assertion accepts, and the evidence.

    ``cuda>=12.4`` asks whether CUDA 12.4 code runs here, not whether the driver reports 12.4: within a
    major, minor-version compatibility runs 12.x applications on any driver above the major's floor
    (https://docs.nvidia.com/deploy/cuda-compatibility/#minor-version-compatibility), and older CUDA
    code runs on newer drivers. The same rule as CD111 (:func:`cudadoctor.rules.driver.driver_runs_cuda`).
    """
    from cudadoctor.rules.driver import driver_runs_cuda, forward_compat

    driver = facts.driver
    native = effective_cuda(driver, matrix)[0] if driver else None
    if driver is None or native is None:
        return False, "the CUDA version the driver supports: not found"
    seen = f"the driver supports CUDA {native}"
    if not assertion.specifier or assertion.specifier.contains(native, prereleases=True):
        return True, seen
    releases = sorted({r.version for r in matrix.cuda_releases}, key=lambda v: v.release)
    forward = forward_compat(driver)
    for cuda in (v for v in releases if assertion.specifier.contains(v, prereleases=True)):
        if cuda <= native:
            return True, f"{seen}; it runs CUDA {cuda} code"
        verdict = driver_runs_cuda(
            matrix, cuda.major, driver.version, windows=facts.host.os == "Windows", forward=forward
        )
        if verdict.is_ok:
            return True, f"{seen}; CUDA {cuda} code runs through {verdict.basis or 'minor-version compatibility'}"
    return False, f"{seen}; no CUDA version the assertion accepts runs on it"


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
