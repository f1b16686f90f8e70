"""Loading the compatibility data in ``compat/``: find it, parse it, and check its meta block.

``compat/`` sits at the top of the repository and is shipped inside the wheel as
``cudadoctor/compat`` (see ``pyproject.toml``). The code never holds compatibility numbers; it
reads them from here. Every problem found in a file is collected and reported at once.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from typing import Any

from cudadoctor.errors import CompatDataError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["CompatMatrix", "compat_dir", "load_table", "validate_meta"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def compat_dir() -> str:
    """The compat/ directory in use: the wheel's copy, else the source checkout's."""
    for candidate in (
        os.path.join(_PACKAGE_DIR, "compat"),  # installed wheel (force-include)
        os.path.join(os.path.dirname(_PACKAGE_DIR), "compat"),  # source checkout / editable install
    ):
        if os.path.isdir(candidate):
            return candidate
    raise CompatDataError(f"compat data not found next to {_PACKAGE_DIR}; the installation is incomplete")


def validate_meta(name: str, data: Mapping[str, Any]) -> list[str]:
    """Problems with a table's ``[meta]`` block, each as ``file: field: message``."""
    problems: list[str] = []
    meta = data.get("meta")
    if not isinstance(meta, Mapping):
        return [f"{name}: meta: missing [meta] block"]
    for key in ("schema", "kind", "covers", "updated", "sources"):
        if key not in meta:
            problems.append(f"{name}: meta.{key}: missing")
    sources = meta.get("sources", [])
    if not isinstance(sources, list) or not sources:
        problems.append(f"{name}: meta.sources: needs at least one source")
    else:
        for i, source in enumerate(sources):
            if not isinstance(source, Mapping) or not source.get("id") or not source.get("url"):
                problems.append(f"{name}: meta.sources[{i}]: needs id and url")
    return problems


@functools.cache
def load_table(name: str) -> dict[str, Any]:
    """Parse ``compat/<name>.toml``; raise :class:`CompatDataError` naming every problem."""
    path = os.path.join(compat_dir(), f"{name}.toml")
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise CompatDataError(f"compat/{name}.toml: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CompatDataError(f"compat/{name}.toml: not valid TOML: {exc}") from exc
    problems = validate_meta(f"compat/{name}.toml", data)
    if problems:
        raise CompatDataError("; ".join(problems))
    return data


class CompatMatrix:
    """The compatibility tables, each loaded (and validated) the first time a check asks for it."""

    def table(self, name: str) -> dict[str, Any]:
        return load_table(name)
