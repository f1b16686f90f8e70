"""Check and convert one TOML record against its row dataclass, driven by the fields' annotations.

:func:`record_problems` is the validator: every problem of one record, each as ``<where>.<field>:
<message>``. :func:`build_row` is the converter the fast path uses: it trusts the record (the
shipped data is validated by the tests) and only turns strings into typed values. Both read the
same :func:`row_fields`, computed once per row type, so the schema exists once.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Union

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.data.types import Digits, Pattern
from cudadoctor.facts.model import DriverVersion

__all__ = ["ANNOTATIONS", "RowField", "build_row", "record_problems", "row_fields"]

#: Keys every record may have that are not row fields: its evidence and a free-text note.
ANNOTATIONS = frozenset({"source", "sources", "note", "notes"})

Problem = Callable[[Any], "str | None"]
Convert = Callable[[Any], Any]


class RowField(typing.NamedTuple):
    """One field of a row type: its name, whether the data must give it, and its check and conversion."""

    name: str
    required: bool
    problem: Problem
    convert: Convert


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) and value.strip() else "expected a non-empty string"


def _parsed(parse: Callable[[str], Any], what: str, errors: tuple[type[Exception], ...]) -> Problem:
    def problem(value: Any) -> str | None:
        if not isinstance(value, str):
            return "expected a string"
        try:
            parse(value)
        except errors:
            return f"{value!r} is not {what}"
        return None

    return problem


def _driver(value: str) -> DriverVersion:
    # NVIDIA driver versions are two or three dot-separated numbers (580.65, 580.159.04).
    if not all(part.isdigit() for part in value.split(".")) or value.count(".") not in (1, 2):
        raise ValueError(value)
    return DriverVersion(value)


def _integer(value: Any) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) else "expected an integer"


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "expected true or false"


def _date(value: Any) -> str | None:
    return None if isinstance(value, datetime.date) else "expected a date"


def _same(value: Any) -> Any:
    return value


# The same strings recur across records (">=3.10", "580.65.06"); the parsed values are immutable, so
# one object per string serves every row and conversion costs a dict look-up.
_version = functools.lru_cache(maxsize=None)(Version)
_specifier = functools.lru_cache(maxsize=None)(SpecifierSet)
_driver_version = functools.lru_cache(maxsize=None)(DriverVersion)

#: Plain field types: (check, conversion).
_SCALARS: dict[Any, tuple[Problem, Convert]] = {
    str: (_text, _same),
    int: (_integer, _same),
    bool: (_boolean, _same),
    datetime.date: (_date, _same),
    Version: (_parsed(Version, "a version", (InvalidVersion,)), _version),
    SpecifierSet: (_parsed(SpecifierSet, "a version specifier", (InvalidSpecifier,)), _specifier),
    DriverVersion: (_parsed(_driver, "a driver version", (ValueError,)), _driver_version),
}


def _pattern(marker: Pattern) -> tuple[Problem, Convert]:
    def problem(value: Any) -> str | None:
        if not isinstance(value, str):
            return "expected a string"
        return None if marker.regex.match(value) else f"{value!r} is not {marker.what}"

    return problem, _same


def _digits(marker: Digits) -> tuple[Problem, Convert]:
    def problem(value: Any) -> str | None:
        if not isinstance(value, str):
            return "expected a string"
        return None if value.isascii() and value.isdigit() else f"{value!r} is not {marker.what}"

    return problem, int


def _sequence(item: tuple[Problem, Convert]) -> tuple[Problem, Convert]:
    check, convert = item

    def problem(value: Any) -> str | None:
        if not isinstance(value, list):
            return "expected a list"
        for element in value:
            if found := check(element):
                return f"item {element!r}: {found}"
        return None

    return problem, (lambda value: tuple(map(convert, value)))


def _mapping(item: tuple[Problem, Convert]) -> tuple[Problem, Convert]:
    check, convert = item

    def problem(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "expected a table"
        for key, element in value.items():
            if found := check(element):
                return f"{key}: {found}"
        return None

    return problem, (lambda value: types.MappingProxyType({k: convert(v) for k, v in value.items()}))


def _nested(row_type: type) -> tuple[Problem, Convert]:
    def problem(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "expected a table"
        found = record_problems(row_type, value, "")
        return "; ".join(p.removeprefix(".") for p in found) or None

    return problem, (lambda value: build_row(row_type, value))


def _field_type(hint: Any) -> tuple[Problem, Convert]:
    """The check and conversion of one annotation (``X | None`` is ``X``: TOML has no null)."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        base, *markers = typing.get_args(hint)
        for marker in markers:
            if isinstance(marker, Pattern):
                return _pattern(marker)
            if isinstance(marker, Digits):
                return _digits(marker)
        return _field_type(base)  # pragma: no cover - no other markers exist
    if origin in (Union, types.UnionType):
        present = [a for a in typing.get_args(hint) if a is not type(None)]
        return _field_type(present[0])
    if origin is tuple:
        return _sequence(_field_type(typing.get_args(hint)[0]))
    if origin in (Mapping, dict):
        return _mapping(_field_type(typing.get_args(hint)[1]))
    if dataclasses.is_dataclass(hint):
        return _nested(typing.cast(type, hint))
    return _SCALARS[hint]


@functools.cache
def row_fields(row_type: type) -> tuple[RowField, ...]:
    """The data fields of a row type (``derived``, set only by code, is not one)."""
    fields = dataclasses.fields(row_type)
    # Row modules do not postpone annotations (see rows.py); get_type_hints is for any that do.
    if any(isinstance(f.type, str) for f in fields):
        hints = typing.get_type_hints(row_type, include_extras=True)
    else:
        hints = {f.name: f.type for f in fields}
    out = []
    for f in fields:
        if f.name == "derived":
            continue
        required = f.metadata.get("required", False) or (
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        problem, convert = _field_type(hints[f.name])
        out.append(RowField(f.name, required, problem, convert))
    return tuple(out)


@functools.cache
def _by_name(row_type: type) -> Mapping[str, RowField]:
    return {f.name: f for f in row_fields(row_type)}


def record_problems(row_type: type, record: Mapping[str, Any], where: str) -> list[str]:
    """Every problem of one record: missing and unknown fields, and values of the wrong type."""
    fields = _by_name(row_type)
    problems = [f"{where}.{f.name}: missing" for f in fields.values() if f.required and f.name not in record]
    for key, value in record.items():
        field = fields.get(key)
        if field is None:
            if key not in ANNOTATIONS:
                problems.append(f"{where}.{key}: unknown field")
        elif found := field.problem(value):
            problems.append(f"{where}.{key}: {found}")
    return problems


def build_row(row_type: type, record: Mapping[str, Any]) -> Any:
    """The row a (valid) record describes."""
    fields = _by_name(row_type)
    return row_type(**{key: fields[key].convert(value) for key, value in record.items() if key in fields})
