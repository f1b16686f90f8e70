"""Reading an installed package's Requires-Dist lines without ``packaging.requirements``.

Exact pins: ``nvidia-cudnn-cu11==8.5.0.96`` or ``nvidia-nccl-cu12 (==2.21.5)``, the name first and then ``==``. A
marker's ``==`` (``extra == "cudnn"``, ``platform_system == "Linux"``) pins nothing.

A line's name and version specifier (:func:`name_and_specifier`), for the common form of PEP 508
(https://peps.python.org/pep-0508/): a name, optional extras, optional comparisons, then anything after ``;`` (the
probe kept only the lines whose marker applies, so the checks never evaluate one). Parsing ``packaging``'s
``Requirement`` costs its tokenizer and markers modules (~6 ms of a ``check`` on an H200, measured) and ~80 µs a
line; a healthy torch install has about forty lines and none unmet. Any other form (a URL, a parenthesised
list with a marker inside, an odd character) is left to ``Requirement``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cudadoctor.facts.model import InstalledPackage
from cudadoctor.facts.names import canonical_name

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

__all__ = ["exact_pins", "name_and_specifier", "read_requirement"]

_EXACT_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_.-]*)\s*\(?\s*==\s*([0-9][^\s;,)]*)")


def exact_pins(pkg: InstalledPackage) -> dict[str, str]:
    """Distribution (canonical name) -> the version ``pkg`` pins it to."""
    pins: dict[str, str] = {}
    for line in pkg.requires:
        match = _EXACT_PIN.match(line)
        if match is not None:
            pins.setdefault(canonical_name(match.group(1)), match.group(2))
    return pins


_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_CLAUSE = r"(?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"
_SPEC = rf"{_CLAUSE}(?:\s*,\s*{_CLAUSE})*"
_LINE = (
    rf"^\s*(?P<name>{_NAME})\s*(?:\[\s*(?:{_NAME}(?:\s*,\s*{_NAME})*)?\s*\])?\s*"
    rf"(?:(?P<spec>{_SPEC})|\(\s*(?P<paren>{_SPEC})\s*\))?\s*(?:;.*)?$"
)


def name_and_specifier(line: str) -> tuple[str, SpecifierSet] | None:
    """(canonical name, specifier) of a Requires-Dist line of the common form, None for any other (parse it with
    ``Requirement``). Where ``Requirement`` reads the line, both give the same name and specifier (a test holds
    them to it over real packages' lines)."""
    match = re.match(_LINE, line, re.DOTALL)  # compiled on first use, then from re's cache
    if match is None:
        return None
    from packaging.specifiers import InvalidSpecifier

    from cudadoctor.bounded import parse_specifier

    try:  # bounded: a 5,000-digit version in hostile metadata is refused here, not by int() inside contains()
        specifier = parse_specifier(match["spec"] or match["paren"] or "")
    except InvalidSpecifier:
        return None
    return canonical_name(match["name"]), specifier


def read_requirement(line: str) -> tuple[str, SpecifierSet] | None:
    """(canonical name, specifier) of any Requires-Dist line: :func:`name_and_specifier`'s for the common form, else
    ``Requirement``'s (imported only then); None for a line ``Requirement`` refuses."""
    light = name_and_specifier(line)
    if light is not None:
        return light
    from cudadoctor.bounded import requirement_or_none

    full = requirement_or_none(line)
    return (canonical_name(full.name), full.specifier) if full is not None else None
