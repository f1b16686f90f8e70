"""From an index page's files to cache records: group files by release, pick the wheel to read, summarise tags.

Wheel and sdist names are parsed with ``packaging.utils`` (the binary distribution format,
https://packaging.python.org/en/latest/specifications/binary-distribution-format/, and PEP 425
compatibility tags, https://peps.python.org/pep-0425/). Files that are not this project's, or not
a format ``packaging`` knows, are ignored rather than guessed at.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from cudadoctor.record import record
from cudadoctor.update.errors import UpdateError
from cudadoctor.update.index import IndexFile
from cudadoctor.update.metadata import MetadataRead
from cudadoctor.update.names import is_pin
from cudadoctor.update.records import STATUS_NO_WHEEL, STATUS_READ, STATUS_UNAVAILABLE, ReleaseRecord

__all__ = ["Dist", "group_releases", "metadata_candidates", "release_records"]

_PY_TAG = re.compile(r"^(?P<impl>[a-z]+)(?P<major>\d)(?P<minor>\d*)(?P<ft>t?)$")
_PLATFORM_ARCH = re.compile(r"_(x86_64|aarch64|i686|ppc64le|ppc64|s390x|armv7l|riscv64|arm64|universal2|intel)$")


@record
class Dist:
    """One file of a release on the index: the file, its version and its wheel tags."""

    file: IndexFile
    version: Version
    tags: frozenset[Any] | None  #: wheel tags; None for an sdist


def group_releases(name: str, files: Iterable[IndexFile]) -> dict[Version, list[Dist]]:
    """The files of ``name`` grouped by version; other files (legacy formats, other projects) are ignored."""
    canonical = canonicalize_name(name)
    grouped: dict[Version, list[Dist]] = {}
    for f in files:
        try:
            if f.filename.endswith(".whl"):
                dist_name, version, _build, tags = parse_wheel_filename(f.filename)
                dist = Dist(f, version, tags)
            else:
                dist_name, version = parse_sdist_filename(f.filename)
                dist = Dist(f, version, None)
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if canonicalize_name(dist_name) == canonical:
            grouped.setdefault(version, []).append(dist)
    return grouped


def _platform(tag: str) -> str:
    """``manylinux_2_28_x86_64`` → ``manylinux_x86_64``; ``macosx_11_0_arm64`` → ``macosx_arm64``."""
    for family in ("manylinux", "musllinux", "macosx"):
        if tag.startswith(family):
            arch = _PLATFORM_ARCH.search(tag)
            return f"{family}_{arch.group(1)}" if arch else family
    return tag


def _python_tag(interpreter: str, abi: str) -> str:
    return f"{interpreter}t" if abi == f"{interpreter}t" else interpreter


def _tag_key(tag: str) -> tuple[str, int, int, str]:
    m = _PY_TAG.match(tag)
    if not m:
        return (tag, 0, 0, "")
    return (m["impl"], int(m["major"]), int(m["minor"] or 0), m["ft"])


def _wheel_rank(dist: Dist) -> tuple[int, int, int, int, int, str]:
    """Higher is a better wheel to read metadata from: not yanked, Linux x86_64, newest CPython, not free-threaded."""
    platforms = {_platform(t.platform) for t in dist.tags or ()}
    if "manylinux_x86_64" in platforms:
        place = 5
    elif "linux_x86_64" in platforms:
        place = 4
    elif "any" in platforms:
        place = 3
    elif "manylinux_aarch64" in platforms:
        place = 2
    elif any(p.startswith(("manylinux", "linux", "musllinux")) for p in platforms):
        place = 1
    else:
        place = 0
    best = max(
        ((_tag_key(t.interpreter)[1:3], t.abi != f"{t.interpreter}t") for t in dist.tags or ()),
        default=((0, 0), False),
    )
    return (int(not dist.file.yanked), place, best[0][0], best[0][1], int(best[1]), dist.file.filename)


def metadata_candidates(dists: Iterable[Dist]) -> list[IndexFile]:
    """The wheels of one release whose metadata may be read, best first (see ``_wheel_rank``)."""
    wheels = [d for d in dists if d.tags is not None and d.file.core_metadata is not False]
    return [d.file for d in sorted(wheels, key=_wheel_rank, reverse=True)]


def release_records(
    name: str,
    files: Sequence[IndexFile],
    metadata_by_version: Mapping[str, MetadataRead | None],
    *,
    fetched: datetime.date,
) -> dict[str, ReleaseRecord]:
    """Records for the releases named in ``metadata_by_version`` (a version with no files is left out).

    :param name: the package (canonical or not)
    :param files: its index page's files
    :param metadata_by_version: version → the metadata read for it, or None when none could be read
    :param fetched: the date of the read (UTC)
    :raises UpdateError: metadata that names another project or version
    """
    grouped = {str(v): dists for v, dists in group_releases(name, files).items()}
    records: dict[str, ReleaseRecord] = {}
    for key, read in metadata_by_version.items():
        version = str(Version(key))
        dists = grouped.get(version)
        if dists:
            records[version] = _record(name, version, dists, read, fetched)
    return records


def _record(
    name: str, version: str, dists: Sequence[Dist], read: MetadataRead | None, fetched: datetime.date
) -> ReleaseRecord:
    """One release's record from its files and the metadata read for it (None: none could be read)."""
    wheels = [d for d in dists if d.tags is not None]
    tags = sorted({_python_tag(t.interpreter, t.abi) for d in wheels for t in d.tags or ()}, key=_tag_key)
    platforms = sorted({_platform(t.platform) for d in wheels for t in d.tags or ()})
    index_rp = [d.file.requires_python for d in dists if d.file.requires_python]
    requires_python = max(set(index_rp), key=index_rp.count) if index_rp else None
    pins: tuple[str, ...] = ()
    url: str | None = None
    wheel: str | None
    if read is not None:
        _check_identity(name, version, read)
        requires_python = read.metadata.requires_python or requires_python
        pins = tuple(r for r in read.metadata.requires_dist if is_pin(r))
        status, url, wheel = STATUS_READ, read.url, read.wheel
    else:
        candidates = metadata_candidates(dists)
        status = STATUS_UNAVAILABLE if wheels else STATUS_NO_WHEEL
        wheel = candidates[0].filename if candidates else None
    return ReleaseRecord(
        version=version,
        requires_python=requires_python,
        pins=pins,
        python_tags=tuple(tags),
        abi3=any(t.abi == "abi3" for d in wheels for t in d.tags or ()),
        platforms=tuple(platforms),
        yanked=all(bool(d.file.yanked) for d in dists),
        wheel=wheel,
        metadata=status,
        metadata_url=url,
        fetched=fetched.isoformat(),
    )


def _check_identity(name: str, version: str, read: MetadataRead) -> None:
    """Refuse metadata that describes another project or version than the file it was read for."""
    meta = read.metadata
    if canonicalize_name(meta.name) != canonicalize_name(name) or Version(meta.version) != Version(version):
        raise UpdateError(
            f"{read.url}: metadata names {meta.name} {meta.version}, expected {name} {version}; refusing this index"
        )
