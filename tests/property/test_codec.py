"""The facts JSON (:mod:`cudadoctor.facts.codec`): generated facts round-trip, and ``--from`` reads any document
without an uncaught exception."""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor.errors import SnapshotError
from cudadoctor.facts import model
from cudadoctor.facts.codec import decode, encode, facts_from_json, facts_to_json
from cudadoctor.facts.model import DriverVersion, Facts
from tests.property.strategies import (
    any_text,
    assert_one_line,
    driver_versions,
    fixture_text,
    json_values,
    mutated,
    mutated_json,
    numberish,
    pep440_versions,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {"codec.round_trip": 40, "facts_from_json": 80}

_SNAPSHOT_TEXT = fixture_text("h200-device", "snapshot.json")
_SNAPSHOT = json.loads(_SNAPSHOT_TEXT)

# --- facts from the model's own type hints --------------------------------------------------------

_TEXT = st.text(max_size=12)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


def strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a model type, walking the same type hints the codec walks."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [t for t in typing.get_args(tp) if t is not type(None)]
        (inner,) = options
        return st.none() | strategy_for(inner)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, vars(model))
        fields = {f.name: strategy_for(hints[f.name]) for f in dataclasses.fields(tp) if not f.name.startswith("_")}
        return st.builds(tp, **fields)
    if origin is tuple:
        (item, _ellipsis) = typing.get_args(tp)
        return st.lists(strategy_for(item), max_size=2).map(tuple)
    if origin is dict:
        _key, item = typing.get_args(tp)
        return st.dictionaries(_TEXT, strategy_for(item), max_size=2)
    if tp is DriverVersion:
        return driver_versions().map(DriverVersion)
    if tp is Version:
        return pep440_versions().map(Version)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**63), 2**63)
    if tp is float:
        return _FLOATS
    if tp is str:
        return _TEXT
    raise AssertionError(f"no strategy for {tp!r}")


_FACTS = strategy_for(Facts)


@property_settings(EXAMPLES["codec.round_trip"])
@given(_FACTS)
def test_facts_round_trip(facts: Facts) -> None:
    text = facts_to_json(facts)
    back = facts_from_json(text)
    assert back == facts
    assert facts_to_json(back) == text  # driver versions keep their leading zeros (580.159.04)


@property_settings(EXAMPLES["codec.round_trip"])
@given(strategy_for(model.DriverInfo))
def test_driver_info_round_trip(driver: model.DriverInfo) -> None:
    assert decode(model.DriverInfo, json.loads(json.dumps(encode(driver))), "driver") == driver
    if driver.version is not None:
        assert encode(driver)["version"] == str(driver.version)


# --- facts_from_json on any input -----------------------------------------------------------------


def _read(text: str) -> None:
    try:
        facts = facts_from_json(text, origin="facts.json")
    except SnapshotError as exc:
        assert_one_line(exc)
    else:
        assert isinstance(facts, Facts)


@property_settings(EXAMPLES["facts_from_json"])
@given(st.one_of(any_text(), json_values().map(json.dumps), mutated(_SNAPSHOT_TEXT, max_edits=3)))
def test_facts_from_json_any_text(text: str) -> None:
    _read(text)


@property_settings(EXAMPLES["facts_from_json"])
@given(mutated_json(_SNAPSHOT, max_edits=4, values=lambda: st.one_of(json_values(), numberish())))
def test_facts_from_json_mutated_snapshot(document: Any) -> None:
    _read(json.dumps(document))


@property_settings(EXAMPLES["facts_from_json"])
@given(
    st.one_of(st.sampled_from(["cudadoctor-facts", "cudadoctor-report"]), json_values(2)),
    st.one_of(st.integers(-3, 3), json_values(2)),
    st.sampled_from(["driver", "gpus", "packages", "host", "timings", "runtime", "nvcc"]),
    json_values(),
)
def test_facts_from_json_envelope_and_members(kind: Any, schema: Any, member: str, value: Any) -> None:
    document = json.loads(_SNAPSHOT_TEXT)
    document.update(kind=kind, schema_version=schema)
    document["facts"][member] = value
    _read(json.dumps(document))


def _leaves(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict):
        return [p for key, value in doc.items() for p in _leaves(value, (*path, key))]
    if isinstance(doc, list):
        return [p for i, value in enumerate(doc) for p in _leaves(value, (*path, i))]
    return [path] if isinstance(doc, (str, int)) and not isinstance(doc, bool) else []


_LEAVES = _leaves(_SNAPSHOT)


@property_settings(EXAMPLES["facts_from_json"])
@given(st.lists(st.tuples(st.sampled_from(_LEAVES), numberish(), st.booleans()), min_size=1, max_size=3))
def test_facts_from_json_number_fields(edits: list[tuple[tuple[Any, ...], str, bool]]) -> None:
    # A version or a number in the real snapshot written as other digits, or too many of them.
    document = json.loads(_SNAPSHOT_TEXT)
    for i, (path, _number, _quoted) in enumerate(edits):
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = f"@@{i}@@"
    text = json.dumps(document)
    for i, (_path, number, quoted) in enumerate(edits):
        raw = number if number.isascii() and not quoted else json.dumps(number)
        text = text.replace(f'"@@{i}@@"', raw)
    _read(text)
