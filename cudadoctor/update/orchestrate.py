"""The data refresh behind ``cudadoctor update``: release facts read from a package index into the user cache.

For each package (torch, vllm, jax, the nvidia-* wheels …) it reads the index page (PEP 691 JSON,
or PEP 503 HTML from mirrors that serve only that), keeps the newest releases, and for each new
release reads ONE wheel's core metadata (PEP 658 ``<wheel url>.metadata``: a few KB, never the
wheel). From those it records what the doctor needs: Requires-Python, the Requires-Dist lines that
pin frameworks and CUDA wheels (as written, markers kept), the Python tags and platforms built.
Every record is ``derived`` (computed from the index, not curated) and names the metadata file
it was read from.

The result is ``<cache dir>/index-releases.json``; :func:`load_cache` reads it back. Nothing is
written until everything fetched has been parsed and the whole document validated, and then it is
replaced atomically: any failure leaves the previous cache byte for byte as it was and raises
:class:`UpdateError` with one line. Nothing fetched is executed or imported, and no path is built
from anything the index says. Nothing here runs at import; ``requests`` is imported only by
:class:`HttpFetcher`, the default HTTP getter, which tests replace or point at 127.0.0.1.

Index page shapes, verbatim from pypi.org (2026-11-30, see tests/fixtures/update/)::

    {"meta":{"api-version":"1.1",…},"name":"vllm","files":[{"filename":"vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl",
     "hashes":{"sha256":"f3c5…"},"requires-python":"<3.13,>=3.9","url":"https://files.pythonhosted.org/…","yanked":false},…]}

    <a href="https://files.pythonhosted.org/…/vllm-0.9.2.tar.gz#sha256=6b0d…"
       data-requires-python="&lt;3.13,&gt;=3.9">vllm-0.9.2.tar.gz</a><br/>
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from email.parser import Parser
from email.policy import compat32
from html.parser import HTMLParser
from typing import Any, Protocol
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from cudadoctor import __version__
from cudadoctor.cachedir import CACHE_FILE, default_cache_dir
from cudadoctor.errors import CudadoctorError
from cudadoctor.pipconfig import PYPI_SIMPLE, IndexConfig, redacted

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

#: Packages refreshed when none are named: the frameworks the doctor checks and the CUDA wheels they pin.
DEFAULT_PACKAGES: tuple[str, ...] = (
    "torch",
    "torchvision",
    "torchaudio",
    "vllm",
    "xformers",
    "flash-attn",
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda13-plugin",
    "tensorrt",
    "tensorrt-cu12",
    "tensorrt-cu13",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "cupy-cuda12x",
    "cupy-cuda13x",
    "onnxruntime-gpu",
)
#: Newest releases per package that a refresh reads (older ones already cached are kept).
DEFAULT_LIMIT = 40
CACHE_KIND = "cudadoctor-index-data"
SCHEMA_VERSION = 1

#: JSON (PEP 691) first; HTML (PEP 503) from mirrors that serve only that.
ACCEPT_INDEX = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
ACCEPT_METADATA = "*/*"
#: Response caps, enforced while streaming: torch's whole JSON page is ~0.4 MB, a METADATA file ~30 KB.
MAX_INDEX_BYTES = 32 << 20
MAX_METADATA_BYTES = 1 << 20
#: Wheels tried per release when a ``.metadata`` file answers 404 (seen on pypi.org for some wheels).
METADATA_ATTEMPTS = 3
_MAX_CACHE_BYTES = 64 << 20

#: ``metadata`` values of a record: read from ``metadata_url``; the release has no wheel (sdist
#: only, nothing to read); every wheel tried answered 404 or declared no metadata (tried again next time).
STATUS_READ, STATUS_NO_WHEEL, STATUS_UNAVAILABLE = "read", "no-wheel", "unavailable"
_STATUSES = (STATUS_READ, STATUS_NO_WHEEL, STATUS_UNAVAILABLE)

# Requires-Dist lines kept as pins: frameworks, the CUDA wheels, and the packages refreshed by default.
_PIN_NAME = re.compile(
    r"^(?:torch|torchvision|torchaudio|triton|xformers|vllm|flash-attn|jax|jaxlib|jax-cuda\d+-(?:plugin|pjrt)"
    r"|nvidia-[a-z0-9-]+|cuda-toolkit|tensorrt[a-z0-9-]*|cupy-cuda[a-z0-9]+|onnxruntime-gpu)$"
)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_PROJECT_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$", re.IGNORECASE)
_PY_TAG = re.compile(r"^(?P<impl>[a-z]+)(?P<major>\d)(?P<minor>\d*)(?P<ft>t?)$")
_TOKEN = re.compile(r"^[a-z0-9_]{1,64}$")
_PLATFORM_ARCH = re.compile(r"_(x86_64|aarch64|i686|ppc64le|ppc64|s390x|armv7l|riscv64|arm64|universal2|intel)$")


class UpdateError(CudadoctorError):
    """The index could not be read, or what it served is not usable; the previous cache is untouched."""

    exit_code = 3


class FetchError(UpdateError):
    """One URL could not be fetched. ``status`` is the HTTP status when there was one (404 means "not there")."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = redacted(url)
        self.status = status


