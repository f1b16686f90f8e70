"""``cudadoctor update``: release facts read from a package index into the user cache, and read back.

The package is split by job: reading index pages and core metadata, fetching over HTTP, the
cache file, the refresh that ties them together, and deriving compatibility rows from the cache
(:mod:`cudadoctor.update.derive`, the only part ``cudadoctor check`` uses).

The public names below are loaded on first use (PEP 562 module ``__getattr__``,
https://peps.python.org/pep-0562/, the pattern of https://scientific-python.org/specs/spec-0001/):
importing the package, or :mod:`~cudadoctor.update.derive`, loads none of the refresh machinery,
so ``check`` stays as fast as before this was a package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudadoctor.update.orchestrate import (
        ACCEPT_INDEX,
        ACCEPT_METADATA,
        CACHE_FILE,
        DEFAULT_LIMIT,
        DEFAULT_PACKAGES,
        CoreMetadata,
        Fetch,
        FetchError,
        HttpFetcher,
        IndexData,
        IndexFile,
        MetadataRead,
        PackageSummary,
        ReleaseRecord,
        UpdateError,
        UpdateResult,
        default_cache_dir,
        is_pin,
        load_cache,
        parse_core_metadata,
        parse_simple_html,
        parse_simple_json,
        refresh,
        release_records,
        validate_index_document,
    )

__all__ = [
    "ACCEPT_INDEX",
    "ACCEPT_METADATA",
    "CACHE_FILE",
    "DEFAULT_LIMIT",
    "DEFAULT_PACKAGES",
    "CoreMetadata",
    "Fetch",
    "FetchError",
    "HttpFetcher",
    "IndexData",
    "IndexFile",
    "MetadataRead",
    "PackageSummary",
    "ReleaseRecord",
    "UpdateError",
    "UpdateResult",
    "default_cache_dir",
    "is_pin",
    "load_cache",
    "parse_core_metadata",
    "parse_simple_html",
    "parse_simple_json",
    "refresh",
    "release_records",
    "validate_index_document",
]

#: public name -> the submodule that defines it
_HOME: dict[str, str] = {
    "ACCEPT_INDEX": "orchestrate",
    "ACCEPT_METADATA": "orchestrate",
    "CACHE_FILE": "orchestrate",
    "DEFAULT_LIMIT": "orchestrate",
    "DEFAULT_PACKAGES": "orchestrate",
    "CoreMetadata": "orchestrate",
    "Fetch": "orchestrate",
    "FetchError": "orchestrate",
    "HttpFetcher": "orchestrate",
    "IndexData": "orchestrate",
    "IndexFile": "orchestrate",
    "MetadataRead": "orchestrate",
    "PackageSummary": "orchestrate",
    "ReleaseRecord": "orchestrate",
    "UpdateError": "orchestrate",
    "UpdateResult": "orchestrate",
    "default_cache_dir": "orchestrate",
    "is_pin": "orchestrate",
    "load_cache": "orchestrate",
    "parse_core_metadata": "orchestrate",
    "parse_simple_html": "orchestrate",
    "parse_simple_json": "orchestrate",
    "refresh": "orchestrate",
    "release_records": "orchestrate",
    "validate_index_document": "orchestrate",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
