"""The base of every compat row: a frozen dataclass whose ``__init__``, ``__repr__`` and ``__eq__`` are shared.

``@dataclass`` writes those methods (and a frozen class's ``__setattr__``) for each class by compiling
generated source; for the thirty row types of ``compat/`` that cost four times the import of the rest
of the data layer, and ``cudadoctor check`` imports it on every run. :func:`row` declares the class
a dataclass (fields, ``dataclasses.fields``/``replace``) that type checkers see as frozen, and
:class:`Row` supplies the methods once, read from the fields: keyword arguments for every field,
positional ones in field order unless a field is keyword-only, defaults and default factories applied
as ``@dataclass`` would, and no assignment after ``__init__`` (``FrozenInstanceError``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from cudadoctor.record import Spec, init_record, spec_of

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # only type checkers read it (typing has it from 3.11 on; importing typing_extensions costs time)

    def dataclass_transform(**_kwargs: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated


__all__ = ["Row", "row"]

T = TypeVar("T", bound=type)


@dataclass_transform(frozen_default=True, kw_only_default=False, field_specifiers=(dataclasses.field,))
def row(*, kw_only: bool = False) -> Callable[[T], T]:
    """Declare a row type: a frozen dataclass (``kw_only``: no positional arguments)."""

    def wrap(cls: T) -> T:
        # frozen=False: Row's own __setattr__ refuses every assignment, so nothing is generated at all.
        declared: type = dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=kw_only)(cls)
        type.__setattr__(declared, "_row_spec", spec_of(declared))  # read by every __init__: computed once
        return cast(T, declared)

    return wrap


class Row:
    """Methods shared by every row type (see the module's docstring)."""

    __slots__ = ()
    _row_spec: Spec  #: set by :func:`row` on each row type

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        init_record(self, self._row_spec, args, kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._row_spec.names)

    def __repr__(self) -> str:
        names = self._row_spec.names
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())