class Fetch(Protocol):
    """An HTTP GET: the body, or :class:`FetchError` (``status=404`` for a missing page). Called from worker threads."""

    def __call__(self, url: str, *, accept: str) -> bytes: ...


Progress = Callable[[int, int, str], None]


# --- values -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexFile:
    """One file listed on a package's index page."""

    filename: str  #: checked: no path separator, no ``..``
    url: str  #: absolute http(s) URL, fragment removed
    hashes: Mapping[str, str] = field(default_factory=dict)
    requires_python: str | None = None
    #: False, True, or the reason given
    yanked: bool | str = False
    #: PEP 658/714: None when the index does not say, False when it says none, True or {algo: digest} when served
    core_metadata: bool | Mapping[str, str] | None = None

    @property
    def metadata_url(self) -> str:
        """Where PEP 658 puts this file's core metadata: the file URL with ``.metadata`` appended."""
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path + ".metadata", parts.query, ""))


@dataclass(frozen=True)
class CoreMetadata:
    """The fields of a wheel's METADATA file that a refresh keeps."""

    name: str
    version: str
    requires_python: str | None
    requires_dist: tuple[str, ...]


@dataclass(frozen=True)
class MetadataRead:
    """Core metadata and where it was read."""

    url: str  #: the ``.metadata`` URL (credentials masked)
    wheel: str  #: the wheel it describes
    metadata: CoreMetadata


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class IndexData:
    """The cache: per package, its releases (newest first) by version string."""

    index: str  #: the index they were read from (credentials masked)
    updated: datetime.date
    packages: Mapping[str, Mapping[str, ReleaseRecord]]


@dataclass(frozen=True)
class PackageSummary:
    """What a refresh did for one package."""

    name: str
    found: bool  #: False when the index has no page (404) or lists no release of it
    releases: int  #: releases in the cache after the refresh
    new: int  #: records written by this refresh
    unavailable: int  #: of those, releases whose metadata could not be read


@dataclass(frozen=True)
class UpdateResult:
    index: str  #: credentials masked
    cache_path: str
    packages: tuple[PackageSummary, ...]
    requests: int  #: GETs made (retries of one GET not counted)
    warnings: tuple[str, ...] = ()

    @property
    def new(self) -> int:
        return sum(p.new for p in self.packages)


# --- small helpers ----------------------------------------------------------------------------------


def is_pin(requirement: str) -> bool:
    """Whether a Requires-Dist line names a framework or a CUDA wheel (``nvidia-*``, ``cuda-toolkit`` …)."""
    match = _REQ_NAME.match(requirement)
    return bool(match) and bool(_PIN_NAME.match(canonicalize_name(match.group(1))))


def _http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _safe_filename(name: str) -> bool:
    return (
        bool(name)
        and len(name) <= 255
        and "/" not in name
        and "\\" not in name
        and ".." not in name
        and name.isprintable()
        and name.strip() == name
    )


def _checked(where: str, filename: Any, url: Any, base_url: str) -> tuple[str, str]:
    """The file name and absolute URL of an index entry, or :class:`UpdateError` for anything unsafe."""
    if not isinstance(filename, str) or not _safe_filename(filename):
        raise UpdateError(f"{where}: file name {str(filename)[:80]!r} is not a plain file name; refusing this index")
    if not isinstance(url, str) or not url:
        raise UpdateError(f"{where}: {filename}: url: expected a non-empty string")
    try:
        absolute = urljoin(base_url, url.strip()) if base_url else url.strip()
    except ValueError as exc:
        raise UpdateError(f"{where}: {filename}: bad URL") from exc
    if not _http_url(absolute):
        raise UpdateError(f"{where}: {filename}: URL {redacted(absolute)[:120]!r} is not http(s); refusing this index")
    parts = urlsplit(absolute)
    return filename, urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def _hash_fragment(url: str) -> dict[str, str]:
    fragment = urlsplit(url).fragment
    algo, sep, digest = fragment.partition("=")
    return {algo: digest} if sep and algo and digest else {}


