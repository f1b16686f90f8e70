"""The data refresh behind ``cudadoctor update``: release facts read from a package index into the user cache.

For each package (torch, vllm, jax, the nvidia-* wheels …) it reads the index page (PEP 691 JSON,
or PEP 503 HTML from mirrors that serve only that), keeps the newest releases, and for each new
release reads ONE wheel's core metadata (PEP 658 ``<wheel url>.metadata``: a few KB, never the
wheel). From those it records what the doctor needs: Requires-Python, the Requires-Dist lines that
pin frameworks and CUDA wheels (as written, markers kept), the Python tags and platforms built.
Every record is ``derived`` (computed from the index, not curated) and names the metadata file
it was read from.

:func:`refresh` runs in phases, each a short function: check the arguments, load the previous
cache, read the index pages, plan which metadata files are new, read them, merge, and save.
Nothing is written until everything fetched has been parsed and the whole document validated, and
then it is replaced atomically: any failure leaves the previous cache byte for byte as it was and
raises :class:`~cudadoctor.update.errors.UpdateError` with one line. Nothing fetched is executed
or imported, and no path is built from anything the index says.
"""

from __future__ import annotations

import datetime
import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from packaging.utils import canonicalize_name

from cudadoctor.cachedir import default_cache_dir
from cudadoctor.pipconfig import PYPI_SIMPLE, IndexConfig, redacted
from cudadoctor.record import record
from cudadoctor.update.cache import load_cache, save_cache
from cudadoctor.update.errors import FetchError, PackagesNotFound, UpdateError
from cudadoctor.update.fetch import (
    ACCEPT_INDEX,
    ACCEPT_METADATA,
    MAX_INDEX_BYTES,
    MAX_METADATA_BYTES,
    Fetch,
    HttpFetcher,
    size_text,
)
from cudadoctor.update.index import IndexFile, parse_index_page
from cudadoctor.update.metadata import MetadataRead, parse_core_metadata, verify_metadata
from cudadoctor.update.names import PROJECT_NAME, is_http_url
from cudadoctor.update.records import STATUS_UNAVAILABLE, ReleaseRecord
from cudadoctor.update.releases import group_releases, metadata_candidates, release_records

__all__ = ["DEFAULT_LIMIT", "DEFAULT_PACKAGES", "PackageSummary", "Progress", "UpdateResult", "refresh"]

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
#: Wheels tried per release when a ``.metadata`` file answers 404 (seen on pypi.org for some wheels).
METADATA_ATTEMPTS = 3

Progress = Callable[[int, int, str], None]
#: package -> version -> record, as the cache holds them
Releases = dict[str, dict[str, ReleaseRecord]]
#: package -> its index page's files, None when the index has no page for it
Pages = dict[str, list[IndexFile] | None]
#: package -> version -> the metadata read for it (None: none could be read)
Reads = dict[str, dict[str, MetadataRead | None]]


@record
class PackageSummary:
    """What a refresh did for one package."""

    name: str
    found: bool  #: False when the index has no page (404) or lists no release of it
    releases: int  #: releases in the cache after the refresh
    new: int  #: records this refresh added or changed (a re-read that found the same is not new)
    unavailable: int  #: releases read this time whose metadata could not be read


