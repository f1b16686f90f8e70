"""The loader's view: for each CUDA library an installed package's shared objects need, the copy
``ld.so`` will load, its version, and the copies it hides.

Which objects: every ELF shared object a site-packages directory holds at the depths wheels put
them (``pkg/*.so``, ``pkg/sub/*.so``, ``pkg.libs/*.so`` as auditwheel writes them, ``nvidia/*/lib``),
of any distribution — not a fixed list. Only their dynamic sections are read (:mod:`.elf`), and the
answer is cached by each file's path and identity (device, inode, size, mtime, ctime) in the user cache
directory (:mod:`.scancache`), so a second run reads no ELF file at all. An object that cannot be read (truncated,
lying headers) and the objects past the cap are named in the view (``unread``), never taken as needing nothing;
a copy built for another CPU is skipped, as ld.so skips it (``foreign``).

How a needed soname resolves follows ld.so(8) (https://man7.org/linux/man-pages/man8/ld.so.8.html):
a library already loaded through ``LD_PRELOAD`` wins; then the needer's ``DT_RPATH`` (only when it
has no ``DT_RUNPATH``), ``LD_LIBRARY_PATH``, its ``DT_RUNPATH`` (``$ORIGIN`` is the needer's own
directory), ``/etc/ld.so.cache`` and the default directories. Without a readable cache (an image
root whose ldconfig never ran, a test tree) the directories of ``/etc/ld.so.conf`` stand in for it,
as ldconfig would list them, and the view says so.

A framework that loads a wheel's library by full path when it is imported (torch's ``_load_global_deps``:
compat/runtime_libraries.toml ``preload``, per release) makes the needer's search moot for that soname:
ld.so reuses a loaded soname. Those copies become ``loaded`` (``via`` says which framework preloads them)
for the framework's own needs and for the needs of the NVIDIA wheels only it loads: torch's, JAX's CUDA
plugin's and CuPy's NCCL (compat/notes/runtime-libraries.md says what each release does).
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import field, replace
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import LinkedFile, LoaderView, NeededLibrary, SubLibrary
from cudadoctor.probes import elf, ldcache, loader, scancache
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.elf import ElfDynamic
from cudadoctor.record import record
from cudadoctor.rootfs import match_names

if TYPE_CHECKING:
    from cudadoctor.data.rows import FrameworkPreload, RuntimeLoad
    from cudadoctor.probes.packages import Distribution

__all__ = [
    "CUDA_SONAME",
    "cuda_soname",
    "expand_origin",
    "framework_preloads",
    "loader_cache",
    "probe_loader_view",
    "record_owner",
    "resolve",
    "resolve_plain",
    "runtime_load_rows",
]

#: The CUDA libraries whose copies are resolved: the CUDA runtime and math libraries, cuDNN (with
#: its sub-libraries), NCCL, nvJitLink, NVRTC, CUPTI and TensorRT's libnvinfer / libmyelin.
CUDA_SONAME = re.compile(
    r"^lib(cudart|cublasLt|cublas|cudnn(?:_[a-z_]+)?|nccl|nvJitLink|cusparse|cufft|curand|cusolver|nvrtc|cupti"
    r"|nvinfer(?:_[a-z_]+)?|myelin)\.so\.(\d+)(?:\.[\d.]+)?$"
)

#: Library stem -> the CUDA wheel component that ships it (``nvidia-<component>[-cuNN]``), for versions
#: of files in the CUDA 13 layout (one ``nvidia/cu13/lib``) and ``nvidia/<component>/lib``.
_STEM_COMPONENT = {
    "cudart": "cuda-runtime", "cublas": "cublas", "cublasLt": "cublas", "nvrtc": "cuda-nvrtc",
    "cupti": "cuda-cupti", "nvJitLink": "nvjitlink", "cusparse": "cusparse", "cufft": "cufft",
    "curand": "curand", "cusolver": "cusolver", "cudnn": "cudnn", "nccl": "nccl",
}  # fmt: skip

_FULL = re.compile(r"\.so\.(\d+\.\d+(?:\.\d+)*)$")
_MAX_OBJECTS = 5000


def cuda_soname(name: str) -> tuple[str, str] | None:
    """``(stem, soname)`` of a CUDA library file name: ``libcudnn.so.9.1.0`` -> ``("cudnn", "libcudnn.so.9")``."""
    match = CUDA_SONAME.match(posixpath.basename(name))
    if not match:
        return None
    return match.group(1), f"lib{match.group(1)}.so.{match.group(2)}"


def expand_origin(entry: str, origin: str) -> str:
    """A RUNPATH/RPATH entry with ``$ORIGIN`` / ``${ORIGIN}`` replaced by the needer's directory."""
    return posixpath.normpath(entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))


# --- where the loader looks ------------------------------------------------------------------------


#: At most this many directories of one search list (LD_LIBRARY_PATH, an RPATH/RUNPATH) and LD_PRELOAD
#: entries are looked at: a hostile 50,000-entry LD_LIBRARY_PATH must not make the scan take minutes.
_MAX_DIRS = 256
#: At most this many (package, CUDA library) needs are resolved (a real environment has a few hundred).
_MAX_NEEDS = 2000


