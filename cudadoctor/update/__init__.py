"""``cudadoctor update``: release facts read from a package index into the user cache, and read back.

The package is split by job: reading index pages and core metadata, fetching over HTTP, the
cache file and the refresh that ties them together. The compatibility rows derived from the cache belong to
the data layer (:mod:`cudadoctor.data.indexed`, the only reader ``cudadoctor check`` uses), which imports the cache
reader from here, never the other way.

The public names below are loaded on first use (PEP 562 module ``__getattr__``,
https://peps.python.org/pep-0562/, the pattern of https://scientific-python.org/specs/spec-0001/):
importing the package, or :mod:`~cudadoctor.data.indexed`, loads none of the refresh machinery,
so ``check`` stays as fast as before this was a package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
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
    "ACCEPT_INDEX": "fetch",
    "ACCEPT_METADATA": "fetch",
    "CACHE_FILE": "cache",
    "CoreMetadata": "metadata",
    "DEFAULT_LIMIT": "orchestrate",
    "DEFAULT_PACKAGES": "orchestrate",
    "Fetch": "fetch",
    "FetchError": "errors",
    "HttpFetcher": "fetch",
    "IndexData": "records",
    "IndexFile": "index",
    "MetadataRead": "metadata",
    "PackageSummary": "orchestrate",
    "ReleaseRecord": "records",
    "UpdateError": "errors",
    "UpdateResult": "orchestrate",
    "default_cache_dir": "cachedir",
    "is_pin": "names",
    "load_cache": "cache",
    "parse_core_metadata": "metadata",
    "parse_simple_html": "index",
    "parse_simple_json": "index",
    "refresh": "orchestrate",
    "release_records": "releases",
    "validate_index_document": "cache",
}
#: each module's import written out, never a computed name (tests/security/test_static.py audits that)
_LOAD: dict[str, Callable[[], ModuleType]] = {
    "cachedir": lambda: importlib.import_module("cudadoctor.cachedir"),
    "cache": lambda: importlib.import_module("cudadoctor.update.cache"),
    "errors": lambda: importlib.import_module("cudadoctor.update.errors"),
    "fetch": lambda: importlib.import_module("cudadoctor.update.fetch"),
    "index": lambda: importlib.import_module("cudadoctor.update.index"),
    "metadata": lambda: importlib.import_module("cudadoctor.update.metadata"),
    "names": lambda: importlib.import_module("cudadoctor.update.names"),
    "orchestrate": lambda: importlib.import_module("cudadoctor.update.orchestrate"),
    "records": lambda: importlib.import_module("cudadoctor.update.records"),
    "releases": lambda: importlib.import_module("cudadoctor.update.releases"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_LOAD[home](), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