@record
class UpdateResult:
    """What ``cudadoctor update`` did: the index, the cache written, each package's summary and the GETs."""

    index: str  #: credentials masked
    cache_path: str
    packages: tuple[PackageSummary, ...]
    requests: int  #: GETs made (retries of one GET not counted)
    warnings: tuple[str, ...] = ()

    @property
    def new(self) -> int:
        return sum(p.new for p in self.packages)


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def refresh(
    packages: Iterable[str] = DEFAULT_PACKAGES,
    *,
    index: str | IndexConfig = PYPI_SIMPLE,
    cache_dir: str | None = None,
    fetch: Fetch | None = None,
    progress: Progress | None = None,
    now: Callable[[], datetime.datetime] = _utcnow,
    limit: int = DEFAULT_LIMIT,
    workers: int = 4,
) -> UpdateResult:
    """Read new releases of ``packages`` from ``index`` into ``<cache_dir>/index-releases.json``.

    Incremental: a release already cached is not read again, except one whose metadata was
    unavailable last time. Releases older than the newest ``limit`` are not read; cached ones stay.
    A package the index does not have (404) is reported in the result, not an error, unless no
    package at all is found (then the index URL is probably wrong).

    :param packages: project names (default :data:`DEFAULT_PACKAGES`)
    :param index: the simple index URL or an :class:`~cudadoctor.pipconfig.IndexConfig`
    :param cache_dir: default :func:`~cudadoctor.cachedir.default_cache_dir`
    :param fetch: the HTTP getter (default a new :class:`~cudadoctor.update.fetch.HttpFetcher`, closed at the end)
    :param progress: called as ``progress(done, total, label)`` from this thread; ``total`` grows once,
        when the index pages are read and the number of metadata files is known
    :param now: the clock (UTC); its date goes into ``updated`` and each record's ``fetched``
    :param limit: newest releases per package to consider
    :param workers: requests in flight at once (4: a small pool like pip's own parallel downloads; PyPI asks
        clients to be polite and to avoid floods, https://warehouse.pypa.io/api-reference/#rate-limiting)
    :raises UpdateError: anything fetched could not be used; the previous cache is left as it was
    """
    index_url = index.url if isinstance(index, IndexConfig) else index
    shown = redacted(index_url)
    _check_index_url(index_url, shown)
    if limit < 1 or workers < 1:
        raise UpdateError("limit and workers must be at least 1")
    names = _package_names(packages)
    cache_dir = cache_dir or default_cache_dir()
    moment = now()
    today = (moment.astimezone(datetime.timezone.utc) if moment.tzinfo else moment).date()
    cached, warnings = _previous(cache_dir, shown)
    reader = _Reader(HttpFetcher() if fetch is None else fetch, index_url)
    try:
        pages, reads = _read_index(reader, names, cached, limit, workers, progress or _quiet)
    finally:
        if fetch is None and isinstance(reader.getter, HttpFetcher):
            reader.getter.close()
    merged, summaries = _merge(names, pages, reads, cached, today)
    if not any(s.found for s in summaries):
        raise PackagesNotFound(
            f"none of the {len(names)} package(s) were found on {shown}; is that the right index?", tuple(names)
        )
    path = save_cache(cache_dir, shown, today, merged)
    return UpdateResult(shown, path, tuple(summaries), reader.calls, tuple(warnings))


def _quiet(done: int, total: int, label: str) -> None:
    """The default progress callback: say nothing."""


# --- phase 1: arguments and the previous cache ---------------------------------------------------------


def _check_index_url(index_url: str, shown: str) -> None:
    if not is_http_url(index_url):
        raise UpdateError(f"index URL {shown!r} is not an http(s) URL")
    if "@" in index_url.partition("://")[2] and "@" not in urlsplit(index_url).netloc:
        # user:pa/ss@host: the URL ends at the "/" and the password would be taken for the host
        raise UpdateError(f"index URL {shown!r}: %-encode any '/', '#', '?' or '@' in its user name or password")


def _package_names(packages: Iterable[str]) -> list[str]:
    """The canonical names (PEP 503 normalization), first occurrence kept; at least one."""
    names: list[str] = []
    for raw in packages:
        if not isinstance(raw, str) or not PROJECT_NAME.match(raw.strip()):
            raise UpdateError(f"{str(raw)[:60]!r} is not a package name")
        canonical = canonicalize_name(raw.strip())
        if canonical not in names:
            names.append(canonical)
    if not names:
        raise UpdateError("no packages to refresh")
    return names


def _previous(cache_dir: str, shown: str) -> tuple[Releases, list[str]]:
    """The cached releases to build on, and why none are (a broken cache, or one from another index)."""
    warnings: list[str] = []
    previous, warning = load_cache(cache_dir)
    if warning:
        warnings.append(f"{warning}; starting afresh")
    if previous is not None and previous.index != shown:
        warnings.append(f"the cache was read from {previous.index}; starting afresh for {shown}")
        previous = None
    cached = {n: dict(r) for n, r in (previous.packages.items() if previous else ())}
    return cached, warnings


# --- phases 2 to 4: read the pages, plan, read the metadata -----------------------------------------------


#: A project page with no file larger than this is not read as "no release" (PEP 503's page of a project without
#: files is an HTML skeleton of a few hundred bytes; PEP 691's JSON one about as small).
_MAX_EMPTY_PAGE_BYTES = 64 << 10


