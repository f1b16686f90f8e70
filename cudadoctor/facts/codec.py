"""The facts JSON: turning :class:`~cudadoctor.facts.model.Facts` into plain JSON and back.

One generic, type-driven codec serves every dataclass in :mod:`cudadoctor.facts.model`, so adding a field
to the model needs no serialisation code. Reading is strict about types and forgiving about
additions: unknown keys are ignored (a newer cudadoctor's snapshot still loads), a missing optional
field takes its default, and anything else wrong raises :class:`~cudadoctor.errors.SnapshotError`
with the path of the bad value (``facts.gpus[0].index: expected an integer``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, cast

from packaging.version import Version

from cudadoctor.errors import SnapshotError
from cudadoctor.facts import model
from cudadoctor.facts.model import SCHEMA_VERSION, Facts
from cudadoctor.redact import Redactor

__all__ = [
    "MAX_ITEMS",
    "SNAPSHOT_KIND",
    "SNAPSHOT_LIMIT",
    "check_envelope",
    "decode",
    "decode_fast",
    "encode",
    "facts_from_json",
    "facts_to_dict",
    "facts_to_json",
    "field_types",
    "redact_facts",
]

#: The ``kind`` field of a snapshot document, so a stray JSON file is recognised as not ours.
SNAPSHOT_KIND = "cudadoctor-facts"

#: Documents whose ``facts`` member ``--from`` accepts: a snapshot, or a saved ``check --format json``.
_READABLE_KINDS = (SNAPSHOT_KIND, "cudadoctor-report")

#: Nesting deeper than this is not a cudadoctor document (and would exhaust the stack).
_MAX_DEPTH = 32


#: Values that encode as themselves (exact types: a str enum is an enum).
_SELF = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _field_names(cls: Any) -> tuple[str, ...] | None:
    """A dataclass's field names, None for any other class (once per class: ``fields`` builds a tuple per call)."""
    return tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None


def encode(value: Any) -> Any:
    """A JSON-ready form of a model value."""
    cls: Any = type(value)
    if cls in _SELF:
        return value
    if cls is tuple or cls is list:
        return [encode(v) for v in value]
    names = _field_names(cls)
    if names is not None:
        return {name: encode(getattr(value, name)) for name in names}
    if isinstance(value, Version):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    return value


def facts_to_dict(facts: Facts) -> dict[str, Any]:
    """The snapshot document: a versioned envelope around the facts."""
    return {"kind": SNAPSHOT_KIND, "schema_version": SCHEMA_VERSION, "facts": encode(facts)}


def facts_to_json(facts: Facts) -> str:
    return json.dumps(facts_to_dict(facts), indent=2, sort_keys=True, ensure_ascii=False)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    # Once per class: get_type_hints evaluates every string annotation anew on each call.
    return typing.get_type_hints(cls, vars(model))


def field_types(cls: type = Facts) -> dict[str, Any]:
    """The type of each field of ``cls`` (a class of the facts model; :class:`Facts` by default), evaluated once,
    for :func:`decode` of one fact alone or a reader that walks the model's types."""
    return _hints(cls)


