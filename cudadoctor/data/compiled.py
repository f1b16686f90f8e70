"""A parsed copy of each compat/ file as JSON, so that a run need not parse TOML.

``tomllib`` is pure Python: the tables one ``check`` reads cost about 30 ms to parse on an H200 host
(and importing it compiles a dozen regular expressions), the C JSON decoder about 2 ms. Two copies:

- **shipped**: the wheel carries ``compat/<name>.json`` next to each ``<name>.toml``, written when the wheel is
  built (``hatch_build.py``, :func:`prebuilt_text`) and tied to the TOML's size and CRC-32, so the very first run
  after ``pip install`` parses no TOML either, and a TOML edited in place is parsed again (:func:`load_prebuilt`);
- **user cache**: for a source checkout or an editable install, the parse is kept in the user cache directory,
  keyed by the file's absolute path, size, mtime, change time and inode (:func:`load_cached`, :func:`store`).

The TOML stays the only source of truth and is still validated on every load
(:func:`cudadoctor.data.load.parse_table`). A missing, foreign or unwritable copy costs nothing but the parse.
TOML dates (only ``meta`` uses them) are stored as ``{"\\u0000date": "YYYY-MM-DD"}`` and restored on reading.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import zlib
from typing import Any

from cudadoctor.cachedir import default_cache_dir, write_private
from cudadoctor.fileread import read_file

__all__ = ["load_cached", "load_prebuilt", "prebuilt_path", "prebuilt_text", "store"]

_FORMAT = 1
_DATE = "\u0000date"
#: A cached table is never read past this size (the largest compat file parses to ~200 KB of JSON).
_MAX_BYTES = 16 << 20


def _key(path: str) -> list[Any] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    # the change time and inode too: a same-size table with its mtime set back is parsed again (os.utime cannot
    # restore a change time)
    return [_FORMAT, os.path.abspath(path), info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def _where(path: str) -> str:
    """One cache file per table and installation: two installs (two virtual environments) run one after the other
    would otherwise replace each other's copy on every run and both parse TOML every time."""
    name = os.path.splitext(os.path.basename(path))[0]
    install = zlib.crc32(os.path.dirname(os.path.abspath(path)).encode("utf-8", "surrogateescape"))
    return os.path.join(default_cache_dir(), "compat", f"{name}-{install:08x}.json")


def _encode(value: Any) -> Any:
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return {_DATE: value.isoformat()}
    if isinstance(value, (datetime.datetime, datetime.time)):
        raise TypeError("only TOML local dates are cached")
    raise TypeError(f"not JSON: {type(value).__name__}")


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _DATE in obj:
        return datetime.date.fromisoformat(obj[_DATE])
    return obj


def prebuilt_path(path: str) -> str:
    """Where the wheel keeps the parsed copy of the compat file at ``path``: beside it, ``.json`` for ``.toml``."""
    return os.path.splitext(path)[0] + ".json"


def _source_key(source: bytes) -> list[int]:
    return [_FORMAT, len(source), zlib.crc32(source)]


def prebuilt_text(source: bytes, data: dict[str, Any]) -> str:
    """The shipped copy of a compat file whose bytes are ``source`` and which parses to ``data``.

    :raises TypeError: ``data`` holds a value JSON cannot (a TOML time or date-time); ship no copy then.
    """
    return json.dumps({"toml": _source_key(source), "data": data}, default=_encode, separators=(",", ":"))


def load_prebuilt(path: str) -> dict[str, Any] | None:
    """The parsed table of ``path`` from the copy the wheel ships beside it, or None (no copy, or not of these
    bytes: a TOML edited after the build is parsed again)."""
    try:
        raw = read_file(prebuilt_path(path), _MAX_BYTES)  # first: a source checkout has none, and stops here
        source = read_file(path, _MAX_BYTES)
        document = json.loads(raw, object_hook=_decode)
    except (OSError, ValueError, TypeError, RecursionError):
        return None
    if not isinstance(document, dict) or document.get("toml") != _source_key(source):
        return None
    data = document.get("data")
    return data if isinstance(data, dict) else None


def load_cached(path: str) -> dict[str, Any] | None:
    """The parsed table of ``path`` from the cache, or None (absent, stale, foreign or unreadable)."""
    key = _key(path)
    if key is None:
        return None
    try:
        raw = read_file(_where(path), _MAX_BYTES, private=True)  # never a copy another user could have written
        document = json.loads(raw, object_hook=_decode)
    except (OSError, ValueError, TypeError, RecursionError):
        return None  # a planted file nested a million deep is as unusable as a missing one
    if not isinstance(document, dict) or document.get("key") != key or not isinstance(document.get("data"), dict):
        return None
    data: dict[str, Any] = document["data"]
    return data


def store(path: str, data: dict[str, Any]) -> None:
    """Keep ``data`` (``path`` parsed) for the next run; silently nothing when it cannot be written."""
    key = _key(path)
    if key is None:
        return
    target = _where(path)
    try:
        text = json.dumps({"key": key, "data": data}, default=_encode, separators=(",", ":"))
    except (TypeError, ValueError):
        return  # a value JSON cannot hold: parse it every time
    if not write_private(target, text):
        return
    with contextlib.suppress(OSError):  # the copy of the one-file-per-table layout (before 2026-12-01) is stale
        os.unlink(os.path.join(os.path.dirname(target), os.path.splitext(os.path.basename(path))[0] + ".json"))
