"""Finding ``compat/``, reading its TOML files, validating them, and turning records into rows.

``compat/`` sits at the top of the repository and is shipped inside the wheel as
``cudadoctor/compat`` (see ``pyproject.toml``). :func:`validate_table` checks every record of a
file against its row type (:mod:`cudadoctor.data.rows`) and reports every problem at once (file,
record, field), so one bad edit cannot hide another. :func:`load_table` is the fast path: the
shipped files are validated record by record in the test suite (tests/test_data_tables.py) and
cannot change after install, so a normal run checks only the ``[meta]`` block; full validation
of every record costs more than the rest of ``cudadoctor check``.
"""

from __future__ import annotations

import datetime
import functools
import itertools
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import Version

from cudadoctor.data.compiled import load_cached, load_prebuilt, store
from cudadoctor.data.fields import build_row, record_problems, row_fields
from cudadoctor.data.rows import LAYOUTS
from cudadoctor.errors import CompatDataError
from cudadoctor.fileread import read_file

__all__ = ["Table", "compat_dir", "load_table", "parse_table", "table_names", "validate_meta", "validate_table"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compat_dir() -> str:
    """The compat/ directory in use: the wheel's copy, else the source checkout's."""
    for candidate in (
        os.path.join(_PACKAGE_DIR, "compat"),  # installed wheel (force-include)
        os.path.join(os.path.dirname(_PACKAGE_DIR), "compat"),  # source checkout / editable install
    ):
        if os.path.isdir(candidate):
            return candidate
    raise CompatDataError(f"compat data not found next to {_PACKAGE_DIR}; the installation is incomplete")


def table_names() -> list[str]:
    """The data files shipped, by name (``cuda`` for compat/cuda.toml)."""
    return sorted(n[:-5] for n in os.listdir(compat_dir()) if n.endswith(".toml"))


class Table:
    """One parsed file: its name, kind and date (``meta.updated``), and its records as rows on demand.

    Compared and hashed by identity: each file is parsed once per directory (see :func:`load_table`).
    """

    __slots__ = ("data", "kind", "name", "updated")

    def __init__(self, name: str, kind: str, updated: datetime.date, data: Mapping[str, Any]) -> None:
        self.name = name  #: ``cuda`` for compat/cuda.toml
        self.kind = kind
        self.updated = updated
        self.data = data  #: the parsed TOML; only this package reads it

    def rows(self, key: str) -> tuple[Any, ...]:
        """The ``[[key]]`` records as rows of the type the file's kind declares for them."""
        return _rows(self, key)

    def select(self, key: str, wanted: Callable[[Mapping[str, Any]], bool]) -> tuple[Any, ...]:
        """The ``[[key]]`` records ``wanted`` accepts (it sees each record as read), as rows: only those are made
        into rows, as :meth:`find` does for one (a check asking about one GPU does not build the 365 of the
        device table)."""
        row_type = _row_type(self, key, single=False)
        try:
            return tuple(build_row(row_type, record) for record in self.data.get(key, ()) if wanted(record))
        except Exception as exc:  # as in _rows
            raise _invalid(self, exc) from exc

    def find(self, key: str, field: str, value: Any) -> Any | None:
        """The first ``[[key]]`` record whose ``field`` is ``value``, as a row (None: no such record).

        Only that record is made into a row: a check that needs one release of a long table does
        not pay for parsing every specifier of the others.
        """
        row_type = _row_type(self, key, single=False)
        convert = next(f.convert for f in row_fields(row_type) if f.name == field)
        try:
            record = next((r for r in self.data.get(key, ()) if field in r and convert(r[field]) == value), None)
            return build_row(row_type, record) if record is not None else None
        except Exception as exc:  # as in _rows
            raise _invalid(self, exc) from exc

    def single(self, key: str) -> Any | None:
        """The ``[key]`` table as a row, or None when the file has none."""
        return _single(self, key)


def validate_meta(name: str, data: Mapping[str, Any]) -> list[str]:
    """Problems with a table's ``[meta]`` block, each as ``file: field: message``."""
    problems: list[str] = []
    meta = data.get("meta")
    if not isinstance(meta, Mapping):
        return [f"{name}: meta: missing [meta] block"]
    problems.extend(
        f"{name}: meta.{key}: missing" for key in ("schema", "kind", "covers", "updated", "sources") if key not in meta
    )
    if "updated" in meta and not isinstance(meta["updated"], datetime.date):
        problems.append(f"{name}: meta.updated: not a date")
    sources = meta.get("sources", [])
    if not isinstance(sources, list) or not sources:
        return [*problems, f"{name}: meta.sources: needs at least one source"]
    ids = [s.get("id") for s in sources if isinstance(s, Mapping)]
    for i, source in enumerate(sources):
        if not isinstance(source, Mapping) or not source.get("id") or not source.get("url"):
            problems.append(f"{name}: meta.sources[{i}]: needs id and url")
    problems.extend(f"{name}: meta.sources: id {i!r} listed twice" for i in {i for i in ids if ids.count(i) > 1})
    return problems


def validate_table(name: str, data: Mapping[str, Any]) -> list[str]:
    """Every problem in one file: meta, record fields and types, source ids, order."""
    problems = validate_meta(name, data)
    found = data.get("meta")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    kind = meta.get("kind")
    layout = LAYOUTS.get(kind) if isinstance(kind, str) else None
    if layout is None:
        return [*problems, f"{name}: meta.kind: unknown kind {kind!r}"]
    source_ids = {s.get("id") for s in meta.get("sources", []) if isinstance(s, Mapping)}
    for key, value in data.items():
        if key == "meta":
            continue
        if key in layout.singles:
            problems.extend(_record_problems(layout.singles[key], value, f"{name}: {key}", source_ids))
        elif key not in layout.arrays:
            problems.append(f"{name}: {key}: not a known table for kind {kind!r}")
        elif not isinstance(value, list):
            problems.append(f"{name}: {key}: expected an array of tables ([[{key}]])")
        else:
            row_type = layout.arrays[key]
            for index, record in enumerate(value):
                problems.extend(_record_problems(row_type, record, f"{name}: {key}[{index}]", source_ids))
            problems.extend(_order_problems(f"{name}: {key}", value, row_type))
    return problems


def _record_problems(row_type: type, record: Any, where: str, source_ids: set[Any]) -> list[str]:
    if not isinstance(record, dict):
        return [f"{where}: expected a table"]
    return [*_source_problems(where, record, source_ids), *record_problems(row_type, record, where)]


def _source_problems(where: str, record: Mapping[str, Any], source_ids: set[Any]) -> list[str]:
    cited = record.get("sources", [record["source"]] if "source" in record else [])
    if not isinstance(cited, list) or not cited:
        return [f"{where}: no source (every record names its evidence)"]
    return [f"{where}.source: {c!r} is not in meta.sources" for c in cited if c not in source_ids]


def _order_problems(where: str, records: list[Any], row_type: type) -> list[str]:
    """Records keyed by a ``version`` field must be newest first."""
    if not any(f.name == "version" for f in row_fields(row_type)):
        return []
    versions = []
    for record in records:
        try:
            versions.append(Version(record["version"]))
        except Exception:
            return []
    return [
        f"{where}: {a} is listed before {b}; records go newest first" for a, b in itertools.pairwise(versions) if a < b
    ]


def load_table(name: str, *, validate: bool = False) -> Table:
    """``compat/<name>.toml``, parsed; raise :class:`CompatDataError` naming every problem.

    ``validate=True`` checks every record (for data that can change, and for the tests); otherwise
    only the ``[meta]`` block is checked (see the module's docstring).
    """
    return _load(compat_dir(), name, validate)


@functools.cache
def _load(directory: str, name: str, validate: bool) -> Table:
    # Keyed by directory: the files of one directory cannot change during a run, and a test that
    # points compat_dir elsewhere gets that directory's tables without clearing anything.
    where = f"compat/{name}.toml"
    path = os.path.join(directory, f"{name}.toml")
    cached = load_prebuilt(path)  # the wheel's copy (none in a source checkout), else the user cache's
    if cached is None:
        cached = load_cached(path)
    if cached is not None:
        return parse_table(name, cached, validate=validate)
    # Imported here: a run that finds every table in the parsed cache never loads the TOML parser.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        data = tomllib.loads(read_file(path, 16 << 20).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CompatDataError(f"{where}: not UTF-8") from exc
    except OSError as exc:
        raise CompatDataError(f"{where}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CompatDataError(f"{where}: not valid TOML: {exc}") from exc
    table = parse_table(name, data, validate=validate)
    store(path, data)  # kept only once it loaded without a problem
    return table


def parse_table(name: str, data: Mapping[str, Any], *, validate: bool = True) -> Table:
    """A parsed file as a :class:`Table` (``validate``: every record, else the ``[meta]`` block only)."""
    where = f"compat/{name}.toml"
    problems = validate_table(where, data) if validate else validate_meta(where, data)
    if problems:
        raise CompatDataError(f"{len(problems)} problem(s) in compat data: " + "; ".join(problems))
    return Table(name, str(data["meta"]["kind"]), data["meta"]["updated"], data)


def _row_type(table: Table, key: str, *, single: bool) -> type:
    layout = LAYOUTS.get(table.kind)
    types = (layout.singles if single else layout.arrays) if layout is not None else {}
    if key not in types:
        raise CompatDataError(f"compat/{table.name}.toml: {key}: not a known table for kind {table.kind!r}")
    return types[key]


@functools.cache
def _rows(table: Table, key: str) -> tuple[Any, ...]:
    row_type = _row_type(table, key, single=False)
    try:
        return tuple(build_row(row_type, record) for record in table.data.get(key, ()))
    except Exception as exc:
        raise _invalid(table, exc) from exc


@functools.cache
def _single(table: Table, key: str) -> Any | None:
    row_type = _row_type(table, key, single=True)
    try:
        return build_row(row_type, table.data[key]) if key in table.data else None
    except Exception as exc:
        raise _invalid(table, exc) from exc


def _invalid(table: Table, exc: Exception) -> CompatDataError:
    """The full validation's problems, for a file whose records could not be made into rows."""
    problems = validate_table(f"compat/{table.name}.toml", table.data) or [f"compat/{table.name}.toml: {exc}"]
    return CompatDataError(f"{len(problems)} problem(s) in compat data: " + "; ".join(problems))