# --- pure parsers -----------------------------------------------------------------------------------


def parse_simple_json(data: bytes, *, base_url: str = "") -> list[IndexFile]:
    """The files of a PEP 691 JSON project page.

    Parse, e.g. (pypi.org/simple/vllm/, trimmed)::

        {"meta":{"api-version":"1.1"},"name":"vllm","files":[{"filename":"vllm-0.9.2.tar.gz",
         "hashes":{"sha256":"6b0d…"},"requires-python":"<3.13,>=3.9","url":"https://files.pythonhosted.org/…",
         "yanked":false}]}

    :param base_url: the page's URL, for relative file URLs and messages
    :raises UpdateError: not JSON, an unsupported API version, a wrong type, an unsafe file name or URL
    """
    where = f"index page {redacted(base_url)}" if base_url else "index page"
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise UpdateError(f"{where}: not valid JSON ({reason})") from None
    if not isinstance(doc, dict):
        raise UpdateError(f"{where}: expected a JSON object")
    meta = doc.get("meta")
    api = meta.get("api-version") if isinstance(meta, dict) else None
    if not isinstance(api, str) or not re.match(r"^\d+(\.\d+)*$", api):
        raise UpdateError(f"{where}: meta.api-version missing or not a version")
    if api.split(".")[0] != "1":  # PEP 691: a client must refuse a major version it does not know
        raise UpdateError(f"{where}: simple API version {api} is not supported (1.x is)")
    files = doc.get("files")
    if not isinstance(files, list):
        raise UpdateError(f"{where}: files: expected a list")
    result = []
    for i, entry in enumerate(files):
        at = f"{where}: files[{i}]"
        if not isinstance(entry, dict):
            raise UpdateError(f"{at}: expected an object")
        filename, url = _checked(at, entry.get("filename"), entry.get("url"), base_url)
        hashes = entry.get("hashes", {})
        if not isinstance(hashes, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()
        ):
            raise UpdateError(f"{at}.hashes: expected an object of strings")
        requires_python = entry.get("requires-python")
        if requires_python is not None and not isinstance(requires_python, str):
            raise UpdateError(f"{at}.requires-python: expected a string")
        yanked = entry.get("yanked", False)
        if not isinstance(yanked, (bool, str)):
            raise UpdateError(f"{at}.yanked: expected true, false or a reason")
        key = "core-metadata" if "core-metadata" in entry else "data-dist-info-metadata"
        core = entry.get(key)
        if core is not None and not (
            isinstance(core, bool)
            or (isinstance(core, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in core.items()))
        ):
            raise UpdateError(f"{at}.{key}: expected true, false or an object of hashes")
        result.append(
            IndexFile(
                filename,
                url,
                dict(hashes),
                (requires_python.strip() or None) if requires_python else None,
                yanked if isinstance(yanked, bool) else (yanked or True),
                dict(core) if isinstance(core, dict) else core,
            )
        )
    return result


class _AnchorParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self.base: str | None = None
        self.api_version: str | None = None
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []
        elif tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "meta":
            found = dict(attrs)
            if found.get("name") == "pypi:repository-version":
                self.api_version = found.get("content")

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


def _html_core_metadata(value: str | None) -> bool | dict[str, str]:
    if value is None or value.strip().lower() in ("", "true"):
        return True
    if value.strip().lower() == "false":
        return False
    algo, sep, digest = value.strip().partition("=")
    return {algo: digest} if sep and algo and digest else True


