"""Every table and every field of compat/ has a reader: data nobody reads is either wired in or removed.

A field counts as read when some module of cudadoctor/ outside the data layer's own schema modules
(rows, types, fields, load) reads it as an attribute (``row.min_cudnn``); a table counts as read
when :mod:`cudadoctor.data.queries` asks for it by its key. The names are found in the source's
syntax tree, so a comment or a docstring naming a field does not count.
"""

from __future__ import annotations

import ast
import dataclasses
import glob
import os
from collections.abc import Iterable

import cudadoctor
from cudadoctor.data.fields import row_fields
from cudadoctor.data.load import load_table, table_names
from cudadoctor.data.rows import LAYOUTS

PACKAGE = os.path.dirname(cudadoctor.__file__)
#: The schema itself: naming a field there declares it, it does not read it.
SCHEMA_MODULES = {os.path.join(PACKAGE, "data", n) for n in ("rows.py", "types.py", "fields.py", "load.py")}


def _trees(paths: Iterable[str]) -> list[ast.AST]:
    trees: list[ast.AST] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            trees.append(ast.parse(handle.read(), path))
    return trees


def attributes_read(paths: Iterable[str]) -> set[str]:
    """Every ``x.<name>`` in the given modules."""
    return {node.attr for tree in _trees(paths) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def strings_in(paths: Iterable[str]) -> set[str]:
    return {
        node.value
        for tree in _trees(paths)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def row_types() -> set[type]:
    """Every row type of every layout, and the row types nested in their fields."""
    found: set[type] = set()
    todo = [t for layout in LAYOUTS.values() for t in (*layout.arrays.values(), *layout.singles.values())]
    while todo:
        row_type = todo.pop()
        if row_type in found:
            continue
        found.add(row_type)
        for f in dataclasses.fields(row_type):
            todo.extend(t for t in _dataclasses_in(f.type) if t not in found)
    return found


def _dataclasses_in(annotation: object) -> list[type]:
    text = str(annotation)
    from cudadoctor.data import rows

    return [
        getattr(rows, name) for name in rows.__all__ if name in text and dataclasses.is_dataclass(getattr(rows, name))
    ]


def unread_fields(types: Iterable[type], read: set[str]) -> list[str]:
    """``Type.field`` for every data field that no reader names."""
    return sorted(f"{t.__name__}.{f.name}" for t in types for f in row_fields(t) if f.name not in read)


def _readers() -> list[str]:
    paths = glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)
    return [p for p in paths if p not in SCHEMA_MODULES]


def test_every_field_of_every_row_is_read():
    assert unread_fields(row_types(), attributes_read(_readers())) == []


def test_every_table_is_asked_for():
    asked = strings_in([os.path.join(PACKAGE, "data", "queries.py")])
    tables = {key for layout in LAYOUTS.values() for key in (*layout.arrays, *layout.singles)}
    assert sorted(tables - asked) == []


def test_every_shipped_file_has_a_known_kind_and_every_table_in_it_a_row_type():
    for name in table_names():
        table = load_table(name)
        layout = LAYOUTS[table.kind]
        assert set(table.data) - {"meta"} <= {*layout.arrays, *layout.singles}, name


def test_the_check_fails_for_a_field_nobody_reads():
    @dataclasses.dataclass(frozen=True)
    class Row:
        version: str
        nobody_reads_this_field: str | None = None

    read = attributes_read(_readers())
    assert unread_fields([Row], read) == ["Row.nobody_reads_this_field"]