@functools.cache
def _plan(tp: Any) -> tuple[str, Any]:
    """How values of ``tp`` are decoded (once per annotation: ``typing`` introspection costs more than the work)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        return "union", (type(None) in options, [t for t in options if t is not type(None)])
    if tp is Any:
        return "any", None
    if dataclasses.is_dataclass(tp):
        fields = [f for f in dataclasses.fields(tp) if not f.name.startswith("_")]
        required = {
            f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        return "dataclass", tuple((f.name, f.name in required) for f in fields)
    if origin is tuple:
        return "tuple", typing.get_args(tp)[0]
    if origin is dict:
        return "dict", typing.get_args(tp)[1]
    return "scalar", None


def decode(tp: Any, data: Any, path: str, depth: int = 0, max_items: int | None = None) -> Any:
    """Build a value of type ``tp`` from JSON data, or raise SnapshotError naming ``path``.

    ``max_items`` bounds every list and object (snapshots read from a file); facts this run gathered
    itself (redaction decodes them again) are not bounded.
    """
    if depth > _MAX_DEPTH:
        raise SnapshotError(f"{path}: nested too deeply")
    kind, detail = _plan(tp)
    if kind == "union":
        optional, options = detail
        if data is None and optional:
            return None
        (inner,) = options
        return decode(inner, data, path, depth + 1, max_items)
    if kind == "any":
        return data
    if kind == "dataclass":
        return _decode_dataclass(cast(type, tp), detail, data, path, depth, max_items)
    if kind == "tuple":
        return _decode_tuple(detail, data, path, depth, max_items)
    if kind == "dict":
        return _decode_dict(detail, data, path, depth, max_items)
    return _decode_scalar(tp, data, path)


class _Refused(Exception):
    """A value the fast decoder does not build: :func:`decode` then says exactly what is wrong, and where."""


def decode_fast(tp: Any, data: Any, path: str, max_items: int | None = None) -> Any:
    """:func:`decode`, with a decoder compiled once per type (no path strings, no type introspection per value);
    anything it refuses is decoded again by :func:`decode`, which raises the precise error. Every run decodes
    the file probes' memo (~2,000 values on an H200) and a snapshot's facts with it."""
    try:
        return _compiled(tp, max_items)(data)
    except Exception:  # the slow decoder gives the answer or the precise error
        return decode(tp, data, path, 0, max_items)


def _refuse() -> Any:
    raise _Refused


@functools.cache
def _compiled(tp: Any, max_items: int | None) -> Callable[[Any], Any]:
    """The decoder of ``tp``: as strict as :func:`decode` (the model nests far less deeply than ``_MAX_DEPTH``)."""
    kind, detail = _plan(tp)
    if kind == "any":
        return lambda data: data
    if kind == "union":
        optional, options = detail
        if len(options) != 1:
            return lambda data: _refuse()
        inner = _Lazy(options[0], max_items)
        return lambda data: None if data is None and optional else inner(data)
    if kind == "dataclass":
        return _dataclass_decoder(cast(type, tp), detail, max_items)
    if kind == "tuple":
        item = _Lazy(detail, max_items)

        def tuple_of(data: Any) -> tuple[Any, ...]:
            if not isinstance(data, list) or (max_items is not None and len(data) > max_items):
                raise _Refused
            return tuple([item(v) for v in data])

        return tuple_of
    if kind == "dict":
        value = _Lazy(detail, max_items)

        def dict_of(data: Any) -> dict[str, Any]:
            if not isinstance(data, dict) or (max_items is not None and len(data) > max_items):
                raise _Refused
            return {str(k): value(v) for k, v in data.items()}

        return dict_of
    return _scalar_decoder(tp)


class _Lazy:
    """A nested type's decoder, compiled when first used (a type may refer to itself)."""

    __slots__ = ("decoder", "max_items", "tp")

    def __init__(self, tp: Any, max_items: int | None) -> None:
        self.tp, self.max_items = tp, max_items
        self.decoder: Callable[[Any], Any] | None = None

    def __call__(self, data: Any) -> Any:
        if self.decoder is None:
            self.decoder = _compiled(self.tp, self.max_items)
        return self.decoder(data)


def _dataclass_decoder(cls: type, fields: tuple[tuple[str, bool], ...], max_items: int | None) -> Callable[[Any], Any]:
    hints = _hints(cls)
    decoders = [(name, required, _Lazy(hints[name], max_items)) for name, required in fields]

    def build(data: Any) -> Any:
        if not isinstance(data, dict):
            raise _Refused
        kwargs: dict[str, Any] = {}
        for name, required, decoder in decoders:
            if name in data:
                kwargs[name] = decoder(data[name])
            elif required:
                raise _Refused
        return cls(**kwargs)

    return build


def _scalar_decoder(tp: Any) -> Callable[[Any], Any]:
    if isinstance(tp, type) and issubclass(tp, Version):

        def version(data: Any) -> Any:
            if not isinstance(data, str):
                raise _Refused
            return tp(data)

        return version
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda data: tp(data)
    if tp in _PLAIN:
        accepted, _message = _PLAIN[tp]

        def plain(data: Any) -> Any:
            if (isinstance(data, bool) and tp is not bool) or not isinstance(data, accepted):
                raise _Refused
            return float(cast(float, data)) if tp is float else data

        return plain
    return lambda data: _refuse()


def _decode_dataclass(
    cls: type, fields: tuple[tuple[str, bool], ...], data: Any, path: str, depth: int, max_items: int | None
) -> Any:
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: expected an object")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for name, required in fields:
        if name in data:
            kwargs[name] = decode(hints[name], data[name], f"{path}.{name}", depth + 1, max_items)
        elif required:
            raise SnapshotError(f"{path}.{name}: missing")
    return cls(**kwargs)