def parse_simple_html(data: bytes, *, base_url: str = "") -> list[IndexFile]:
    """The files of a PEP 503 HTML project page (what mirrors without PEP 691 serve).

    Parse, e.g. (pypi.org/simple/vllm/ as text/html, one anchor)::

        <a href="https://files.pythonhosted.org/…/vllm-0.9.2.tar.gz#sha256=6b0d…"
           data-requires-python="&lt;3.13,&gt;=3.9">vllm-0.9.2.tar.gz</a><br/>

    ``data-core-metadata`` / ``data-dist-info-metadata`` (PEP 714/658) and ``data-yanked`` are read;
    the anchor text is the file name (PEP 503), the URL's last segment when the text is empty.

    :raises UpdateError: an unsupported repository version, an unsafe file name or URL
    """
    where = f"index page {redacted(base_url)}" if base_url else "index page"
    parser = _AnchorParser()
    try:
        parser.feed(data.decode("utf-8", errors="replace"))
        parser.close()
    except (AssertionError, ValueError) as exc:  # HTMLParser raises little, but a broken page must not crash
        raise UpdateError(f"{where}: not parseable HTML ({type(exc).__name__})") from None
    if parser.api_version and parser.api_version.split(".")[0] != "1":
        raise UpdateError(f"{where}: simple API version {parser.api_version} is not supported (1.x is)")
    try:  # urljoin and urlsplit raise ValueError for a bad host part ("http://[x")
        base = urljoin(base_url, parser.base) if parser.base else base_url
    except ValueError:
        raise UpdateError(f"{where}: <base href> is not a URL") from None
    result = []
    for i, (attrs, text) in enumerate(parser.anchors):
        href = attrs.get("href")
        if not href:
            continue
        try:
            name = text or unquote(urlsplit(href).path.rstrip("/").rpartition("/")[2])
        except ValueError:
            raise UpdateError(f"{where}: link {i}: bad URL") from None
        filename, url = _checked(f"{where}: link {i}", name, href, base)
        core_attr = "data-core-metadata" if "data-core-metadata" in attrs else "data-dist-info-metadata"
        # data-yanked without a value, or with an empty one, still means yanked
        yanked: bool | str = (attrs["data-yanked"] or True) if "data-yanked" in attrs else False
        result.append(
            IndexFile(
                filename,
                url,
                _hash_fragment(href),
                (attrs.get("data-requires-python") or "").strip() or None,
                yanked,
                _html_core_metadata(attrs[core_attr]) if core_attr in attrs else None,
            )
        )
    return result


def _parse_index_page(data: bytes, *, base_url: str) -> list[IndexFile]:
    """JSON or HTML, told apart by the first character (the body is all a fetch returns)."""
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head in (b"{", b"["):
        return parse_simple_json(data, base_url=base_url)
    return parse_simple_html(data, base_url=base_url)


def parse_core_metadata(data: bytes, *, where: str = "core metadata") -> CoreMetadata:
    """Name, Version, Requires-Python and Requires-Dist of a METADATA file (RFC 822 headers).

    Parse, e.g. (torch 2.5.1's wheel, trimmed)::

        Metadata-Version: 2.1
        Name: torch
        Version: 2.5.1
        Requires-Python: >=3.8.0
        Requires-Dist: nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine …

    :raises UpdateError: no Name or Version header, or a Version that is not PEP 440
    """
    text = data.decode("utf-8", errors="replace")
    message = Parser(policy=compat32).parsestr(text, headersonly=True)

    def one(key: str) -> str | None:
        value = message.get(key)
        return " ".join(str(value).split()) or None if value is not None else None

    name, version = one("Name"), one("Version")
    if not name or not version:
        raise UpdateError(f"{where}: no Name or Version header; not a METADATA file")
    try:
        Version(version)
    except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
        raise UpdateError(f"{where}: Version {version[:60]!r} is not a PEP 440 version") from None
    requires = tuple(re.sub(r"\s*\n\s*", " ", str(v)).strip() for v in message.get_all("Requires-Dist") or ())
    return CoreMetadata(name, version, one("Requires-Python"), tuple(r for r in requires if r))


# --- from files to records --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Dist:
    file: IndexFile
    version: Version
    tags: frozenset[Any] | None  #: wheel tags; None for an sdist


def _releases(name: str, files: Iterable[IndexFile]) -> dict[Version, list[_Dist]]:
    """The files of ``name`` grouped by version; other files (legacy formats, other projects) are ignored."""
    canonical = canonicalize_name(name)
    grouped: dict[Version, list[_Dist]] = {}
    for f in files:
        try:
            if f.filename.endswith(".whl"):
                dist_name, version, _build, tags = parse_wheel_filename(f.filename)
                dist = _Dist(f, version, tags)
            else:
                dist_name, version = parse_sdist_filename(f.filename)
                dist = _Dist(f, version, None)
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


