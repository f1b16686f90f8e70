"""The records of the `cudadoctor update` cache: what the index says about one release, and the whole cache.

Kept apart from the code that reads and writes the cache file so that
:mod:`cudadoctor.data.indexed` can name them without loading anything else.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from cudadoctor.record import record

__all__ = ["STATUSES", "STATUS_NO_WHEEL", "STATUS_READ", "STATUS_UNAVAILABLE", "IndexData", "ReleaseRecord"]

#: ``metadata`` values of a record: read from ``metadata_url``; the release has no wheel (sdist
#: only, nothing to read); every wheel tried answered 404 or declared no metadata (tried again next time).
STATUS_READ, STATUS_NO_WHEEL, STATUS_UNAVAILABLE = "read", "no-wheel", "unavailable"
STATUSES = (STATUS_READ, STATUS_NO_WHEEL, STATUS_UNAVAILABLE)


@record
class ReleaseRecord:
    """What the index says about one release (one record of the cache)."""

    version: str  #: normalized PEP 440 version
    requires_python: str | None  #: from the metadata, else from the index
    pins: tuple[str, ...]  #: Requires-Dist lines naming frameworks or CUDA wheels, as written (markers kept)
    python_tags: tuple[str, ...]  #: ``cp39`` …, ``cp313t`` for free-threaded builds, ``py3`` for pure wheels
    abi3: bool  #: some wheel is built for the stable ABI (one wheel serves every later CPython)
    platforms: tuple[str, ...]  #: ``manylinux_x86_64``, ``manylinux_aarch64``, ``win_amd64``, ``macosx_arm64``, ``any``
    yanked: bool  #: every file of the release is yanked
    wheel: str | None  #: the wheel whose metadata was read (or would have been)
    metadata: str  #: ``read``, ``no-wheel`` or ``unavailable``
    metadata_url: str | None  #: the metadata file read (None unless ``metadata == "read"``)
    fetched: str  #: UTC date (ISO) of the read
    derived: bool = True  #: computed from the index, not curated

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "requires_python": self.requires_python,
            "pins": list(self.pins),
            "python_tags": list(self.python_tags),
            "abi3": self.abi3,
            "platforms": list(self.platforms),
            "yanked": self.yanked,
            "wheel": self.wheel,
            "metadata": self.metadata,
            "metadata_url": self.metadata_url,
            "fetched": self.fetched,
            "derived": self.derived,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReleaseRecord:
        """Build from a record that :func:`validate_index_document` accepted."""
        return cls(
            version=data["version"],
            requires_python=data["requires_python"],
            pins=tuple(data["pins"]),
            python_tags=tuple(data["python_tags"]),
            abi3=data["abi3"],
            platforms=tuple(data["platforms"]),
            yanked=data["yanked"],
            wheel=data["wheel"],
            metadata=data["metadata"],
            metadata_url=data["metadata_url"],
            fetched=data["fetched"],
            derived=data["derived"],
        )


@record
class IndexData:
    """The cache: per package, its releases (newest first) by version string."""

    index: str  #: the index they were read from (credentials masked)
    updated: datetime.date
    packages: Mapping[str, Mapping[str, ReleaseRecord]]
