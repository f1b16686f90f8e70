"""``@record``: a frozen dataclass whose methods are shared, not compiled one class at a time.

``@dataclass(frozen=True)`` writes ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and
``__delattr__`` for each class by compiling generated source. cudadoctor declares about a hundred such
classes (the facts, findings, verdicts), and ``cudadoctor check`` imports them on every run: their
creation was 40 ms of a 100 ms import on the 2-core machine (measured). A record is declared by
``dataclasses.dataclass`` itself (so ``fields``, ``replace``, ``asdict`` and type checkers work unchanged,
see ``dataclass_transform``), with nothing generated: ``__init__`` reads the fields' spec computed once
per class (a few µs more per instance than a compiled one; a run makes about a thousand), and equality,
hashing, ``repr`` and the refusal to assign are the functions below, the same for every class, with the
semantics ``@dataclass(frozen=True)`` gives: equal when of the same class with equal fields, hashed by the
fields' tuple, ``Name(field=value, …)``, ``FrozenInstanceError``. Methods a class defines itself are kept, as
``@dataclass`` keeps them. The compat rows (:mod:`cudadoctor.data.row`) share the ``__init__``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # only type checkers read it (importing typing_extensions costs time)

    def dataclass_transform(**_kwargs: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated


__all__ = ["Spec", "init_record", "mutable_record", "record", "spec_of"]

T = TypeVar("T", bound=type)

_MISSING = dataclasses.MISSING


def _fields_of(self: Any) -> tuple[Any, ...]:
    return tuple([getattr(self, name) for name in self.__record_fields__])


def _eq(self: Any, other: object) -> Any:  # bool, or NotImplemented for another class
    if other.__class__ is not self.__class__:
        return NotImplemented
    return bool(_fields_of(self) == _fields_of(other))


def _hash(self: Any) -> int:
    return hash(_fields_of(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_shown__)
    return f"{type(self).__qualname__}({shown})"


def _setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


class Spec(NamedTuple):
    """What ``__init__`` needs of a record class, computed once per class."""

    names: tuple[str, ...]
    positional: int  #: how many leading fields may be given by position
    defaults: tuple[tuple[str, Any, Any], ...]  #: (name, default, default factory)


def spec_of(cls: type) -> Spec:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    positional = next((i for i, f in enumerate(fields) if f.kw_only), len(fields))
    return Spec(
        tuple(f.name for f in fields), positional, tuple((f.name, f.default, f.default_factory) for f in fields)
    )


def init_record(self: Any, spec: Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Set every field from positional and keyword arguments, defaults and default factories, as the
    ``__init__`` of ``@dataclass`` would; ``TypeError`` for what it would refuse."""
    name_of = type(self).__name__
    if len(args) > spec.positional:
        raise TypeError(f"{name_of}() takes {spec.positional} positional arguments but {len(args)} were given")
    given = dict(zip(spec.names, args, strict=False))  # fewer arguments than fields
    if clash := given.keys() & kwargs.keys():
        raise TypeError(f"{name_of}() got multiple values for {sorted(clash)}")
    given.update(kwargs)
    for name, default, factory in spec.defaults:
        if name in given:
            value = given.pop(name)
        elif default is not _MISSING:
            value = default
        elif factory is not _MISSING:
            value = factory()
        else:
            raise TypeError(f"{name_of}() missing required argument: {name!r}")
        object.__setattr__(self, name, value)
    if given:
        raise TypeError(f"{name_of}() got unexpected arguments {sorted(given)}")


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    init_record(self, self.__record_spec__, args, kwargs)


def _declared(cls: type) -> Any:
    """``cls`` as a dataclass with nothing generated, its fields' names and spec kept, and the shared ``__init__``
    unless it defines one."""
    declared: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(declared)
    type.__setattr__(declared, "__record_fields__", tuple(f.name for f in fields if f.compare))
    type.__setattr__(declared, "__record_shown__", tuple(f.name for f in fields if f.repr))
    type.__setattr__(declared, "__record_spec__", spec_of(declared))
    if "__init__" not in declared.__dict__:
        type.__setattr__(declared, "__init__", _init)
    return declared


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: T) -> T:
    """Declare a frozen record (see the module's docstring)."""
    declared = _declared(cls)
    own = declared.__dict__
    # @dataclass(frozen=True, eq=True) keeps an explicit __hash__; __hash__ = None that Python set because the
    # class body defined __eq__ is not explicit.
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    shared: dict[str, Any] = {"__repr__": _repr, "__eq__": _eq, "__setattr__": _setattr, "__delattr__": _delattr}
    for name, function in shared.items():
        if name not in own:
            type.__setattr__(declared, name, function)
    if not explicit_hash:
        type.__setattr__(declared, "__hash__", _hash)
    return declared  # type: ignore[no-any-return]


@dataclass_transform(field_specifiers=(dataclasses.field,))
def mutable_record(cls: T) -> T:
    """``@dataclass`` (mutable, compared by fields, unhashable) without compiling code for the class: the shared
    ``__init__``, ``__repr__`` and ``__eq__`` above. For the few mutable helpers imported on every run (the probe
    context, a report category): each ``@dataclass`` cost ~0.7 ms of a run on Python 3.12 (measured)."""
    declared = _declared(cls)
    own = declared.__dict__
    for name, function in {"__repr__": _repr, "__eq__": _eq}.items():
        if name not in own:
            type.__setattr__(declared, name, function)
    if "__hash__" not in own or own["__hash__"] is None:
        type.__setattr__(declared, "__hash__", None)  # as @dataclass(eq=True) leaves a mutable class
    return declared  # type: ignore[no-any-return]
