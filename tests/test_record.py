"""``@record`` behaves as ``@dataclass(frozen=True)`` does, operation by operation."""

from __future__ import annotations

import ast
import copy
import dataclasses
import pathlib
import pickle

import pytest

from cudadoctor.record import mutable_record, record


@record
class Rec:
    """A record with every kind of field."""

    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = dataclasses.field(default_factory=dict, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Ref:
    """The same fields as a frozen dataclass."""

    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = dataclasses.field(default_factory=dict, compare=False, repr=False)


CALLS = [
    (("a",), {}),
    (("a", 2), {}),
    (("a",), {"tags": ("x",), "count": 3}),
    ((), {"name": "b", "extra": {"k": 1}}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_construction_equality_hash_and_repr_match_dataclass(args, kwargs) -> None:
    ours, theirs = Rec(*args, **kwargs), Ref(*args, **kwargs)
    assert repr(ours).replace("Rec(", "X(") == repr(theirs).replace("Ref(", "X(")
    assert ours == Rec(*args, **kwargs) and hash(ours) == hash(Rec(*args, **kwargs))
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]


def test_compare_false_fields_do_not_count_and_classes_do_not_mix() -> None:
    assert Rec("a", extra={"x": 1}) == Rec("a", extra={"y": 2})
    # Rec and Ref are compared on purpose: records of different classes are never equal.
    assert Rec("a") != Rec("b") and Rec("a") != Ref("a")  # type: ignore[comparison-overlap]
    assert len({Rec("a"), Rec("a"), Rec("b")}) == 2


def test_default_factories_give_fresh_values() -> None:
    first, second = Rec("a"), Rec("a")
    assert first.extra == {} and first.extra is not second.extra


def test_frozen_replace_copy_and_pickle() -> None:
    item = Rec("a", 1, ("t",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.count = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del item.name  # type: ignore[misc]
    assert dataclasses.replace(item, count=5) == Rec("a", 5, ("t",))
    assert copy.deepcopy(item) == item and copy.copy(item) == item
    assert pickle.loads(pickle.dumps(item)) == item  # noqa: S301 - our own object, round trip


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing required argument: 'name'"),
        (("a", 1, (), {}, 5), {}, "takes 4 positional arguments"),
        (("a",), {"name": "b"}, "multiple values"),
        (("a",), {"colour": "red"}, "unexpected arguments"),
    ],
)
def test_wrong_arguments_are_refused_as_dataclass_would(args, kwargs, message) -> None:
    with pytest.raises(TypeError, match=message):
        Rec(*args, **kwargs)
    with pytest.raises(TypeError):
        Ref(*args, **kwargs)


def test_a_method_the_class_defines_is_kept() -> None:
    @record
    class Shown:
        """A record with its own repr."""

        secret: str

        def __repr__(self) -> str:
            return "Shown(***)"

    assert repr(Shown("x")) == "Shown(***)" and hash(Shown("x")) == hash(Shown("x"))


@mutable_record
class Mut:
    """A mutable record: the probe context's and a report category's kind."""

    name: str
    lines: list[str] = dataclasses.field(default_factory=list)
    hidden: int = dataclasses.field(default=0, repr=False, compare=False)


@dataclasses.dataclass
class MutRef:
    name: str
    lines: list[str] = dataclasses.field(default_factory=list)
    hidden: int = dataclasses.field(default=0, repr=False, compare=False)


@pytest.mark.parametrize(("args", "kwargs"), [(("a",), {}), (("a", ["x"]), {}), ((), {"name": "b", "hidden": 3})])
def test_mutable_record_matches_a_plain_dataclass(args, kwargs) -> None:
    mine, ref = Mut(*args, **kwargs), MutRef(*args, **kwargs)
    assert repr(mine).replace("Mut(", "") == repr(ref).replace("MutRef(", "")
    assert dataclasses.asdict(mine) == dataclasses.asdict(ref)
    assert mine == Mut(*args, **kwargs) and mine != Mut("other")
    assert mine == Mut(mine.name, list(mine.lines), hidden=mine.hidden + 1)  # compare=False field
    assert Mut.__hash__ is None and MutRef.__hash__ is None
    with pytest.raises(TypeError):
        hash(mine)


def test_a_mutable_record_can_be_changed_and_each_gets_its_own_default() -> None:
    first, second = Mut("a"), Mut("a")
    first.lines.append("x")
    first.name = "b"
    assert (first.name, first.lines, second.lines) == ("b", ["x"], [])
    assert dataclasses.replace(first, name="c") == Mut("c", ["x"])
    with pytest.raises(TypeError, match="missing required argument"):
        Mut()  # type: ignore[call-arg]


_DECORATORS = {"record", "mutable_record", "dataclass"}


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def test_every_record_class_has_its_own_docstring() -> None:
    """A dataclass without a docstring gets one made from ``inspect.signature`` when its module is imported (~0.3 to
    2.4 ms each, measured on check's path: nvreq.Condition, RenderOptions …)."""
    package = pathlib.Path(mutable_record.__code__.co_filename).parent
    missing = [
        f"{path.relative_to(package)}:{node.name}"
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(_decorator_name(d) in _DECORATORS for d in node.decorator_list)
        and ast.get_docstring(node) is None
    ]
    assert missing == []