@record
class _Search:
    """The parts of the search order that do not depend on the needer."""

    preloaded: dict[str, LinkedFile]  #: soname -> the LD_PRELOAD copy
    ld_library_path: tuple[str, ...]
    cache: tuple[ldcache.CacheEntry, ...] | None
    conf_dirs: tuple[str, ...]  #: used when there is no cache
    defaults: tuple[str, ...]
    machine: str
    #: (soname, directories) -> the candidates found: many objects share one search order
    memo: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[str, str]]] = field(default_factory=dict)
    #: the cache's entries by soname (ldcache.by_soname), built with the search
    cache_index: dict[str, tuple[ldcache.CacheEntry, ...]] = field(default_factory=dict)


def _plain_search(ctx: ProbeContext) -> tuple[_Search, str]:
    """The search of a needer without RPATH/RUNPATH, LD_PRELOAD aside, and where the cache came from: built once a
    run (the driver's libcuda lookups and the loader's view share it; an H200's ld.so.cache has ~2,600 entries)."""
    return ctx.once("linkage.plain_search", functools.partial(_build_plain_search, ctx))


def _build_plain_search(ctx: ProbeContext) -> tuple[_Search, str]:
    cache: tuple[ldcache.CacheEntry, ...] | None = None
    try:
        cache = ldcache.parse_ld_so_cache(ctx.fs.read_bytes("/etc/ld.so.cache", 32 << 20))
        note = f"/etc/ld.so.cache ({len(cache)} entries)" if cache is not None else ""
    except OSError as exc:
        note = f"/etc/ld.so.cache not read ({exc.strerror or exc})"
    if cache is None:
        note = (note or "/etc/ld.so.cache is not a glibc-ld.so.cache1.1 file") + (
            "; the directories of /etc/ld.so.conf stand in for it"
        )
    ld_path = tuple(dict.fromkeys(loader.ld_library_path(ctx.env.get("LD_LIBRARY_PATH"))))[:_MAX_DIRS]
    search = _Search({}, ld_path, cache, tuple(loader.conf_dirs(ctx)), loader.default_dirs(ctx.machine), ctx.machine)
    if cache is not None:
        search.cache_index.update(ldcache.by_soname(cache))
    return search, note


def loader_cache(ctx: ProbeContext) -> tuple[tuple[ldcache.CacheEntry, ...] | None, tuple[str, ...], str]:
    """(the ld.so.cache entries, None without a readable cache; the ld.so.conf directories that then stand in for
    it; where they came from): what ``ldconfig -p`` would print, read once a run with the loader's search."""
    search, note = _plain_search(ctx)
    return search.cache, search.conf_dirs, note


def resolve_plain(ctx: ProbeContext, soname: str) -> tuple[str, str] | None:
    """(path, via) of the copy ld.so loads when a program with no RPATH/RUNPATH of its own asks for
    ``soname`` (cudart's ``dlopen("libcuda.so.1")``, numba's ``dlopen("libcuda.so")``); None when none.

    A file named in ``LD_PRELOAD`` whose name starts with the soname's stem is already loaded, so it wins.
    """
    stem = soname.split(".so", 1)[0] + ".so"
    for entry in re.split(r"[\s:]+", ctx.env.get("LD_PRELOAD", ""))[:_MAX_DIRS]:
        if "/" in entry and posixpath.basename(entry).startswith(stem) and ctx.fs.is_file(entry):
            return entry, "LD_PRELOAD"
    search, _note = _plain_search(ctx)
    dirs = [(posixpath.normpath(d), "LD_LIBRARY_PATH") for d in search.ld_library_path]
    found = _candidates(ctx, search, soname, dirs)
    return found[0] if found else None


def _search(ctx: ProbeContext, versions: _Versions) -> tuple[_Search, str]:
    partial, note = _plain_search(ctx)
    preloaded: dict[str, LinkedFile] = {}
    for entry in re.split(r"[\s:]+", ctx.env.get("LD_PRELOAD", ""))[:_MAX_DIRS]:
        parsed = cuda_soname(entry) if entry else None
        if parsed is None:
            continue
        path = entry if "/" in entry else _first(ctx, partial, entry, ())
        if path is not None and ctx.fs.is_file(path) and not versions.foreign(path):  # ld.so ignores another CPU's
            preloaded.setdefault(parsed[1], versions.file(path, "LD_PRELOAD"))
    return replace(partial, preloaded=preloaded), note


def _order(search: _Search, dyn: ElfDynamic, origin: str) -> list[tuple[str, str]]:
    """(directory, via) in ld.so's order for a needer, before the cache."""
    dirs: list[tuple[str, str]] = []
    if dyn.rpath and not dyn.runpath:
        dirs += [(expand_origin(d, origin), "RPATH") for d in dyn.rpath]
    dirs += [(posixpath.normpath(d), "LD_LIBRARY_PATH") for d in search.ld_library_path]
    dirs += [(expand_origin(d, origin), "RUNPATH") for d in dyn.runpath]
    return dirs