def _wheel_rank(dist: _Dist) -> tuple[int, int, int, int, int, str]:
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


def _metadata_candidates(dists: Iterable[_Dist]) -> list[IndexFile]:
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
    grouped = {str(v): dists for v, dists in _releases(name, files).items()}
    records: dict[str, ReleaseRecord] = {}
    for key, read in metadata_by_version.items():
        version = str(Version(key))
        dists = grouped.get(version)
        if not dists:
            continue
        wheels = [d for d in dists if d.tags is not None]
        tags = sorted(
            {_python_tag(t.interpreter, t.abi) for d in wheels for t in d.tags or ()},
            key=_tag_key,
        )
        platforms = sorted({_platform(t.platform) for d in wheels for t in d.tags or ()})
        index_rp = [d.file.requires_python for d in dists if d.file.requires_python]
        requires_python = max(set(index_rp), key=index_rp.count) if index_rp else None
        if read is not None:
            meta = read.metadata
            if canonicalize_name(meta.name) != canonicalize_name(name) or Version(meta.version) != Version(version):
                raise UpdateError(
                    f"{read.url}: metadata names {meta.name} {meta.version}, expected {name} {version}; "
                    "refusing this index"
                )
            requires_python = meta.requires_python or requires_python
            pins = tuple(r for r in meta.requires_dist if is_pin(r))
            status, url, wheel = STATUS_READ, read.url, read.wheel
        else:
            candidates = _metadata_candidates(dists)
            pins, url = (), None
            status = STATUS_UNAVAILABLE if wheels else STATUS_NO_WHEEL
            wheel = candidates[0].filename if candidates else None
        records[version] = ReleaseRecord(
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
    return records


# --- the cache document -----------------------------------------------------------------------------


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
        if not isinstance(items, list) or not all(isinstance(t, str) and _TOKEN.match(t) for t in items):
            problems.append(f"{where}.{k}: expected a list of tags")
    for k in ("abi3", "yanked"):
        if not isinstance(rec[k], bool):
            problems.append(f"{where}.{k}: expected true or false")
    if rec["derived"] is not True:
        problems.append(f"{where}.derived: must be true")
    wheel = rec["wheel"]
    if wheel is not None and not (isinstance(wheel, str) and _safe_filename(wheel) and wheel.endswith(".whl")):
        problems.append(f"{where}.wheel: expected a wheel file name or null")
    status, url = rec["metadata"], rec["metadata_url"]
    if status not in _STATUSES:
        problems.append(f"{where}.metadata: expected one of {', '.join(_STATUSES)}")
    elif status == STATUS_READ:
        if not (isinstance(url, str) and _http_url(url) and redacted(url) == url):
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
    if not (isinstance(index, str) and _http_url(index) and redacted(index) == index):
        problems.append("index: expected an http(s) URL without credentials")
    problem = _date_problem(doc.get("updated"))
    if problem:
        problems.append(f"updated: {problem}")
    packages = doc.get("packages")
    if not isinstance(packages, dict):
        return [*problems, "packages: expected an object"]
    for name, entry in packages.items():
        where = f"packages.{name}"
        if not isinstance(name, str) or not _PROJECT_NAME.match(name) or canonicalize_name(name) != name:
            problems.append(f"{where}: not a canonical project name")
            continue
        if not isinstance(entry, dict) or set(entry) != {"releases"} or not isinstance(entry["releases"], dict):
            problems.append(f'{where}: expected {{"releases": {{…}}}}')
            continue
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
        if len(problems) > 50:
            return [*problems[:50], "… more problems not listed"]
    return problems


def _document(
    index: str, updated: datetime.date, packages: Mapping[str, Mapping[str, ReleaseRecord]]
) -> dict[str, Any]:
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
        with open(path, "rb") as handle:
            raw = handle.read(_MAX_CACHE_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path}: cannot read ({exc.strerror or exc}); {hint}"
    if len(raw) > _MAX_CACHE_BYTES:
        return None, f"{path}: larger than {_MAX_CACHE_BYTES >> 20} MiB; {hint}"
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
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


def _write_atomic(cache_dir: str, data: bytes) -> str:
    """Write ``data`` as the cache file through a temporary file in the same directory and os.replace."""
    path = os.path.join(cache_dir, CACHE_FILE)
    try:
        os.makedirs(cache_dir, exist_ok=True)
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


# --- HTTP -------------------------------------------------------------------------------------------


class HttpFetcher:
    """The default :class:`Fetch`: requests, with timeouts, a size cap while streaming, and retries.

    * a connect and a read timeout per request, and a total deadline per attempt (a server that
      trickles bytes cannot hold a refresh forever);
    * bodies are capped while they stream (index pages ``index_limit``, anything else
      ``metadata_limit``); a ``Content-Length`` above the cap fails before reading;
    * connection errors, timeouts, cut-off bodies, 5xx and 429 are retried ``retries`` times with
      exponential backoff (``Retry-After`` honoured up to ``max_backoff``); 404 and other 4xx are not;
    * every message masks credentials; TLS failures say so and are not retried.

    Use as a context manager (or call :meth:`close`) to close its connections.
    """

    def __init__(
        self,
        *,
        timeout: tuple[float, float] = (10.0, 60.0),
        deadline: float = 300.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        index_limit: int = MAX_INDEX_BYTES,
        metadata_limit: int = MAX_METADATA_BYTES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.index_limit = index_limit
        self.metadata_limit = metadata_limit
        self.sleep = sleep
        self._local = threading.local()
        self._sessions: list[Any] = []
        self._lock = threading.Lock()

    def __enter__(self) -> HttpFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests  # imported here: only `update` uses the network

            session = requests.Session()
            session.headers["User-Agent"] = f"cudadoctor/{__version__} (+https://pypi.org/project/cudadoctor/)"
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def __call__(self, url: str, *, accept: str) -> bytes:
        import requests

        limit = self.index_limit if accept == ACCEPT_INDEX else self.metadata_limit
        shown = redacted(url)
        attempts = self.retries + 1
        reason = "no attempt made"
        for attempt in range(attempts):
            wait_s = min(self.backoff * (2**attempt), self.max_backoff)
            try:
                with self._session().get(
                    url, headers={"Accept": accept}, timeout=self.timeout, stream=True, allow_redirects=True
                ) as response:
                    status = response.status_code
                    if status == 200:
                        return self._read(response, limit, shown)
                    if status == 429 or 500 <= status < 600:
                        reason = f"HTTP {status}"
                        retry_after = response.headers.get("Retry-After", "")
                        if retry_after.isdigit():
                            wait_s = min(float(retry_after), self.max_backoff)
                    else:
                        hint = {401: " (the index wants credentials)", 403: " (access denied)"}.get(status, "")
                        raise FetchError(f"cannot fetch {shown}: HTTP {status}{hint}", url=url, status=status)
            except requests.exceptions.SSLError:
                raise FetchError(
                    f"cannot fetch {shown}: TLS certificate check failed (behind a proxy? set REQUESTS_CA_BUNDLE)",
                    url=url,
                ) from None
            except requests.exceptions.Timeout:
                reason = "timed out"
            except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                reason = _connection_reason(exc)
            except requests.exceptions.ContentDecodingError:
                reason = "the body could not be decoded"
            except requests.exceptions.RequestException as exc:  # bad URL, too many redirects …
                raise FetchError(f"cannot fetch {shown}: {type(exc).__name__}", url=url) from None
            if attempt + 1 < attempts:
                self.sleep(wait_s)
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        raise FetchError(f"cannot fetch {shown}: {reason}{tries}", url=url)

    def _read(self, response: Any, limit: int, shown: str) -> bytes:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FetchError(f"cannot fetch {shown}: {declared} bytes, more than the {_size(limit)} allowed", url=shown)
        started = time.monotonic()
        chunks, total = [], 0
        for chunk in response.iter_content(chunk_size=1 << 16):
            total += len(chunk)
            if total > limit:
                raise FetchError(f"cannot fetch {shown}: larger than the {_size(limit)} allowed", url=shown)
            if time.monotonic() - started > self.deadline:
                raise FetchError(f"cannot fetch {shown}: still arriving after {self.deadline:g} s", url=shown)
            chunks.append(chunk)
        return b"".join(chunks)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} bytes"


def _connection_reason(exc: BaseException) -> str:
    """A short cause without the exception text (which repeats the URL, credentials included)."""
    text = repr(exc)
    for needle, reason in (
        ("NameResolution", "host not found"),
        ("Name or service not known", "host not found"),
        ("Connection refused", "connection refused"),
        ("IncompleteRead", "the body was cut off"),
        ("ProtocolError", "the connection broke"),
        ("Read timed out", "timed out"),
        ("ConnectTimeout", "timed out"),
        ("ProxyError", "the proxy refused the connection"),
    ):
        if needle in text:
            return reason
    return "connection failed"


# --- refresh ----------------------------------------------------------------------------------------


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _run_all(pool: ThreadPoolExecutor, tasks: Sequence[Callable[[], Any]], on_done: Callable[[int, Any], None]) -> None:
    """Run ``tasks`` on ``pool``; call ``on_done(i, result)`` in this thread; stop at the first failure."""
    futures: dict[Future[Any], int] = {pool.submit(task): i for i, task in enumerate(tasks)}
    pending = set(futures)
    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                on_done(futures[future], future.result())  # re-raises a task's exception
    finally:
        for future in pending:
            future.cancel()


def _verify(body: bytes, core: bool | Mapping[str, str] | None, url: str) -> None:
    if not isinstance(core, Mapping):
        return
    for algo, digest in core.items():
        if algo in hashlib.algorithms_guaranteed:
            if hashlib.new(algo, body).hexdigest() != digest.lower():
                raise UpdateError(f"{redacted(url)}: does not match its {algo} in the index; refusing it")
            return


def refresh(
    packages: Iterable[str] = DEFAULT_PACKAGES,
    *,
    index: str | IndexConfig = PYPI_SIMPLE,
    cache_dir: str | None = None,
    fetch: Fetch | None = None,
    progress: Progress | None = None,
    now: Callable[[], datetime.datetime] = _utcnow,
    limit: int = DEFAULT_LIMIT,
    workers: int = 8,
) -> UpdateResult:
    """Read new releases of ``packages`` from ``index`` into ``<cache_dir>/index-releases.json``.

    Incremental: a release already cached is not read again, except one whose metadata was
    unavailable last time. Releases older than the newest ``limit`` are not read; cached ones stay.
    A package the index does not have (404) is reported in the result, not an error, unless no
    package at all is found (then the index URL is probably wrong).

    :param packages: project names (default :data:`DEFAULT_PACKAGES`)
    :param index: the simple index URL or an :class:`~cudadoctor.pipconfig.IndexConfig`
    :param cache_dir: default :func:`default_cache_dir`
    :param fetch: the HTTP getter (default a new :class:`HttpFetcher`, closed at the end)
    :param progress: called as ``progress(done, total, label)`` from this thread; ``total`` grows once,
        when the index pages are read and the number of metadata files is known
    :param now: the clock (UTC); its date goes into ``updated`` and each record's ``fetched``
    :param limit: newest releases per package to consider
    :param workers: requests in flight at once
    :raises UpdateError: anything fetched could not be used; the previous cache is left as it was
    """
    index_url = index.url if isinstance(index, IndexConfig) else index
    shown = redacted(index_url)
    if not _http_url(index_url):
        raise UpdateError(f"index URL {shown!r} is not an http(s) URL")
    if "@" in index_url.partition("://")[2] and "@" not in urlsplit(index_url).netloc:
        # user:pa/ss@host: the URL ends at the "/" and the password would be taken for the host
        raise UpdateError(f"index URL {shown!r}: %-encode any '/', '#', '?' or '@' in its user name or password")
    if limit < 1 or workers < 1:
        raise UpdateError("limit and workers must be at least 1")
    names: list[str] = []
    for raw in packages:
        if not isinstance(raw, str) or not _PROJECT_NAME.match(raw.strip()):
            raise UpdateError(f"{str(raw)[:60]!r} is not a package name")
        canonical = canonicalize_name(raw.strip())
        if canonical not in names:
            names.append(canonical)
    if not names:
        raise UpdateError("no packages to refresh")
    cache_dir = cache_dir or default_cache_dir()
    moment = now()
    today = (moment.astimezone(datetime.timezone.utc) if moment.tzinfo else moment).date()

    warnings: list[str] = []
    previous, warning = load_cache(cache_dir)
    if warning:
        warnings.append(f"{warning}; starting afresh")
    if previous is not None and previous.index != shown:
        warnings.append(f"the cache was read from {previous.index}; starting afresh for {shown}")
        previous = None
    cached: dict[str, dict[str, ReleaseRecord]] = {
        n: dict(r) for n, r in (previous.packages.items() if previous else ())
    }

    own = fetch is None
    getter: Fetch = HttpFetcher() if fetch is None else fetch
    calls = [0]
    lock = threading.Lock()

    def get(url: str, accept: str) -> bytes:
        with lock:
            calls[0] += 1
        return getter(url, accept=accept)

    report = progress or (lambda done, total, label: None)
    base = index_url if index_url.endswith("/") else index_url + "/"
    pages: dict[str, list[IndexFile] | None] = {}

    def read_page(name: str) -> Callable[[], list[IndexFile] | None]:
        def task() -> list[IndexFile] | None:
            url = urljoin(base, f"{name}/")
            try:
                body = get(url, ACCEPT_INDEX)
            except FetchError as exc:
                if exc.status in (404, 410):
                    return None
                raise
            if len(body) > MAX_INDEX_BYTES:
                raise UpdateError(f"index page {redacted(url)}: larger than {_size(MAX_INDEX_BYTES)}")
            return _parse_index_page(body, base_url=url)

        return task

    def read_metadata(candidates: Sequence[IndexFile]) -> Callable[[], MetadataRead | None]:
        def task() -> MetadataRead | None:
            for candidate in candidates[:METADATA_ATTEMPTS]:
                url = candidate.metadata_url
                try:
                    body = get(url, ACCEPT_METADATA)
                except FetchError as exc:
                    if exc.status in (404, 410):
                        continue
                    raise
                if len(body) > MAX_METADATA_BYTES:
                    raise UpdateError(f"{redacted(url)}: larger than {_size(MAX_METADATA_BYTES)}")
                _verify(body, candidate.core_metadata, url)
                return MetadataRead(redacted(url), candidate.filename, parse_core_metadata(body, where=redacted(url)))
            return None

        return task

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cudadoctor-update") as pool:
            total, done = len(names), 0
            report(0, total, "index pages")

            def page_done(i: int, files: list[IndexFile] | None) -> None:
                nonlocal done
                pages[names[i]] = files
                done += 1
                report(done, total, names[i])

            _run_all(pool, [read_page(n) for n in names], page_done)

            # Plan: the newest `limit` releases not yet cached (or cached without metadata).
            plan: list[tuple[str, str, list[IndexFile]]] = []
            todo: dict[str, dict[str, MetadataRead | None]] = {}
            for name in names:
                files = pages.get(name)
                if not files:
                    continue
                have = cached.get(name, {})
                grouped = _releases(name, files)
                todo[name] = {}
                for version in sorted(grouped, reverse=True)[:limit]:
                    key = str(version)
                    if key in have and have[key].metadata != STATUS_UNAVAILABLE:
                        continue
                    todo[name][key] = None
                    candidates = _metadata_candidates(grouped[version])
                    if candidates:
                        plan.append((name, key, candidates))
            total += len(plan)
            report(done, total, "metadata")

            def metadata_done(i: int, read: MetadataRead | None) -> None:
                nonlocal done
                name, key, _ = plan[i]
                todo[name][key] = read
                done += 1
                report(done, total, f"{name} {key}")

            _run_all(pool, [read_metadata(c) for _, _, c in plan], metadata_done)
    finally:
        if own and isinstance(getter, HttpFetcher):
            getter.close()

    summaries = []
    for name in names:
        files = pages.get(name)
        new = release_records(name, files, todo[name], fetched=today) if files and name in todo else {}
        found = bool(files) and bool(_releases(name, files or ()))
        if new or name in cached:
            cached[name] = {**cached.get(name, {}), **new}
        summaries.append(
            PackageSummary(
                name,
                found,
                len(cached.get(name, {})),
                len(new),
                sum(r.metadata == STATUS_UNAVAILABLE for r in new.values()),
            )
        )
    if not any(s.found for s in summaries):
        raise UpdateError(f"none of the {len(names)} package(s) were found on {shown}; is that the right index?")

    doc = _document(shown, today, cached)
    problems = validate_index_document(doc)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UpdateError(f"refusing to write the cache: {problems[0]}{more}")
    data = (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    path = _write_atomic(cache_dir, data)
    return UpdateResult(shown, path, tuple(summaries), calls[0], tuple(warnings))
