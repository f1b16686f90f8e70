"""Whether a command breaks what another installed package requires: it installs a version of a distribution
that an installed package's Requires-Dist excludes (``nvidia-cudnn-cu12==9.*`` where torch 2.3.1 pins
``nvidia-cudnn-cu12==8.9.2.26``), or removes one that package needs.

pip resolves only what the command asks for and what that brings; the requirements of the packages already
installed are not constraints, so it replaces a pinned distribution and only warns afterwards ("pip's dependency
resolver does not currently take into account all the packages that are installed … torch 2.3.1 requires
nvidia-cudnn-cu12==8.9.2.26, but you have nvidia-cudnn-cu12 9.1.0.70 which is incompatible",
https://pip.pypa.io/en/stable/topics/dependency-resolution/). The package whose pin breaks then loads the wrong
library. A command that also moves the pinning package (installs another version of it, or removes it) is left
alone: the new version's requirements are not known here; so is a requirement not met before the command (an
unmet pin is CD401's finding: a command that leaves it unmet breaks nothing).

The Requires-Dist lines are those the probe kept (their environment markers evaluated for the target, the lines
of an extra left out: which extras were asked for at install time is not recorded). What the command leaves of a
distribution: the version an exact pin or wheel names; for a range, nothing when the installed version satisfies
it and nothing forces a reinstall (pip keeps it), else the newest release compat data lists within it (pip takes
the newest), else the range itself, judged only against an exact pin (``==8.9.2.26`` is broken by any range
that excludes it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.names import canonical_name
from cudadoctor.facts.requires import read_requirement
from cudadoctor.fixes.model import Command, Install, Pin, Steps, Uninstall
from cudadoctor.fixes.releases import known_versions
from cudadoctor.record import record

__all__ = ["Outcome", "broken_pins", "outcomes", "pin_spec", "pin_version"]

_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
#: a marker that names an extra: the line applies only when that extra was asked for
_EXTRA = re.compile(r";.*\bextra\s*==")


@record
class Outcome:
    """What a command leaves of one distribution: removed, one version, or some version within a range."""

    text: str  #: as the problem names it: ``9.1.0.70``, ``9.*``, ``removed``
    version: Version | None = None
    spec: SpecifierSet | None = None  #: a range pip picks within (no release list to say which)

    @property
    def removed(self) -> bool:
        return self.version is None and self.spec is None


def pin_spec(pin: Pin) -> SpecifierSet | None:
    """The pin's specifier as pip reads it; None for one it does not."""
    try:
        return SpecifierSet(pin.spec)
    except InvalidSpecifier:
        return None


def pin_version(pin: Pin) -> Version | None:
    """The version an exact pin or a wheel URL names; None for a range."""
    text = pin.version
    if text is None and pin.url is not None:
        parts = pin.url.rsplit("/", 1)[-1].split("-")
        text = parts[1] if len(parts) > 2 else None
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _installed(pin: Pin, step: Install, have: Mapping[str, Version], matrix: CompatMatrix) -> Outcome | None:
    """What one install pin leaves; None when pip keeps what is installed (or the pin says nothing it reads)."""
    version = pin_version(pin)
    if version is not None:
        return Outcome(str(version), version)
    spec = pin_spec(pin)
    if spec is None:
        return None
    current = have.get(canonical_name(pin.name))
    if current is not None and spec.contains(current, prereleases=True) and not (step.upgrade or step.force_reinstall):
        return None
    known = [v for v in known_versions(matrix, pin.name) or () if spec.contains(v)]
    if known:
        newest = max(known)
        return Outcome(f"{newest}, the newest release of {pin.spec or 'it'} compat data lists", newest)
    return Outcome(pin.spec or "its newest release", spec=spec)


def outcomes(command: Command, installed: Mapping[str, Version], matrix: CompatMatrix) -> dict[str, Outcome]:
    """canonical name -> what ``command`` leaves of each distribution it moves (steps in order: an uninstall
    followed by an install of the same name is that install)."""
    have = dict(installed)
    moved: dict[str, Outcome] = {}
    for step in command.steps if isinstance(command, Steps) else (command,):
        if isinstance(step, Uninstall):
            for name in step.names:
                moved[canonical_name(name)] = Outcome("removed")
                have.pop(canonical_name(name), None)
            continue
        for pin in step.pins:
            name = canonical_name(pin.name)
            found = _installed(pin, step, have, matrix)
            if found is not None:
                moved[name] = found
                if found.version is not None:
                    have[name] = found.version
    return moved


def _exact_versions(spec: SpecifierSet) -> list[Version]:
    """The versions an exact clause of ``spec`` names (``==8.9.2.26``, ``===8.9.2.26``; no wildcard)."""
    out = []
    for clause in spec:
        if clause.operator in ("==", "===") and not clause.version.endswith(".*"):
            try:
                out.append(Version(clause.version))
            except InvalidVersion:
                continue
    return out


def _breaks(outcome: Outcome, spec: SpecifierSet) -> bool:
    if outcome.version is not None:
        return not spec.contains(outcome.version, prereleases=True)
    if outcome.spec is not None:  # a range: broken only where the requirement pins one version the range excludes
        return any(not outcome.spec.contains(v, prereleases=True) for v in _exact_versions(spec))
    return True  # removed


def broken_pins(
    command: Command,
    requires: Mapping[str, Iterable[str]],
    installed: Mapping[str, Version],
    matrix: CompatMatrix,
) -> list[str]:
    """Each installed package's requirement that ``command`` breaks, worded as a problem; ``requires`` is canonical
    name -> the Requires-Dist lines that apply (the facts' :attr:`InstalledPackage.requires`)."""
    moved = outcomes(command, installed, matrix)
    if not moved:
        return []
    problems = []
    for owner, lines in sorted(requires.items()):
        if canonical_name(owner) in moved:
            continue  # the command moves the pinning package too
        for line in lines:
            head = _NAME.match(line)
            if head is None or canonical_name(head.group(1)) not in moved or _EXTRA.search(line):
                continue
            read = read_requirement(line)
            if read is None:
                continue
            name, spec = read
            held = installed.get(name)
            if held is None or not spec.contains(held, prereleases=True):
                continue  # not met now (CD401's finding): the command does not break it
            outcome = moved[name]
            if not _breaks(outcome, spec):
                continue
            label = f"{owner} {installed[owner]}" if owner in installed else owner
            if outcome.removed:
                problems.append(f"it removes {name}, which {label} requires ({name}{spec or ''})")
            else:
                problems.append(f"it breaks {label}'s pin {name}{spec} (it installs {name} {outcome.text})")
    return problems