#: The most items one list or object of a snapshot may hold: a real machine's largest (its packages, the
#: loader's needs, capped at 2,000) stays far below; 60,000 GPUs in a snapshot is input to refuse at once,
#: not to judge for a minute (an independent hostile run, issue #14).
_MAX_ITEMS = 10_000
#: the same bound, for the other readers of snapshots (``compare``), which must accept no more than ``--from``
MAX_ITEMS = _MAX_ITEMS


def _decode_tuple(item: Any, data: Any, path: str, depth: int, max_items: int | None) -> tuple[Any, ...]:
    if not isinstance(data, list):
        raise SnapshotError(f"{path}: expected a list")
    if max_items is not None and len(data) > max_items:
        raise SnapshotError(f"{path}: {len(data)} items, more than any machine has ({max_items})")
    return tuple(decode(item, v, f"{path}[{i}]", depth + 1, max_items) for i, v in enumerate(data))


def _decode_dict(item: Any, data: Any, path: str, depth: int, max_items: int | None) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: expected an object")
    if max_items is not None and len(data) > max_items:
        raise SnapshotError(f"{path}: {len(data)} entries, more than any machine has ({max_items})")
    # A key that is not printable ("a\nb") is quoted, so an error naming it stays on one line.
    return {
        str(k): decode(item, v, f"{path}.{k}" if k.isprintable() else f"{path}[{k!r}]", depth + 1, max_items)
        for k, v in data.items()
    }


#: JSON types a plain annotation accepts, and what the error says otherwise (bool is not an int here).
_PLAIN: dict[type, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "expected true or false"),
    int: ((int,), "expected an integer"),
    float: ((int, float), "expected a number"),
    str: ((str,), "expected a string"),
}


def _decode_scalar(tp: Any, data: Any, path: str) -> Any:
    if isinstance(tp, type) and issubclass(tp, Version):
        if not isinstance(data, str):
            raise SnapshotError(f"{path}: expected a version string")
        try:
            return tp(data)
        except ValueError:  # InvalidVersion, or a number too long for int() ("9" * 5000)
            raise SnapshotError(f"{path}: {data[:60]!r} is not a version") from None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise SnapshotError(f"{path}: {data!r} is not one of {[m.value for m in tp]}") from None
    if tp in _PLAIN:
        accepted, message = _PLAIN[tp]
        if (isinstance(data, bool) and tp is not bool) or not isinstance(data, accepted):
            raise SnapshotError(f"{path}: {message}")
        return float(cast(float, data)) if tp is float else data
    raise SnapshotError(f"{path}: cannot decode type {tp!r}")  # a model type this codec lacks


#: The largest snapshot or report read (``check --from``, ``compare``): one is tens of kilobytes.
SNAPSHOT_LIMIT = 64 << 20


def check_envelope(document: Any, origin: str) -> None:
    """Raise SnapshotError unless ``document`` is a snapshot or report this cudadoctor reads (its ``kind`` and
    ``schema_version``): what ``check --from`` and ``compare`` accept."""
    if not isinstance(document, dict) or document.get("kind") not in _READABLE_KINDS:
        raise SnapshotError(f'{origin}: not a cudadoctor snapshot (expected "kind": "{SNAPSHOT_KIND}")')
    version = document.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SnapshotError(f"{origin}: schema_version missing or not an integer")
    if version > SCHEMA_VERSION:
        raise SnapshotError(
            f"{origin}: written with facts schema {version}; this cudadoctor reads up to {SCHEMA_VERSION}"
            " (upgrade cudadoctor)"
        )


def facts_from_json(text: str, *, origin: str = "snapshot") -> Facts:
    """Facts from a snapshot document; SnapshotError with one clear line if it is not one."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{origin}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:  # a number too long for int() (Python's 4300-digit limit)
        raise SnapshotError(f"{origin}: not a cudadoctor snapshot ({str(exc).split(';')[0]})") from None
    except RecursionError:
        raise SnapshotError(f"{origin}: nested too deeply") from None
    check_envelope(document, origin)
    try:
        facts: Facts = decode_fast(Facts, document.get("facts"), "facts", max_items=_MAX_ITEMS)
    except RecursionError:
        raise SnapshotError(f"{origin}: nested too deeply") from None
    except SnapshotError as exc:
        raise SnapshotError(f"{origin}: {exc}") from None
    return facts


def redact_facts(facts: Facts, redactor: Redactor) -> Facts:
    """The same facts with every string passed through ``redactor`` (for every output format)."""
    encoded = encode(facts)
    if not redactor.changes(encoded):
        return facts  # nothing to mask: skip rebuilding the same facts
    redacted: Facts = decode_fast(Facts, redactor.document(encoded), "facts")
    return redacted
