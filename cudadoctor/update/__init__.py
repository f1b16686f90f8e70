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
    from cudadoctor.cachedir import default_cache_dir
    from cudadoctor.update.cache import CACHE_FILE, load_cache, validate_index_document
    from cudadoctor.update.errors import FetchError, UpdateError
    from cudadoctor.update.fetch import ACCEPT_INDEX, ACCEPT_METADATA, Fetch, HttpFetcher
    from cudadoctor.update.index import IndexFile, parse_simple_html, parse_simple_json
    from cudadoctor.update.metadata import CoreMetadata, MetadataRead, parse_core_metadata
    from cudadoctor.update.names import is_pin
    from cudadoctor.update.orchestrate import DEFAULT_LIMIT, DEFAULT_PACKAGES, PackageSummary, UpdateResult, refresh
    from cudadoctor.update.records import IndexData, ReleaseRecord
    from cudadoctor.update.releases import release_records

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

#: public name -> the module that defines it
_HOME: dict[str, str] = {
    "ACCEPT_INDEX": "cudadoctor.update.fetch",
    "ACCEPT_METADATA": "cudadoctor.update.fetch",
    "CACHE_FILE": "cudadoctor.update.cache",
    "CoreMetadata": "cudadoctor.update.metadata",
    "DEFAULT_LIMIT": "cudadoctor.update.orchestrate",
    "DEFAULT_PACKAGES": "cudadoctor.update.orchestrate",
    "Fetch": "cudadoctor.update.fetch",
    "FetchError": "cudadoctor.update.errors",
    "HttpFetcher": "cudadoctor.update.fetch",
    "IndexData": "cudadoctor.update.records",
    "IndexFile": "cudadoctor.update.index",
    "MetadataRead": "cudadoctor.update.metadata",
    "PackageSummary": "cudadoctor.update.orchestrate",
    "ReleaseRecord": "cudadoctor.update.records",
    "UpdateError": "cudadoctor.update.errors",
    "UpdateResult": "cudadoctor.update.orchestrate",
    "default_cache_dir": "cudadoctor.cachedir",
    "is_pin": "cudadoctor.update.names",
    "load_cache": "cudadoctor.update.cache",
    "parse_core_metadata": "cudadoctor.update.metadata",
    "parse_simple_html": "cudadoctor.update.index",
    "parse_simple_json": "cudadoctor.update.index",
    "refresh": "cudadoctor.update.orchestrate",
    "release_records": "cudadoctor.update.releases",
    "validate_index_document": "cudadoctor.update.cache",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
