"""The `cudadoctor update` cache file: its format and version, validating it, reading it, writing it atomically.

``<cache dir>/index-releases.json`` is one JSON document (``kind``, ``schema_version``, ``index``,
``updated``, ``packages``). It is validated in full before it is written and again when it is
read: a cache that fails is never used, and a refresh that would write one fails instead. It is
replaced atomically (a temporary file in the same directory, fsync, then ``os.replace``, which
POSIX makes atomic: https://docs.python.org/3/library/os.html#os.replace), so a failure at any
point leaves the previous cache byte for byte as it was.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudadoctor.bounded import loads_json
from cudadoctor.cachedir import CACHE_FILE
from cudadoctor.fileread import read_file
from cudadoctor.pipconfig import redacted
from cudadoctor.update.errors import UpdateError
from cudadoctor.update.names import PROJECT_NAME, TOKEN, is_http_url, is_pin, is_safe_filename
from cudadoctor.update.records import STATUS_READ, STATUSES, IndexData, ReleaseRecord

__all__ = [
    "CACHE_FILE",
    "CACHE_KIND",
    "SCHEMA_VERSION",
    "document",
    "load_cache",
    "save_cache",
    "validate_index_document",
    "write_atomic",
]

CACHE_KIND = "cudadoctor-index-data"
SCHEMA_VERSION = 1
#: A cache larger than this is not read (a refresh of the default packages writes well under 1 MiB).
_MAX_CACHE_BYTES = 64 << 20


def _date_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return "expected an ISO date string"
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return f"{value[:40]!r} is not an ISO date"
    return None


def _record_problems(where: str, key: str, rec: Any) -> list[str]:
    if not isinstance(rec, dict):
        return [f"{where}: expected an object"]
    problems = []
    expected = set(ReleaseRecord.__dataclass_fields__)
    problems += [f"{where}.{k}: unknown field" for k in sorted(set(rec) - expected)]
    problems += [f"{where}.{k}: missing" for k in sorted(expected - set(rec))]
    if problems:
        return problems
    if rec["version"] != key:
        problems.append(f"{where}.version: {rec['version']!r} differs from its key")
    rp = rec["requires_python"]
    if rp is not None and not (isinstance(rp, str) and 0 < len(rp) <= 2000):
        problems.append(f"{where}.requires_python: expected a short string or null")
    pins = rec["pins"]
    if not isinstance(pins, list) or not all(isinstance(p, str) and len(p) <= 4000 and is_pin(p) for p in pins):
        problems.append(f"{where}.pins: expected a list of framework/CUDA requirements")
    for k in ("python_tags", "platforms"):
        items = rec[k]
        if not isinstance(items, list) or not all(isinstance(t, str) and TOKEN.match(t) for t in items):
            problems.append(f"{where}.{k}: expected a list of tags")
    for k in ("abi3", "yanked"):
        if not isinstance(rec[k], bool):
            problems.append(f"{where}.{k}: expected true or false")
    if rec["derived"] is not True:
        problems.append(f"{where}.derived: must be true")
    wheel = rec["wheel"]
    if wheel is not None and not (isinstance(wheel, str) and is_safe_filename(wheel) and wheel.endswith(".whl")):
        problems.append(f"{where}.wheel: expected a wheel file name or null")
    status, url = rec["metadata"], rec["metadata_url"]
    if status not in STATUSES:
        problems.append(f"{where}.metadata: expected one of {', '.join(STATUSES)}")
    elif status == STATUS_READ:
        if not (isinstance(url, str) and is_http_url(url) and redacted(url) == url):
            problems.append(f"{where}.metadata_url: expected an http(s) URL without credentials")
    elif url is not None:
        problems.append(f"{where}.metadata_url: must be null when metadata is {status!r}")
    problem = _date_problem(rec["fetched"])
    if problem:
        problems.append(f"{where}.fetched: {problem}")
    return problems


def validate_index_document(doc: Any) -> list[str]:
    """Every problem in a cache document (``where: message``); empty when it may be written or used."""
    if not isinstance(doc, dict):
        return ["expected a JSON object"]
    problems = _header_problems(doc)
    packages = doc.get("packages")
    if not isinstance(packages, dict):
        return [*problems, "packages: expected an object"]
    for name, entry in packages.items():
        problems.extend(_package_problems(name, entry))
        if len(problems) > 50:
            return [*problems[:50], "… more problems not listed"]
    return problems


def _header_problems(doc: Mapping[str, Any]) -> list[str]:
    problems = []
    if doc.get("kind") != CACHE_KIND:
        problems.append(f"kind: expected {CACHE_KIND!r}")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version != SCHEMA_VERSION:
        problems.append(f"schema_version: expected {SCHEMA_VERSION}, found {version!r}")
    problems += [
        f"{k}: unknown field" for k in sorted(set(doc) - {"kind", "schema_version", "index", "updated", "packages"})
    ]
    index = doc.get("index")
    if not (isinstance(index, str) and is_http_url(index) and redacted(index) == index):
        problems.append("index: expected an http(s) URL without credentials")
    problem = _date_problem(doc.get("updated"))
    if problem:
        problems.append(f"updated: {problem}")
    return problems


def _package_problems(name: Any, entry: Any) -> list[str]:
    where = f"packages.{name}"
    if not isinstance(name, str) or not PROJECT_NAME.match(name) or canonicalize_name(name) != name:
        return [f"{where}: not a canonical project name"]
    if not isinstance(entry, dict) or set(entry) != {"releases"} or not isinstance(entry["releases"], dict):
        return [f'{where}: expected {{"releases": {{…}}}}']
    problems = []
    for key, rec in entry["releases"].items():
        try:
            normal = str(Version(key))
        except (InvalidVersion, TypeError):
            problems.append(f"{where}.releases.{key}: not a PEP 440 version")
            continue
        if normal != key:
            problems.append(f"{where}.releases.{key}: not normalized (write {normal})")
            continue
        problems.extend(_record_problems(f"{where}.releases.{key}", key, rec))
    return problems


def document(index: str, updated: datetime.date, packages: Mapping[str, Mapping[str, ReleaseRecord]]) -> dict[str, Any]:
    return {
        "kind": CACHE_KIND,
        "schema_version": SCHEMA_VERSION,
        "index": index,
        "updated": updated.isoformat(),
        "packages": {
            name: {
                "releases": {
                    v: packages[name][v].to_json()
                    for v in sorted(packages[name], key=Version, reverse=True)  # newest first
                }
            }
            for name in sorted(packages)
        },
    }


def load_cache(cache_dir: str) -> tuple[IndexData | None, str | None]:
    """The cached index data, and a warning when the cache exists but cannot be used. Never raises.

    :return: ``(data, None)``; ``(None, None)`` when there is no cache; ``(None, warning)`` when it is
        unreadable, not JSON, or fails :func:`validate_index_document` (run ``cudadoctor update``)
    """
    path = os.path.join(cache_dir, CACHE_FILE)
    hint = "run `cudadoctor update` to rebuild it"
    try:
        # a FIFO here hung every `check`: regular files only; another user's (or one others may write) is not used
        raw = read_file(path, _MAX_CACHE_BYTES + 1, private=True)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path}: cannot read ({exc.strerror or exc}); {hint}"
    if len(raw) > _MAX_CACHE_BYTES:
        return None, f"{path}: larger than {_MAX_CACHE_BYTES >> 20} MiB; {hint}"
    try:
        doc = loads_json(raw)
    except ValueError:
        return None, f"{path}: not valid JSON; {hint}"
    try:
        problems = validate_index_document(doc)
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            return None, f"{path}: {problems[0]}{more}; {hint}"
        return (
            IndexData(
                doc["index"],
                datetime.date.fromisoformat(doc["updated"]),
                {
                    name: {v: ReleaseRecord.from_json(r) for v, r in entry["releases"].items()}
                    for name, entry in doc["packages"].items()
                },
            ),
            None,
        )
    except Exception as exc:  # the contract is "never raises": a validator gap must not break `check`
        return None, f"{path}: unusable ({type(exc).__name__}); {hint}"


def save_cache(
    cache_dir: str, index: str, updated: datetime.date, packages: Mapping[str, Mapping[str, ReleaseRecord]]
) -> str:
    """Validate the whole document, then write it atomically; return the cache file's path.

    :raises UpdateError: the document fails :func:`validate_index_document`, or it cannot be written
    """
    doc = document(index, updated, packages)
    problems = validate_index_document(doc)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UpdateError(f"refusing to write the cache: {problems[0]}{more}")
    return write_atomic(cache_dir, (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def write_atomic(cache_dir: str, data: bytes) -> str:
    """Write ``data`` as the cache file through a temporary file in the same directory and os.replace."""
    path = os.path.join(cache_dir, CACHE_FILE)
    try:
        # never writable by others when made here: its file would not be read (a directory the user named is theirs
        # to set: a file in one others may write is refused when read, saying so)
        os.makedirs(cache_dir, mode=0o755, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".index-releases.", suffix=".tmp", dir=cache_dir)
    except OSError as exc:
        raise UpdateError(f"cannot write the cache in {cache_dir}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UpdateError(f"cannot write the cache {path}: {exc.strerror or exc}") from None
        raise
    return path