def _candidates(ctx: ProbeContext, search: _Search, soname: str, dirs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every (path, via) that holds ``soname``, in the order ld.so would try them (memoised per search)."""
    key = (soname, tuple(dict.fromkeys(dirs))[: 2 * _MAX_DIRS])
    if key not in search.memo:
        search.memo[key] = _look(ctx, search, soname, key[1])
    return list(search.memo[key])


def _look(ctx: ProbeContext, search: _Search, soname: str, dirs: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for directory, via in dirs:
        path = posixpath.join(directory, soname)
        if ctx.fs.is_file(path):
            found.append((path, via))
    if search.cache is not None:
        cached = ldcache.lookup(search.cache_index.get(soname, ()), soname, search.machine)
        if cached is not None and ctx.fs.is_file(cached):
            found.append((cached, "ld.so.cache"))
    else:
        found += [(p, "ld.so.conf") for d in search.conf_dirs if ctx.fs.is_file(p := posixpath.join(d, soname))]
    found += [(p, "default") for d in search.defaults if ctx.fs.is_file(p := posixpath.join(d, soname))]
    return found


def _first(ctx: ProbeContext, search: _Search, soname: str, dirs: list[tuple[str, str]] | tuple[()]) -> str | None:
    found = _candidates(ctx, search, soname, list(dirs))
    return found[0][0] if found else None


def resolve(
    ctx: ProbeContext, search: _Search, versions: _Versions, soname: str, dyn: ElfDynamic, needer: str
) -> tuple[LinkedFile | None, tuple[LinkedFile, ...], tuple[str, ...]]:
    """(the copy ld.so loads for ``soname`` needed by ``needer``, the copies it hides, the copies it skips).

    The hidden copies include the pip wheels' copies of ``soname`` that are not on this needer's search
    path at all (``via`` says so): the package depends on that wheel, and the loaded copy stands in for it.
    A copy built for another CPU (an aarch64 libcudart in an x86-64 image) is skipped, as ld.so skips it and
    searches on: it is named, with why, in the third part.
    """
    found = _candidates(ctx, search, soname, _order(search, dyn, posixpath.dirname(needer)))
    found += [(p, "wheel, off this object's search path") for p in versions.wheel_copies(soname)]
    unique: list[tuple[str, str]] = []
    reals: set[str] = set()
    foreign: list[str] = []
    for path, via in found:
        real = _real(ctx, path)
        if real in reals:
            continue
        reals.add(real)
        why = versions.foreign(path)
        if why:
            foreign.append(f"{path} ({why})")
        else:
            unique.append((path, via))
    files = [versions.file(path, via) for path, via in unique]
    preloaded = search.preloaded.get(soname)
    if preloaded is not None:
        return preloaded, tuple(f for f in files if _real(ctx, f.path) != _real(ctx, preloaded.path)), tuple(foreign)
    if not files:
        return None, (), tuple(foreign)
    return files[0], tuple(files[1:]), tuple(foreign)


def _real(ctx: ProbeContext, path: str) -> str:
    try:
        return ctx.fs.resolve(path)
    except OSError:
        return path


# --- versions and owners -------------------------------------------------------------------------


class _Versions:
    """The version and owner of a library file: its name, its link target, or the wheel that ships it."""

    def __init__(
        self,
        ctx: ProbeContext,
        sites: tuple[str, ...],
        dists: dict[str, Version | None],
        cache: scancache.ScanCache | None = None,
    ) -> None:
        self.ctx = ctx
        self.sites = [(s, _real(ctx, s)) for s in sites]
        self.dists = dists
        self.cache = cache  #: reads the ELF header of each copy found (its CPU), kept by the scan cache
        self._wheel_memo: dict[str, list[str]] = {}
        self._owners: dict[str, tuple[str | None, str | None]] = {}
        self._files: dict[tuple[str, str], LinkedFile] = {}
        self._foreign: dict[str, str | None] = {}

    def foreign(self, path: str) -> str | None:
        """Why ld.so of the examined machine skips the library at ``path`` (``"for AArch64"``: its ELF header names
        another CPU, class or byte order), or None: it loads it, or it is no ELF file this can read (kept as
        found, as before) or the machine is not in :data:`cudadoctor.probes.elf.TARGETS`."""
        if self.cache is None:
            return None
        if path not in self._foreign:
            try:
                host = self.ctx.fs.host_path(self.ctx.fs.resolve(path))  # an image's links followed inside it
            except (OSError, ValueError):
                host = None
            target = self.cache.target(host) if host is not None else None
            self._foreign[path] = elf.foreign(target, self.ctx.machine) if target is not None else None
        return self._foreign[path]

    def wheel_copies(self, soname: str) -> list[str]:
        """``soname`` in the NVIDIA wheels' library directories of every site directory."""
        if soname in self._wheel_memo:
            return self._wheel_memo[soname]
        found = self._wheel_memo[soname] = []
        for site, _real_site in self.sites:
            for directory in self.ctx.fs.glob(posixpath.join(site, "nvidia"), "*"):
                path = posixpath.join(directory, "lib", soname)
                if self.ctx.fs.is_file(path):
                    found.append(path)
        return found

    def file(self, path: str, via: str) -> LinkedFile:
        """The copy at ``path`` found ``via`` a search step, with its version and owner (each asked once per run:
        one copy serves many needers)."""
        key = (path, via)
        if key not in self._files:
            self._files[key] = self._file(path, via)
        return self._files[key]

    def _file(self, path: str, via: str) -> LinkedFile:
        version = _name_version(path) or _name_version(_real(self.ctx, path))
        distribution, bundled = self._owner(path)
        if distribution is not None:
            distribution = record_owner(self.ctx, path, distribution)
        if version is None and distribution is not None:
            version = self.dists.get(distribution)
        return LinkedFile(path, via, version, distribution, bundled)

    def _owner(self, path: str) -> tuple[str | None, str | None]:
        real = _real(self.ctx, path)
        for site, site_real in self.sites:
            for base in (site, site_real):
                if real.startswith(base.rstrip("/") + "/") or path.startswith(base.rstrip("/") + "/"):
                    rel = (real if real.startswith(base) else path)[len(base.rstrip("/")) + 1 :]
                    return self.wheel_of(rel)
        return None, None

    def wheel_of(self, rel: str) -> tuple[str | None, str | None]:
        """(the NVIDIA wheel, or else the package that bundles it) of a path relative to site-packages."""
        parts = rel.split("/")
        if parts[0] == "nvidia" and len(parts) >= 3:
            parsed = cuda_soname(parts[-1])
            component = _STEM_COMPONENT.get(parsed[0].split("_")[0] if parsed else "", parts[1].replace("_", "-"))
            key = "nvidia/" + component
        else:
            component, key = "", parts[0]
        if key not in self._owners:
            self._owners[key] = self._find_owner(component, parts[0])
        return self._owners[key]

    def _find_owner(self, component: str, top: str) -> tuple[str | None, str | None]:
        if not component:
            return None, owner_of(top, self.dists)
        wanted = re.compile(rf"nvidia-{re.escape(component)}(-cu\d+)?")
        return next((name for name in sorted(self.dists) if wanted.fullmatch(name)), None), None


def owner_of(top: str, dists: dict[str, Version | None] | set[str]) -> str:
    """The distribution a top-level site-packages entry belongs to, by name.

    ``ctranslate2.libs`` (auditwheel's directory) -> ``ctranslate2``; ``onnxruntime`` -> ``onnxruntime-gpu``.
    """
    stem = re.sub(r"(\.libs|\.cpython.*|\.abi3.*|\.so.*)$", "", top)
    name = re.sub(r"[-_.]+", "-", stem).lower()
    if name in dists:
        return name
    matches = [d for d in dists if d.startswith(name + "-") or name.startswith(d + "-")]
    return min(matches, key=len) if matches else name


@functools.lru_cache(maxsize=4096)
def _name_version(path: str) -> Version | None:
    match = _FULL.search(posixpath.basename(path))
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:
        return None


# --- the scan --------------------------------------------------------------------------------------


def _objects(ctx: ProbeContext, cache: scancache.ScanCache, site: str, unread: list[str]) -> list[tuple[str, str]]:
    """(path, path on this machine's disk) of one site directory's shared objects, at the depths wheels use; what
    was left out (past the object cap, a directory not listed) is added to ``unread``."""
    try:
        host = ctx.fs.host_path(ctx.fs.resolve(site))
    except OSError:
        return []
    host = host.rstrip("/") or "/"
    cache.unread.clear()
    found, more = scancache.site_objects(cache, host, _MAX_OBJECTS)
    unread += [f"{_inside(site, host, where)}: {why}" for where, why in sorted(cache.unread.items())]
    if more:
        why = f"more than {_MAX_OBJECTS} shared objects; the rest were not read"
        ctx.fail("linkage", why, site)
        unread.append(f"{site}: {why}")
    return [(posixpath.join(site, rel), posixpath.join(host, rel)) for rel in found]


def _inside(site: str, host: str, where: str) -> str:
    """The examined machine's path of ``where``, a path on this machine's disk below ``host`` (``site``'s)."""
    return site.rstrip("/") + where[len(host.rstrip("/")) :] if where.startswith(host.rstrip("/") + "/") else where


#: At most this many unread objects are named one by one; the rest are counted.
_MAX_UNREAD_NAMED = 20


def _view(search: _Search, needs: list[NeededLibrary], note: str, scanned: int, unread: list[str]) -> LoaderView:
    preloaded = tuple(search.preloaded.values())
    return LoaderView(preloaded, tuple(needs), note, scanned, tuple(unread[:_MAX_UNREAD_NAMED]), len(unread))


def _needs_of(versions: _Versions, site: str, path: str, dyn: ElfDynamic) -> list[tuple[str, str]]:
    rel = path[len(site.rstrip("/")) + 1 :]
    wheel, bundled = versions.wheel_of(rel)
    package = wheel or bundled or rel.split("/")[0]
    return [(package, soname) for soname in dyn.needed if cuda_soname(soname)]


def probe_loader_view(ctx: ProbeContext) -> LoaderView | None:
    """Resolve every CUDA library the installed packages' shared objects need, as ld.so would.

    :param ctx: the probe context.
    :return: None when no shared object of any installed package needs a CUDA library.
    """
    from cudadoctor.probes import interpreter, packages  # the interpreter, its site directories, its distributions

    sites = tuple(interpreter.site_paths(ctx))
    # Versions are needed only for NVIDIA's wheels (the copies they ship); names for every distribution.
    installed = {n: _dist_version(d.dir_version) for n, d in packages.distributions(ctx).items()}
    dists = {n: v if n.startswith("nvidia-") else None for n, v in installed.items()}
    cache = scancache.ScanCache(observe=ctx.observe)
    versions = _Versions(ctx, sites, dists, cache)
    unread: list[str] = []
    objects = [(site, path, host) for site in sites for path, host in _objects(ctx, cache, site, unread)]
    cache.unread.clear()
    scanned = {path: dyn for _site, path, host in objects if (dyn := cache.dynamic(host)) is not None}
    unread += [f"{path}: {cache.unread[host]}" for _site, path, host in objects if host in cache.unread]
    search, note = _search(ctx, versions)
    needs: list[NeededLibrary] = []
    seen: set[tuple[str, str]] = set()
    majors: dict[str, tuple[str, ...]] = {}  # soname -> other majors found (the same for every needer)
    for site, path, _host in objects:
        dyn = scanned.get(path)
        if dyn is None:
            continue
        for package, soname in _needs_of(versions, site, path, dyn):
            if (package, soname) in seen:
                continue
            if len(seen) >= _MAX_NEEDS:
                why = f"more than {_MAX_NEEDS} (package, CUDA library) needs; the rest were not resolved"
                ctx.fail("linkage", why)
                cache.save()
                return _view(search, needs, note, len(objects), [*unread, why])
            seen.add((package, soname))
            loaded, shadowed, foreign = resolve(ctx, search, versions, soname, dyn, path)
            wanted = tuple(v for file, names in dyn.version_needs if file == soname for v in names)
            if not loaded and soname not in majors:
                majors[soname] = _other_majors(ctx, search, sites, soname)
            others = () if loaded else majors[soname]
            subs = _shim_sublibraries(ctx, search, versions, soname, loaded)
            needs.append(NeededLibrary(package, path, soname, loaded, shadowed, others, wanted, subs, foreign=foreign))
    loads = _RuntimeLoads(installed, scanned, majors, sites, cache)
    needs += runtime_needs(ctx, search, versions, loads)
    cache.save()
    needs = framework_preloads(ctx, versions, needs, installed, sites)
    needs = cudnn_siblings(ctx, needs)
    if not needs and not search.preloaded and not unread:
        return None
    return _view(search, needs, note, len(objects), unread)


def _dist_version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _other_majors(ctx: ProbeContext, search: _Search, sites: tuple[str, ...], soname: str) -> tuple[str, ...]:
    """Files of the same library with another soname number, wherever a loader or a wheel keeps them."""
    stem = soname.split(".so.")[0]
    dirs = [*search.ld_library_path, *search.conf_dirs, *search.defaults]
    dirs += [d for site in sites for d in ctx.fs.glob(posixpath.join(site, "nvidia"), "*") if ctx.fs.is_dir(d)]
    dirs = [posixpath.join(d, "lib") if "/nvidia/" in d else d for d in dirs]
    dirs += [d for root in ctx.fs.glob("/usr/local", "cuda*") for d in (f"{root}/lib64", f"{root}/lib")]
    if search.cache is not None:
        dirs += sorted({posixpath.dirname(e.path) for e in search.cache if e.soname.startswith(stem + ".so.")})
    found = loader.find_in_dirs(ctx, list(dict.fromkeys(dirs)), f"{stem}.so.*")
    return tuple(p for p in found if (parsed := cuda_soname(p)) and parsed[1] != soname)


# --- cuDNN's sub-libraries ---------------------------------------------------------------------------

_CUDNN_SHIM = re.compile(r"^libcudnn\.so\.(\d+)$")
#: At most this many sub-library names are resolved per shim (cuDNN 9 has eight).
_MAX_SUBLIBRARIES = 32


def _shim_sublibraries(
    ctx: ProbeContext, search: _Search, versions: _Versions, soname: str, loaded: LinkedFile | None
) -> tuple[SubLibrary, ...]:
    """The sub-libraries a loaded cuDNN shim (``libcudnn.so.N``) can ``dlopen`` by soname: each one's copy beside
    the shim and the first copy of the loader's own search (LD_LIBRARY_PATH, the cache, the default directories).

    cuDNN 8 and later split the library into a shim and sub-libraries it loads at run time
    (https://docs.nvidia.com/deeplearning/cudnn/latest/api/overview.html); which of the two copies loads is
    the rule of that major (compat/libraries.toml ``cudnn_loading``), judged by CD302, not here.
    """
    match = _CUDNN_SHIM.match(soname)
    if loaded is None or match is None:
        return ()
    directory = posixpath.dirname(loaded.path)
    subs = []
    for name in _sublibrary_names(ctx, search, loaded.path, match.group(1))[:_MAX_SUBLIBRARIES]:
        beside = posixpath.join(directory, name)
        found = _candidates(ctx, search, name, [(d, "LD_LIBRARY_PATH") for d in search.ld_library_path])
        subs.append(SubLibrary(
            name,
            versions.file(beside, f"beside {soname}") if ctx.fs.is_file(beside) else None,
            versions.file(*found[0]) if found else None,
        ))  # fmt: skip
    return tuple(subs)


def _sublibrary_names(ctx: ProbeContext, search: _Search, shim: str, major: str) -> list[str]:
    """Sonames ``libcudnn_*.so.<major>`` beside the shim, in the loader's directories or in its cache."""
    dirs = [posixpath.dirname(shim), *search.ld_library_path, *search.defaults]
    dirs += list(search.conf_dirs) if search.cache is None else []
    names = {posixpath.basename(p) for p in loader.find_in_dirs(ctx, dirs, f"libcudnn_*.so.{major}")}
    if search.cache is not None:
        names |= {e.soname for e in search.cache if re.fullmatch(rf"libcudnn_\w+\.so\.{major}", e.soname)}
    return sorted(n for n in names if re.fullmatch(rf"libcudnn_\w+\.so\.{major}", n))


# --- a wheel's file overwritten by another wheel ------------------------------------------------------

_CUDA_SUFFIX = re.compile(r"-cu\d+$")


def record_owner(ctx: ProbeContext, path: str, distribution: str) -> str:
    """The distribution whose installed file ``path`` is, when two wheels of one library install the same path.

    nvidia-nccl-cu11 and nvidia-nccl-cu12 both install ``nvidia/nccl/lib/libnccl.so.2``; pip does not
    uninstall one for the other, so the wheel installed last overwrote the file. Each wheel's ``RECORD``
    lists the path with the size it wrote
    (https://packaging.python.org/en/latest/specifications/recording-installed-packages/): the one whose size
    matches the file on disk owns it. ``distribution`` (the name's first match) stands when nothing decides.
    """
    from cudadoctor.probes import packages  # owns the distributions' directories

    dists = packages.distributions(ctx)
    family = _cuda_families(ctx, dists).get(_CUDA_SUFFIX.sub("", distribution), ())
    rivals = [dists[n] for n in family if n != distribution]
    if not rivals or distribution not in dists:
        return distribution
    try:
        size = ctx.fs.size(path)
    except OSError:
        return distribution
    matching = [d.name for d in (dists[distribution], *rivals) if _recorded_size(ctx, d, path) == size]
    return matching[0] if len(matching) == 1 else distribution


def _cuda_families(ctx: ProbeContext, dists: dict[str, Distribution]) -> dict[str, tuple[str, ...]]:
    """Installed distributions by name without the CUDA suffix (``nvidia-nccl`` -> cu11, cu12), sorted; once per run."""

    def group() -> dict[str, tuple[str, ...]]:
        families: dict[str, list[str]] = {}
        for name in sorted(dists):
            families.setdefault(_CUDA_SUFFIX.sub("", name), []).append(name)
        return {base: tuple(names) for base, names in families.items()}

    return ctx.once("cuda-families", group)


def _recorded_size(ctx: ProbeContext, dist: Distribution, path: str) -> int | None:
    """The size a distribution's RECORD states for ``path`` (a path below its site directory), or None."""
    location = dist.location.rstrip("/")
    if not path.startswith(location + "/"):
        return None
    return _record_sizes(ctx, dist.path).get(path[len(location) + 1 :])


def _record_sizes(ctx: ProbeContext, info: str) -> dict[str, int]:
    """Each path a dist-info's RECORD lists with a size, read once per run (torch's RECORD has ~15,000 lines)."""

    def read() -> dict[str, int]:
        try:
            text = ctx.fs.read_text(posixpath.join(info, "RECORD"), 4 << 20)
        except (OSError, UnicodeDecodeError):
            return {}
        sizes: dict[str, int] = {}
        for line in text.splitlines():
            name, _sep, rest = line.partition(",")
            size = rest.rpartition(",")[2]
            if size.isdigit():
                sizes.setdefault(name, int(size))
        return sizes

    return ctx.once(f"record-sizes:{info}", read)


# --- libraries loaded by name at run time ----------------------------------------------------------
#
# Some packages open CUDA libraries with dlopen("libcublas.so.12") instead of linking them (CTranslate2
# with CUDA_DYNAMIC_LOADING, and the cuDNN shim its wheel bundles, which opens cuDNN's sub-libraries):
# DT_NEEDED does not show them, so compat/runtime_libraries.toml says which object opens which names.
# glibc's dlopen of a name without a slash searches like ld.so for a DT_NEEDED entry of the calling
# object: its DT_RPATH (when it has no DT_RUNPATH), LD_LIBRARY_PATH, its DT_RUNPATH, /etc/ld.so.cache,
# the default directories (dlopen(3), https://man7.org/linux/man-pages/man3/dlopen.3.html), after an
# already loaded object with that soname. That last case (torch, imported first, has loaded its wheel's
# libcublas.so.12) depends on import order: such a need keeps the wheel's copy as ``loaded`` with
# ``via`` saying it is off the search path, and CD304 warns rather than fails.


@functools.cache
def runtime_load_rows() -> tuple[RuntimeLoad, ...]:
    """compat/runtime_libraries.toml's rows, read once per process."""
    from cudadoctor.data import CompatMatrix

    return CompatMatrix(cache_dir=False).runtime_loads


@record
class _RuntimeLoads:
    """What the run-time needs are resolved against."""

    installed: dict[str, Version | None]  #: every distribution's version
    scanned: dict[str, ElfDynamic]  #: the dynamic sections read by the scan, by path
    majors: dict[str, tuple[str, ...]]  #: soname -> files of its other majors (shared memo)
    sites: tuple[str, ...]
    cache: scancache.ScanCache  #: the scan's cache, which keeps the openers' search paths too


def runtime_needs(ctx: ProbeContext, search: _Search, versions: _Versions, loads: _RuntimeLoads) -> list[NeededLibrary]:
    """The CUDA libraries installed packages open by name at run time, resolved as dlopen would."""
    try:
        rows = runtime_load_rows()
    except CompatDataError as exc:
        where = "compat/runtime_libraries.toml"
        ctx.fail("linkage", f"libraries loaded by name at run time not resolved: {exc}", where)
        return []
    needs: list[NeededLibrary] = []
    for row in rows:
        version = loads.installed.get(row.package)
        if version is None or row.arch != ctx.machine or not row.versions.contains(version, prereleases=True):
            continue
        optional = row.optional or bool(row.required_with and not any(p in loads.installed for p in row.required_with))
        for obj in _loading_objects(ctx, loads.sites, row.object):
            dyn = _absolute_paths(loads.scanned.get(obj) or _opener_dynamic(ctx, obj, loads.cache))
            for soname in row.sonames:
                loaded, shadowed, foreign = resolve(ctx, search, versions, soname, dyn, obj)
                if loaded is None and soname not in loads.majors:
                    loads.majors[soname] = _other_majors(ctx, search, loads.sites, soname)
                others = () if loaded else loads.majors[soname]
                needs.append(
                    NeededLibrary(
                        row.package,
                        obj,
                        soname,
                        loaded,
                        shadowed,
                        others,
                        (),
                        how="dlopen",
                        optional=optional,
                        foreign=foreign,
                    )
                )
    return needs


def _loading_objects(ctx: ProbeContext, sites: tuple[str, ...], pattern: str) -> list[str]:
    """The files matching a row's ``object`` glob (``dir/name-*.so*``) in the first site that has any."""
    directory, name = posixpath.split(pattern)
    for site in sites:
        found = sorted(p for p in ctx.fs.glob(posixpath.join(site, directory), name) if ctx.fs.is_file(p))
        if found:
            return found[:1]
    return []


def _opener_dynamic(ctx: ProbeContext, path: str, cache: scancache.ScanCache) -> ElfDynamic:
    """The dynamic section of an object that opens CUDA libraries by name but needs none (the scan keeps only
    objects with a CUDA DT_NEEDED): its RUNPATH still decides where its dlopen looks (TensorRT 8.5's
    libnvinfer.so.8: static cudart, RUNPATH into the nvidia wheels, compat/runtime_libraries.toml)."""
    try:
        host = ctx.fs.host_path(ctx.fs.resolve(path))  # an image's links followed inside the image
    except (OSError, ValueError):
        return ElfDynamic()
    return cache.opener(host)


def _absolute_paths(dyn: ElfDynamic) -> ElfDynamic:
    """The dynamic section without relative RPATH/RUNPATH entries, which ld.so takes relative to the
    process's working directory (the ``ctranslate2.libs`` RPATH of the bundled cuDNN shim): unknowable here."""

    def keep(entries: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(e for e in entries if e.startswith(("/", "$ORIGIN", "${ORIGIN}")))

    return replace(dyn, rpath=keep(dyn.rpath), runpath=keep(dyn.runpath))


# --- libraries a framework preloads by full path when imported -------------------------------------


@functools.cache
def framework_preload_rows() -> tuple[FrameworkPreload, ...]:
    """compat/runtime_libraries.toml's ``preload`` rows, read once per process."""
    from cudadoctor.data import CompatMatrix

    return CompatMatrix(cache_dir=False).framework_preloads


def framework_preloads(
    ctx: ProbeContext,
    versions: _Versions,
    needs: list[NeededLibrary],
    installed: dict[str, Version | None],
    sites: tuple[str, ...],
) -> list[NeededLibrary]:
    """The needs with the copies an installed framework loads by full path when imported put first.

    torch's ``_load_global_deps`` (compat/runtime_libraries.toml ``preload``) loads ``nvidia/<folder>/lib/<file>``
    of the first ``sys.path`` entry holding it with ``ctypes.CDLL``; ld.so then reuses that copy for every
    later need of its soname (ld.so(8)). Only stats and directory listings: no file is read.
    """
    try:
        rows = framework_preload_rows()
    except CompatDataError as exc:
        ctx.fail("linkage", f"frameworks' preloads not modelled: {exc}", "compat/runtime_libraries.toml")
        return needs
    for row in rows:
        version = installed.get(row.package)
        if version is None or not row.versions.contains(version, prereleases=True) or not _required(row, installed):
            continue
        own = [n for n in needs if n.package == row.package and n.how == "DT_NEEDED"]
        if not _preload_runs(row, own):
            continue
        via = f"preloaded by {row.package} {version}" + (f" ({row.member})" if row.member else "")
        copies = _preloaded_copies(ctx, versions, sites, row, via, _cuda_major(own))
        users = _wheel_users(needs)
        needs = [
            _preloaded(ctx, n, copies[n.soname])
            if n.soname in copies and _loaded_by(n, row.package, users, row.serves)
            else n
            for n in needs
        ]
    return needs


def _required(row: FrameworkPreload, installed: dict[str, Version | None]) -> bool:
    """The distribution the row takes its libraries from is installed in the versions it accepts (CuPy
    preloads NCCL only from an nvidia-nccl wheel of its major at least its ``min_pypi_version``)."""
    if row.requires_package is None:
        return True
    version = installed.get(row.requires_package)
    return version is not None and (row.requires_versions is None or row.requires_versions.contains(version))


def _cuda_major(own: list[NeededLibrary]) -> str | None:
    """The CUDA major of the framework's own libcudart need (``libcudart.so.13`` -> ``13``)."""
    return next((n.soname.rsplit(".", 1)[1] for n in own if n.soname.startswith("libcudart.so.")), None)


def _preload_runs(row: FrameworkPreload, own: list[NeededLibrary]) -> bool:
    """Whether the row's condition holds for the framework's own needs as the loader view resolved them."""
    if row.when == "wheel_cudart":
        return any(
            n.soname.startswith("libcudart.so.")
            and n.loaded is not None
            and "/nvidia/cuda_runtime/lib/" in n.loaded.path
            for n in own
        )
    if row.when == "always":
        return True
    if row.when == "cudart_loaded":
        return any(n.soname.startswith("libcudart.so.") and n.loaded is not None for n in own)
    if row.when == "load_failure":
        globs = [posixpath.basename(lib) for lib in row.libraries]
        return any(
            (n.loaded is None or n.loaded.via.startswith("wheel")) and any(match_names((n.soname,), g) for g in globs)
            for n in own
        )
    return False


def _preloaded_copies(
    ctx: ProbeContext,
    versions: _Versions,
    sites: tuple[str, ...],
    row: FrameworkPreload,
    via: str,
    cuda_major: str | None = None,
) -> dict[str, LinkedFile]:
    """soname -> the copy the framework loads: the row's file in the first site directory that has it
    (``nvidia/<folder>/lib``, then ``nvidia/cu<N>/lib`` where the row says so). An ``ordered`` row stops at
    the first library no site directory holds, as torch's ``_preload_cuda_deps`` does (it raises there)."""
    copies: dict[str, LinkedFile] = {}
    for library in row.libraries:
        found = _first_preload_file(ctx, sites, library, cuda_major if row.cuda_folder else None)
        if found is not None and versions.foreign(found):  # dlopen fails on another CPU's library: none loaded
            found = None
        if found is None:
            if row.ordered:
                break
            continue
        parsed = cuda_soname(found)
        if parsed is not None:
            copies.setdefault(parsed[1], versions.file(found, via))
    return copies


def _first_preload_file(ctx: ProbeContext, sites: tuple[str, ...], library: str, cuda_major: str | None) -> str | None:
    """The file ``<folder>/lib/<glob>`` names under ``nvidia/`` of the first site directory holding it."""
    directory, pattern = posixpath.split(library)
    folders = [directory] + ([f"cu{cuda_major}/lib"] if cuda_major else [])
    for site in sites:
        for folder in folders:
            found = sorted(p for p in ctx.fs.glob(posixpath.join(site, "nvidia", folder), pattern) if ctx.fs.is_file(p))
            if found:
                return found[0]
    return None


def _wheel_users(needs: list[NeededLibrary]) -> dict[str, set[str]]:
    """NVIDIA wheel -> the other packages whose needs load (or could load) one of its libraries."""
    users: dict[str, set[str]] = {}
    for need in needs:
        for copy in (need.loaded, *need.shadowed):
            if copy is not None and copy.distribution and not need.package.startswith("nvidia-"):
                users.setdefault(copy.distribution, set()).add(need.package)
    return users


def _loaded_by(need: NeededLibrary, framework: str, users: dict[str, set[str]], serves: tuple[str, ...] = ()) -> bool:
    """The need is the framework's own (or of a package it ``serves``: JAX's PJRT plugin preloads before its
    kernels package loads), or an NVIDIA wheel's that no other package uses (a JAX plugin using the same
    nvidia-cusparse wheel gets no help from torch's preload)."""
    own = {framework, *serves}
    if need.package in own:
        return True
    return need.package.startswith("nvidia-") and users.get(need.package, set()) <= own


_CUDNN_FILE = re.compile(r"^libcudnn(?:_\w+)?\.so\.(\d+)")


def cudnn_siblings(ctx: ProbeContext, needs: list[NeededLibrary]) -> list[NeededLibrary]:
    """The needs with a cuDNN library's need of another cuDNN library of its major resolved to the copy beside
    it, where that major's core loads its sub-libraries from its own directory first (compat/libraries.toml
    ``cudnn_loading``: cuDNN 9, pytorch/pytorch#119989). By the time such a DT_NEEDED is resolved the sibling is
    loaded, and ld.so reuses a loaded soname (ld.so(8)): measured on the H200, the cu13 wheel's
    ``libcudnn_adv.so.9`` uses the wheel's ``libcudnn_graph.so.9`` though a system cuDNN 9.14 is first on
    LD_LIBRARY_PATH."""
    out = []
    for need in needs:
        sibling = _sibling_of(need)
        if sibling is None or sibling is need.loaded:
            out.append(need)
        else:
            out.append(_preloaded(ctx, need, replace(sibling, via="loaded by cuDNN from its own directory")))
    return out


def _sibling_of(need: NeededLibrary) -> LinkedFile | None:
    """The copy of a cuDNN library's same-major cuDNN need found beside it, when that major loads its own
    directory first; None otherwise."""
    needer, soname = _CUDNN_FILE.match(posixpath.basename(need.needer)), _CUDNN_FILE.match(need.soname)
    if needer is None or soname is None or needer.group(1) != soname.group(1):
        return None
    if not _cudnn_own_directory_first(int(soname.group(1))):
        return None
    here = posixpath.dirname(need.needer)
    return next((f for f in (need.loaded, *need.shadowed) if f and posixpath.dirname(f.path) == here), None)


def _cudnn_own_directory_first(major: int) -> bool | None:
    from cudadoctor.data import CompatMatrix

    try:
        return CompatMatrix(cache_dir=False).cudnn_own_directory_first(major)
    except CompatDataError:
        return None


def _preloaded(ctx: ProbeContext, need: NeededLibrary, copy: LinkedFile) -> NeededLibrary:
    """The need with ``copy`` loaded and the copy its own search found among the ones hidden."""
    loaded = need.loaded
    if loaded is not None and _real(ctx, loaded.path) == _real(ctx, copy.path):
        return need if not loaded.via.startswith("wheel") else replace(need, loaded=copy)
    hidden = tuple(f for f in (loaded, *need.shadowed) if f is not None and _real(ctx, f.path) != _real(ctx, copy.path))
    return replace(need, loaded=copy, shadowed=hidden)
