"""Project settings for the CI gate: ``[tool.cudadoctor]`` in pyproject.toml, or ``.cudadoctor.toml``.

Looked up from the working directory upwards; the first directory holding either file wins
(``.cudadoctor.toml`` first). Keys: ``ignore`` and ``select`` (lists of codes, prefixes or names),
``require`` (a list of requirement strings, as ``--require``), ``fail-on`` (``error``, ``warning``
or ``never``). Command-line flags add to ``ignore`` and ``require`` and replace the others.
"""

from __future__ import annotations

import os
import sys
from dataclasses import field
from typing import Any

from cudadoctor.errors import UsageError
from cudadoctor.fileread import read_named_file
from cudadoctor.record import record

__all__ = ["FAIL_ON", "Settings", "find_settings", "parse_settings"]

FAIL_ON = ("error", "warning", "never")
_KEYS = {"ignore", "select", "require", "fail-on"}


@record
class Settings:
    """The settings of a configuration file: checks ignored or selected, requirements and ``fail-on``."""

    ignore: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    require: tuple[str, ...] = ()
    fail_on: str | None = None
    path: str | None = None  #: the file the settings came from
    unknown: tuple[str, ...] = field(default=())


def _strings(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: {key} must be a list of strings")
    return tuple(value)


def parse_settings(path: str, table: dict[str, Any]) -> Settings:
    """Settings from the cudadoctor table of ``path``; UsageError naming the file and key when wrong."""
    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in FAIL_ON:
        raise UsageError(f"{path}: fail-on must be one of {', '.join(FAIL_ON)}, not {repr(fail_on)[:60]}")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        shown = ", ".join(k if k.isprintable() else repr(k) for k in unknown)
        raise UsageError(f"{path}: unknown setting(s) {shown} (known: {', '.join(sorted(_KEYS))})")
    return Settings(
        ignore=_strings(path, "ignore", table.get("ignore", [])),
        select=_strings(path, "select", table.get("select", [])),
        require=_strings(path, "require", table.get("require", [])),
        fail_on=fail_on,
        path=path,
    )


#: The largest settings file read (a pyproject.toml is a few kilobytes).
_MAX_SETTINGS_BYTES = 1 << 20


def _load(path: str) -> dict[str, Any]:
    """The TOML document at ``path``; UsageError (one line) when it cannot be read or parsed."""
    if sys.version_info >= (3, 11):  # imported here: most runs find no settings file to parse
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    data = read_named_file(path, _MAX_SETTINGS_BYTES, "a settings file", UsageError)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {str(exc).splitlines()[0][:200]}") from None
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML: nested too deeply") from None


def find_settings(start: str | None = None) -> Settings:
    """The settings that apply in ``start`` (default: the working directory), or empty settings."""
    directory = os.path.abspath(start or os.getcwd())
    while True:
        dotfile = os.path.join(directory, ".cudadoctor.toml")
        if os.path.isfile(dotfile):
            return parse_settings(dotfile, _load(dotfile))
        pyproject = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(pyproject):
            tool = _load(pyproject).get("tool", {})
            table = tool.get("cudadoctor") if isinstance(tool, dict) else None
            if isinstance(table, dict):
                return parse_settings(pyproject, table)
        parent = os.path.dirname(directory)
        if parent == directory:
            return Settings()
        directory = parent