class _Reader:
    """The GETs of one refresh, counted, each turned into a parsed page or metadata file."""

    def __init__(self, getter: Fetch, index_url: str) -> None:
        self.getter = getter
        self.base = index_url if index_url.endswith("/") else index_url + "/"
        self.calls = 0
        self._lock = threading.Lock()

    def _get(self, url: str, accept: str) -> bytes:
        with self._lock:
            self.calls += 1
        return self.getter(url, accept=accept)

    def page(self, name: str) -> list[IndexFile] | None:
        """The files on ``name``'s index page; None when the index has no such page (404, 410)."""
        url = urljoin(self.base, f"{name}/")
        try:
            body = self._get(url, ACCEPT_INDEX)
        except FetchError as exc:
            if exc.status in (404, 410):
                return None
            raise
        if len(body) > MAX_INDEX_BYTES:  # a getter other than HttpFetcher may not cap what it returns
            raise UpdateError(f"index page {redacted(url)}: larger than {size_text(MAX_INDEX_BYTES)}")
        files = parse_index_page(body, base_url=url)
        if not files and len(body) > _MAX_EMPTY_PAGE_BYTES:
            # a project page without files is a few hundred bytes: megabytes with no link in them (one unterminated
            # tag, a comment that never ends) are not "no such package" but a page this cannot read
            raise UpdateError(
                f"index page {redacted(url)}: {size_text(len(body))} without a single file link; "
                "too large for an empty project page, and not one this can read"
            )
        return files

    def metadata(self, candidates: Sequence[IndexFile]) -> MetadataRead | None:
        """The first of ``candidates``' metadata files that is there; None when none is."""
        for candidate in candidates[:METADATA_ATTEMPTS]:
            url = candidate.metadata_url
            try:
                body = self._get(url, ACCEPT_METADATA)
            except FetchError as exc:
                if exc.status in (404, 410):
                    continue
                raise
            if len(body) > MAX_METADATA_BYTES:
                raise UpdateError(f"{redacted(url)}: larger than {size_text(MAX_METADATA_BYTES)}")
            verify_metadata(body, candidate.core_metadata, url)
            return MetadataRead(redacted(url), candidate.filename, parse_core_metadata(body, where=redacted(url)))
        return None


@dataclass
class _Tally:
    """Progress across both rounds of reads: ``total`` grows once the metadata to read is known."""

    report: Progress
    total: int
    done: int = 0

    def step(self, label: str) -> None:
        self.done += 1
        self.report(self.done, self.total, label)

    def grow(self, more: int, label: str) -> None:
        self.total += more
        self.report(self.done, self.total, label)


def _read_index(
    reader: _Reader, names: Sequence[str], cached: Releases, limit: int, workers: int, report: Progress
) -> tuple[Pages, Reads]:
    """Every index page, then the metadata of each release not cached yet, ``workers`` GETs at a time."""
    pages: Pages = {}
    tally = _Tally(report, len(names))
    report(0, tally.total, "index pages")
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cudadoctor-update") as pool:

        def page_done(i: int, files: list[IndexFile] | None) -> None:
            pages[names[i]] = files
            tally.step(names[i])

        _run_all(pool, [functools.partial(reader.page, n) for n in names], page_done)
        plan, reads = _plan(names, pages, cached, limit)
        tally.grow(len(plan), "metadata")

        def metadata_done(i: int, read: MetadataRead | None) -> None:
            name, key, _ = plan[i]
            reads[name][key] = read
            tally.step(f"{name} {key}")

        _run_all(pool, [functools.partial(reader.metadata, c) for _, _, c in plan], metadata_done)
    return pages, reads


def _plan(
    names: Sequence[str], pages: Pages, cached: Mapping[str, Mapping[str, ReleaseRecord]], limit: int
) -> tuple[list[tuple[str, str, list[IndexFile]]], Reads]:
    """The newest ``limit`` releases not yet cached (or cached without metadata), and the wheels to try for each.

    :return: ``(plan, reads)``: ``(package, version, candidate wheels)`` to fetch, and every release to
        record, each still None (a release with no wheel stays None: it has no metadata to read)
    """
    plan: list[tuple[str, str, list[IndexFile]]] = []
    reads: Reads = {}
    for name in names:
        files = pages.get(name)
        if not files:
            continue
        have = cached.get(name, {})
        grouped = group_releases(name, files)
        reads[name] = {}
        for version in sorted(grouped, reverse=True)[:limit]:
            key = str(version)
            if key in have and have[key].metadata != STATUS_UNAVAILABLE:
                continue
            reads[name][key] = None
            candidates = metadata_candidates(grouped[version])
            if candidates:
                plan.append((name, key, candidates))
    return plan, reads


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


# --- phase 5: merge ----------------------------------------------------------------------------------


def _merge(
    names: Sequence[str], pages: Pages, reads: Reads, cached: Releases, today: datetime.date
) -> tuple[Releases, list[PackageSummary]]:
    """The cache to write (new records over the cached ones) and what changed for each package."""
    merged = {n: dict(r) for n, r in cached.items()}
    summaries = []
    for name in names:
        files = pages.get(name)
        new = release_records(name, files, reads[name], fetched=today) if files and name in reads else {}
        found = bool(files) and bool(group_releases(name, files or ()))
        before = merged.get(name, {})
        # A release re-read because its metadata was unavailable last time is not news when it still is.
        changed = {k: r for k, r in new.items() if k not in before or replace(before[k], fetched=r.fetched) != r}
        if new or name in merged:
            merged[name] = {**before, **new}
        unavailable = sum(r.metadata == STATUS_UNAVAILABLE for r in new.values())
        summaries.append(PackageSummary(name, found, len(merged.get(name, {})), len(changed), unavailable))
    return merged, summaries
