"""Parsing untrusted values with bounded input: one helper per value type, one error type each.

Everything cudadoctor reads (METADATA, ``version.py``, dpkg status, ``pyvenv.cfg``, version.json,
env values, snapshots, command-line values) may be hostile. The standard parsers fail in ways their
callers do not expect: ``packaging.version.Version`` raises ``ValueError`` (not ``InvalidVersion``)
for a number past Python's 4,300-digit ``int()`` limit
(https://docs.python.org/3/library/stdtypes.html#int-max-str-digits), ``json.loads`` raises
``RecursionError`` on deep nesting, and ``os`` calls raise ``ValueError`` for a path with a NUL
byte. These helpers bound the input first and raise only the error their callers already catch:

* :func:`parse_version` -> ``InvalidVersion`` (and :func:`version_or_none`);
* :func:`parse_int` -> ``ValueError``;
* :func:`parse_requirement`, :func:`parse_specifier`, :func:`parse_marker` -> packaging's own
  ``Invalid*`` errors (every version inside is then short enough for ``int()``), and
  :func:`requirement_or_none`;
* :func:`loads_json` -> ``ValueError``, nesting at most :data:`MAX_JSON_DEPTH` deep;
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_REQUIREMENT_CHARS",
    "MAX_VERSION_CHARS",
    "json_object",
    "loads_json",
    "parse_int",
    "parse_marker",
    "parse_requirement",
    "parse_specifier",
    "parse_version",
    "requirement_or_none",
    "version_or_none",
]

#: Longest version text accepted. PEP 440 sets no limit; real ones are under 40 characters
#: (``2.6.0.dev20241112+cu124``); 256 keeps every number in it far below int()'s limit.
MAX_VERSION_CHARS = 256
#: Longest integer text accepted (a PCI ID, a CUDA version code, a GPU count fit in 20).
MAX_INT_DIGITS = 64
#: Longest requirement, specifier or marker text accepted (Requires-Dist lines are under 200).
MAX_REQUIREMENT_CHARS = 2048
#: Deepest JSON nesting accepted (snapshots nest 6 deep, version.json 2, conda-meta 3).
MAX_JSON_DEPTH = 64


def parse_version(text: str) -> Version:
    """``Version(text)``, raising only ``InvalidVersion`` (also for text over 256 characters)."""
    if len(text) > MAX_VERSION_CHARS:
        raise InvalidVersion(f"version longer than {MAX_VERSION_CHARS} characters")
    try:
        return Version(text)
    except ValueError as exc:  # InvalidVersion is a ValueError; int() of a huge number is one too
        raise InvalidVersion(str(exc)[:200]) from None


def version_or_none(text: str | None) -> Version | None:
    """The version, or None when ``text`` is empty, invalid or too long."""
    if not text:
        return None
    try:
        return parse_version(text)
    except InvalidVersion:
        return None


def parse_int(text: str, *, max_digits: int = MAX_INT_DIGITS) -> int:
    """``int(text)`` for at most ``max_digits`` characters (after stripping); ``ValueError`` otherwise."""
    text = text.strip()
    if len(text) > max_digits:
        raise ValueError(f"number longer than {max_digits} digits")
    return int(text)


def _bounded(text: str, what: str) -> str:
    if len(text) > MAX_REQUIREMENT_CHARS:
        raise ValueError(f"{what} longer than {MAX_REQUIREMENT_CHARS} characters")
    return text


def parse_requirement(text: str) -> Requirement:
    """``Requirement(text)``, raising only ``InvalidRequirement``."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(_bounded(text, "requirement"))
    except ValueError as exc:
        raise InvalidRequirement(str(exc)[:200]) from None


def requirement_or_none(text: str) -> Requirement | None:
    """The requirement, or None when ``Requirement`` refuses ``text`` (or it is too long)."""
    from packaging.requirements import InvalidRequirement

    try:
        return parse_requirement(text)
    except InvalidRequirement:
        return None


def parse_specifier(text: str) -> SpecifierSet:
    """``SpecifierSet(text)``, raising only ``InvalidSpecifier``."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(_bounded(text, "specifier"))
    except ValueError as exc:
        raise InvalidSpecifier(str(exc)[:200]) from None


def parse_marker(text: str) -> Marker:
    """``Marker(text)``, raising only ``InvalidMarker``."""
    from packaging.markers import InvalidMarker, Marker

    try:
        return Marker(_bounded(text, "marker"))
    except ValueError as exc:
        raise InvalidMarker(str(exc)[:200]) from None


def loads_json(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)`` nesting at most ``max_depth`` deep; ``ValueError`` for anything else.

    Deep nesting makes the decoder raise ``RecursionError`` (or later code that walks the value
    recurse too deep); a number past int()'s digit limit raises a plain ``ValueError``.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason}") from None
    if _depth_exceeds(value, max_depth):
        raise ValueError(f"nested too deeply (more than {max_depth} levels)")
    return value


def json_object(text: str | bytes) -> dict[str, Any] | None:
    """The JSON object ``text`` holds (bounded as :func:`loads_json`), or None for anything else."""
    try:
        value = loads_json(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _depth_exceeds(value: Any, max_depth: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
