"""The distributions of interest installed in the target interpreter (:mod:`.interpreter`), and their builds.

Nothing here imports a framework or executes a file of the examined environment: distributions are found
from their ``*.dist-info`` / ``*.egg-info`` directory names, and only the distributions listed in
:data:`INTERESTING_NAMES` / :data:`INTERESTING_PREFIXES` have their ``METADATA`` read. torch's build is
read from ``torch/version.py`` *as text*.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import posixpath
import re
from functools import partial

from packaging.version import InvalidVersion, Version

from cudadoctor.bounded import (
    parse_marker,
    parse_version,
    requirement_or_none,
    version_or_none,
)
from cudadoctor.facts.model import InstalledPackage, PythonEnv, Source, SourceKind, TorchBuild
from cudadoctor.facts.names import INTERESTING_NAMES, INTERESTING_PREFIXES, canonical_name, is_interesting
from cudadoctor.facts.requires import read_requirement
from cudadoctor.probes import interpreter, markers
from cudadoctor.probes.context import ProbeContext
from cudadoctor.record import record

__all__ = [
    "INTERESTING_NAMES",
    "INTERESTING_PREFIXES",
    "Distribution",
    "canonical_name",
    "cuda_variant_from_local",
    "cuda_variant_from_name",
    "distributions",
    "is_interesting",
    "parse_dist_dirname",
    "parse_metadata",
    "parse_requires_txt",
    "parse_torch_version_py",
    "probe_packages",
]

_PKG_PROBE = "packages"


# --- distributions --------------------------------------------------------------------------------


@record
class Distribution:
    """One installed distribution, known so far only by its metadata directory's name."""

    name: str  #: canonical name (``nvidia-cudnn-cu13``)
    dir_version: str | None  #: the version in the directory name (``9.19.0.56``), as written
    path: str  #: the ``*.dist-info`` / ``*.egg-info`` path
    location: str  #: the site directory holding it


_DIST_DIR = re.compile(r"^(?P<name>.+?)(?:-(?P<version>\d[^-]*?)(?:-.*)?)?\.(?:dist-info|egg-info)$", re.IGNORECASE)


def parse_dist_dirname(dirname: str) -> tuple[str, str | None] | None:
    """(canonical name, version as written) from a metadata directory's name; None for others.

    Parse, e.g.::

        nvidia_cudnn_cu13-9.19.0.56.dist-info   ->  ("nvidia-cudnn-cu13", "9.19.0.56")
        torch-2.5.1+cu124.dist-info             ->  ("torch", "2.5.1+cu124")
        Foo_Bar-1.0-py3.8.egg-info              ->  ("foo-bar", "1.0")
        foo.egg-info                            ->  ("foo", None)
    """
    if not dirname.endswith((".dist-info", ".egg-info")):
        return None
    match = _DIST_DIR.match(dirname)
    if not match or not match.group("name"):
        return None
    return canonical_name(match.group("name")), match.group("version")


def distributions(ctx: ProbeContext) -> dict[str, Distribution]:
    """Every distribution in the target's site directories, by canonical name (cached).

    Only directory listings: no file is opened. As with sys.path, the first site directory that
    holds a distribution wins; within one directory, the first name in sorted order.
    """

    def compute() -> dict[str, Distribution]:
        found: dict[str, Distribution] = {}
        for site in interpreter.site_paths(ctx):
            try:
                names = ctx.fs.listdir(site)
            except OSError:
                continue
            for entry in names:
                parsed = parse_dist_dirname(entry)
                if parsed is None or parsed[0] in found:
                    continue
                found[parsed[0]] = Distribution(parsed[0], parsed[1], posixpath.join(site, entry), site)
        return found

    return ctx.once("python.distributions", compute)


# --- METADATA -------------------------------------------------------------------------------------


def parse_metadata(text: str) -> dict[str, list[str]]:
    """The header fields of a core-metadata file (``METADATA`` / ``PKG-INFO``), keys lower-cased.

    Stops at the first blank line (the description follows). Parse, e.g.::

        Metadata-Version: 2.4
        Name: torch
        Version: 2.11.0
        Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"
    """
    fields: dict[str, list[str]] = {}
    last: list[str] | None = None
    end = text.find("\n\n")  # only the headers, not a long description
    for line in (text if end < 0 else text[:end]).splitlines():
        if not line.strip():
            break
        if line[0] in " \t":
            if last:
                last[-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            last = None
            continue
        last = fields.setdefault(key.strip().lower(), [])
        last.append(value.strip())
    return fields


def parse_requires_txt(text: str) -> list[str]:
    """An egg-info ``requires.txt`` as Requires-Dist strings (sections become markers).

    Parse, e.g.::

        numpy>=1.20
        [:sys_platform == "linux"]
        nvidia-cuda-runtime-cu12==12.1.105
        [dev]
        pytest
    """
    out: list[str] = []
    extra, marker = "", ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, marker = line[1:-1].partition(":")
            extra, marker = extra.strip(), marker.strip()
            continue
        conditions = [f"({marker})"] if marker else []
        if extra:
            conditions.append(f'extra == "{extra}"')
        out.append(f"{line}; {' and '.join(conditions)}" if conditions else line)
    return out


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


_SYS_PLATFORM = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}


def _marker_env(ctx: ProbeContext, python: PythonEnv) -> dict[str, str]:
    """The marker environment of the *target*: its OS, CPU and Python, not cudadoctor's."""
    env = {
        "sys_platform": _SYS_PLATFORM.get(ctx.system, ctx.system.lower()),
        "platform_system": ctx.system,
        "platform_machine": ctx.machine,
        "os_name": "nt" if ctx.system == "Windows" else "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    if python.version is not None:
        env["python_version"] = f"{python.version.major}.{python.version.minor}"
        env["python_full_version"] = str(python.version)
        env["implementation_version"] = str(python.version)
    return env


def _applicable(lines: list[str], env: dict[str, str], cache: dict[str, bool]) -> list[str]:
    """The Requires-Dist lines that apply without an extra on the target."""
    out = []
    for line in lines:
        head, sep, marker_text = line.partition(";")
        if "@" in head and sep:  # "name @ url ; marker": the URL may hold a ';'
            if (parsed := requirement_or_none(line)) is None:
                continue
            marker_text = str(parsed.marker) if parsed.marker else ""
        marker_text = marker_text.strip()
        if not marker_text:
            out.append(line)
            continue
        if marker_text not in cache:
            cache[marker_text] = _marker_applies(marker_text, env)
        if cache[marker_text]:
            out.append(line)
    return out


def _marker_applies(marker_text: str, env: dict[str, str]) -> bool:
    simple = markers.evaluate(marker_text, env)
    if simple is not None:
        return simple
    # Imported here: packaging's marker parser costs ~11 ms to import, paid only for a marker of a rarer form.
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

    try:
        return parse_marker(marker_text).evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, ValueError):
        return False


def _requirement_name(line: str) -> str | None:
    match = _REQ_NAME.match(line)
    return canonical_name(match.group(1)) if match else None


# --- CUDA variants --------------------------------------------------------------------------------


def _cu_digits(digits: str) -> str:
    """``130`` -> ``13.0``, ``118`` -> ``11.8``, ``92`` -> ``9.2``: the last digit is the minor."""
    return f"{int(digits[:-1])}.{digits[-1]}"


def cuda_variant_from_local(local: str | None) -> tuple[str, str | None] | None:
    """(variant, CUDA version) from a version's local tag; None when it names no build.

    ``cu130`` -> (``cu130``, ``13.0``); ``cu118`` -> (``cu118``, ``11.8``); ``rocm6.2`` ->
    (``rocm6.2``, None); ``cpu`` and ``cpu.cxx11.abi`` -> (``cpu``, None); ``xpu`` -> (``xpu``, None);
    jaxlib's old ``cuda12.cudnn89`` -> (``cuda12``, ``12``); older still ``cuda112`` -> (``cuda112``, ``11.2``).
    """
    if not local:
        return None
    local = local.lower()
    if match := re.match(r"cu(\d{2,3})(?:$|\.)", local):
        return f"cu{match.group(1)}", _cu_digits(match.group(1))
    if match := re.match(r"rocm(\d+(?:\.\d+)*)", local):
        return f"rocm{match.group(1)}", None
    if match := re.match(r"cuda(\d+)(?:$|\.)", local):
        # jaxlib's tags: cuda11 / cuda12 name a major; the older cuda101 … cuda112 a major and minor
        # (https://storage.googleapis.com/jax-releases/jax_cuda_releases.html: jaxlib-0.1.65+cuda112)
        digits = match.group(1)
        return f"cuda{digits}", _cu_digits(digits) if len(digits) == 3 else digits
    first = local.split(".", 1)[0]
    if first in ("cpu", "xpu"):
        return first, None
    return None


def cuda_variant_from_name(name: str) -> tuple[str, str | None] | None:
    """(variant, CUDA version) that a distribution's name carries; None when it carries none.

    ``cupy-cuda12x`` -> (``cuda12x``, ``12``); ``cupy-cuda117`` -> (``cuda117``, ``11.7``);
    ``jax-cuda13-plugin`` -> (``cuda13``, ``13``); ``jax-rocm60-plugin`` -> (``rocm6.0``, None);
    ``tensorrt-cu12``, ``nvidia-cudnn-cu13`` -> (``cu12``/``cu13``, major only);
    ``mxnet-cu112`` -> (``cu112``, ``11.2``); ``cupy-rocm-5-0`` -> (``rocm5.0``, None).
    """
    if match := re.fullmatch(r"cupy-cuda(\d+)x", name):
        return f"cuda{match.group(1)}x", match.group(1)
    if match := re.fullmatch(r"cupy-cuda(\d{2,3})", name):
        return f"cuda{match.group(1)}", _cu_digits(match.group(1))
    if match := re.fullmatch(r"cupy-rocm-(\d+)-(\d+)", name):
        return f"rocm{match.group(1)}.{match.group(2)}", None
    if match := re.fullmatch(r"jax-cuda(\d+)-(?:plugin|pjrt)", name):
        return f"cuda{match.group(1)}", match.group(1)
    if match := re.fullmatch(r"jax-rocm(\d)(\d*)-(?:plugin|pjrt)", name):
        minor = f".{match.group(2)}" if match.group(2) else ""
        return f"rocm{match.group(1)}{minor}", None
    if match := re.fullmatch(r"mxnet-cu(\d{2,3})(?:mkl)?", name):
        return f"cu{match.group(1)}", _cu_digits(match.group(1))
    if match := re.search(r"-cu(\d{2})(?:-|$)", name):
        return f"cu{match.group(1)}", match.group(1)
    return None


#: Distributions whose own version is the CUDA version they belong to (the toolkit meta-package
#: and the components NVIDIA versions with the CUDA release, 13.0.96 for CUDA 13.0).
_CUDA_VERSIONED = re.compile(r"cuda-toolkit|nvidia-cuda-(?:runtime|nvrtc|cupti|nvcc)(?:-cu\d+)?")
#: cuda-python / cuda-bindings: the major version is the CUDA major (13.x binds CUDA 13).
_CUDA_MAJOR_VERSIONED = ("cuda-bindings", "cuda-python")


def _variant_from_pins(requires: list[str]) -> tuple[str, str, str] | None:
    """From an exact pin of a CUDA-versioned component: ``cuda-toolkit[...]==13.0.2`` -> cu130."""
    best: tuple[int, str, str, str] | None = None
    for line in requires:
        name = _requirement_name(line)
        if name is None or not _CUDA_VERSIONED.fullmatch(name):
            continue
        read = read_requirement(line)
        if read is None:
            continue
        pins = [spec.version for spec in read[1] if spec.operator == "=="]
        if len(pins) != 1:
            continue
        match = re.match(r"(\d+)(?:\.(\d+))?", pins[0])
        if not match:
            continue
        major, minor = match.groups()
        variant = f"cu{major}{minor}" if minor is not None else f"cu{major}"
        build = f"{major}.{minor}" if minor is not None else major
        rank = 0 if name == "cuda-toolkit" else 1 if "runtime" in name else 2
        if best is None or rank < best[0]:
            best = (rank, variant, build, f"Requires-Dist {name}=={pins[0]}")
    return best[1:] if best else None


def _cuda_variant(
    name: str, version: Version, requires: list[str], version_py: dict[str, str | None] | None
) -> tuple[str | None, str | None, str | None]:
    """(variant, CUDA version, how it was established), by the first rule that applies.

    1. the local version tag: ``2.5.1+cu124`` -> cu124 / 12.4 (``rocm6.1``, ``cpu``, ``xpu`` too);
    2. the module's own ``version.py`` (torch, torchvision, torchaudio), for PyPI's default wheels
       whose dist-info has no local tag (``2.11.0``) while ``torch/version.py`` says ``2.11.0+cu130``:
       its ``__version__`` tag, else its ``cuda`` / ``hip`` / ``xpu`` fields; a version.py that
       says ``cuda = None`` and no ``hip`` is a CPU build (the macOS wheels, which use MPS);
    3. an exact Requires-Dist pin of ``cuda-toolkit`` / ``nvidia-cuda-runtime*`` /
       ``nvidia-cuda-nvrtc*``: ``cuda-toolkit[...]==13.0.2`` -> cu130 / 13.0;
    4. the distribution's own version for CUDA-versioned components (``nvidia-cuda-runtime
       13.0.96`` -> cu130) and cuda-bindings / cuda-python (major only);
    5. the name: ``cupy-cuda12x``, ``jax-cuda13-plugin``, ``tensorrt-cu12``, ``nvidia-*-cu12`` …
    """
    if found := cuda_variant_from_local(version.local):
        return found[0], found[1], "local version tag"
    if version_py is not None:
        how = f"{name}/version.py"
        try:
            tagged = version_or_none(version_py.get("__version__"))
        except InvalidVersion:
            tagged = None
        if tagged is not None and (found := cuda_variant_from_local(tagged.local)):
            return found[0], found[1], how
        cuda, hip, xpu = version_py.get("cuda"), version_py.get("hip"), version_py.get("xpu")
        if cuda and (match := re.match(r"(\d+)\.(\d+)", cuda)):
            return f"cu{match.group(1)}{match.group(2)}", f"{match.group(1)}.{match.group(2)}", how
        if hip and (match := re.match(r"(\d+)\.(\d+)", hip)):
            return f"rocm{match.group(1)}.{match.group(2)}", None, how
        if xpu:
            return "xpu", None, how
        if "cuda" in version_py and cuda is None and hip is None:
            return "cpu", None, how
    if found3 := _variant_from_pins(requires):
        return found3
    if _CUDA_VERSIONED.fullmatch(name):
        return f"cu{version.major}{version.minor}", f"{version.major}.{version.minor}", "package version"
    if name in _CUDA_MAJOR_VERSIONED:
        return f"cu{version.major}", str(version.major), "package version"
    if found := cuda_variant_from_name(name):
        return found[0], found[1], "package name"
    return None, None, None


# --- torch/version.py -----------------------------------------------------------------------------


_VERSION_PY_KEYS = ("__version__", "cuda", "hip", "debug", "git_version", "xpu")


@functools.cache
def _assignments() -> re.Pattern[str]:
    # `name = '…'`, `name: Optional[str] = '…'`, `name = None`, `name = True`; compiled on first use (only
    # an environment with torch reads a version.py)
    names = "|".join(_VERSION_PY_KEYS)
    return re.compile(
        rf"^({names})\s*(?::[^=\n]*)?=\s*(?:'([^'\n]*)'|\"([^\"\n]*)\"|(None|True|False))\s*$", re.MULTILINE
    )


def _version_py_fields(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for match in _assignments().finditer(text):
        key = match.group(1)
        if key in out:
            continue  # the first assignment counts, as a search per name found it
        quoted = match.group(2) if match.group(2) is not None else match.group(3)
        # the bare name None is Python's None; a quoted 'None' is a string like any other
        out[key] = quoted if quoted is not None else (None if match.group(4) == "None" else match.group(4))
    return {key: out[key] for key in _VERSION_PY_KEYS if key in out}


_CXX11_ABI = re.compile(r"-D_GLIBCXX_USE_CXX11_ABI=([01])")


def parse_torch_cxx11_abi(text: str) -> bool | None:
    """torch's C++ ABI from its ``TorchConfig.cmake``, which sets, e.g.::

        set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")

    (written by torch's build, cmake/TorchConfig.cmake.in:
    https://github.com/pytorch/pytorch/blob/main/cmake/TorchConfig.cmake.in).
    """
    match = _CXX11_ABI.search(text)
    return match.group(1) == "1" if match else None


def _torch_abi(ctx: ProbeContext, version_py: str) -> bool | None:
    config = posixpath.join(posixpath.dirname(version_py), "share", "cmake", "Torch", "TorchConfig.cmake")
    try:
        return parse_torch_cxx11_abi(ctx.fs.read_text(config, limit=64 << 10))
    except OSError:
        return None


def parse_torch_version_py(text: str, where: str = "torch/version.py") -> TorchBuild | None:
    """torch's build facts from ``torch/version.py`` read as text; None when it says nothing.

    Parse, e.g. (torch 2.11.0 from PyPI; older files write ``cuda = '12.1'`` without annotation)::

        __version__ = '2.11.0+cu130'
        debug = False
        cuda: Optional[str] = '13.0'
        git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'
        hip: Optional[str] = None
    """
    fields = _version_py_fields(text)
    if "__version__" not in fields and "cuda" not in fields:
        return None
    try:
        version = parse_version(raw) if (raw := fields.get("__version__")) else None
    except InvalidVersion:  # bounded: a number past int()'s 4300-digit limit is one too
        version = None
    debug = fields.get("debug")
    return TorchBuild(
        version=version,
        cuda=fields.get("cuda"),
        hip=fields.get("hip"),
        debug=None if debug is None else debug == "True",
        git_version=fields.get("git_version"),
        source=Source(SourceKind.FILE, where),
    )


# --- packages -------------------------------------------------------------------------------------

#: Modules whose ``<module>/version.py`` carries the build's local tag (torchvision: ``0.20.1+cu124``).
_VERSION_PY_MODULES = {"torch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio"}


def _read_fields(ctx: ProbeContext, dist: Distribution) -> tuple[dict[str, list[str]], str, list[str]] | None:
    """(METADATA fields, the file read, egg-info requires) or None when unreadable (recorded)."""
    is_egg = dist.path.endswith(".egg-info")
    if is_egg and ctx.fs.is_file(dist.path):
        meta_path = dist.path
    else:
        meta_path = posixpath.join(dist.path, "PKG-INFO" if is_egg else "METADATA")
    try:
        text = ctx.fs.read_text(meta_path)
    except OSError as exc:
        ctx.fail(_PKG_PROBE, f"cannot read the metadata of {dist.name}: {exc.strerror or exc}", meta_path)
        return None
    fields = parse_metadata(text)
    egg_requires: list[str] = []
    if is_egg and meta_path != dist.path and "requires-dist" not in fields:
        with contextlib.suppress(OSError):
            egg_requires = parse_requires_txt(ctx.fs.read_text(posixpath.join(dist.path, "requires.txt")))
    return fields, meta_path, egg_requires


def _module_version(ctx: ProbeContext, dist: Distribution, module: str) -> tuple[str | None, str]:
    path = posixpath.join(dist.location, module, "version.py")
    try:
        return ctx.fs.read_text(path, limit=64 << 10), path
    except OSError:
        return None, path


def _read_package(
    ctx: ProbeContext, dist: Distribution, env: dict[str, str], cache: dict[str, bool]
) -> InstalledPackage | None:
    read = _read_fields(ctx, dist)
    if read is None:
        return None
    fields, meta_path, egg_requires = read
    version_text = next(iter(fields.get("version", [])), None)
    source = Source(SourceKind.METADATA, meta_path)
    if not version_text:  # a truncated or corrupt METADATA: the directory name still says it
        version_text = dist.dir_version
        source = Source(SourceKind.FILENAME, dist.path)
    if not version_text:
        ctx.fail(_PKG_PROBE, f"{dist.name}: no version in its metadata or directory name", meta_path)
        return None
    try:
        version = parse_version(version_text)
    except InvalidVersion:
        ctx.fail(_PKG_PROBE, f"{dist.name}: invalid version {version_text[:60]!r}", meta_path)
        return None

    requires = _applicable(fields.get("requires-dist", []) or egg_requires, env, cache)
    cuda_requires = tuple(
        line for line in requires
        if (n := _requirement_name(line)) is not None and (n.startswith("nvidia-") or n == "cuda-toolkit")
    )  # fmt: skip

    torch_build = None
    version_py = None
    module = _VERSION_PY_MODULES.get(dist.name)
    if module is not None:
        text, path = _module_version(ctx, dist, module)
        if text is not None:
            version_py = _version_py_fields(text)
            if dist.name == "torch":
                torch_build = parse_torch_version_py(text, path)
                if torch_build is not None:
                    torch_build = dataclasses.replace(torch_build, cxx11_abi=_torch_abi(ctx, path))
        elif dist.name == "torch":
            ctx.fail(_PKG_PROBE, "torch/version.py is missing", path)

    variant, build, how = _cuda_variant(dist.name, version, requires, version_py)
    installer = None
    with contextlib.suppress(OSError):
        installer = ctx.fs.read_text(posixpath.join(dist.path, "INSTALLER"), limit=256).strip() or None
    return InstalledPackage(
        name=dist.name,
        version=version,
        location=dist.location,
        source=source,
        cuda_variant=variant,
        cuda_build=build,
        cuda_variant_source=how,
        cuda_requires=cuda_requires,
        requires=tuple(requires),
        torch_build=torch_build,
        installer=installer,
    )


def probe_packages(ctx: ProbeContext) -> dict[str, InstalledPackage]:
    """The distributions of interest in the target environment, by canonical name (cached).

    :param ctx: the probe context.
    :return: ``{name: InstalledPackage}`` in name order; a distribution whose metadata cannot be
        read or whose version is invalid is left out and recorded as a probe error.
    """

    def compute() -> dict[str, InstalledPackage]:
        env = _marker_env(ctx, interpreter.target_python(ctx))
        cache: dict[str, bool] = {}
        found: dict[str, InstalledPackage] = {}
        for name, dist in sorted(distributions(ctx).items()):
            if not is_interesting(name):
                continue
            # One dist-info that breaks the reader is recorded and skipped; the others (torch) stay.
            package = ctx.attempt(
                _PKG_PROBE, f"the metadata of {name}", partial(_read_package, ctx, dist, env, cache), None, dist.path
            )
            if package is not None:
                found[name] = package
        return found

    return ctx.once("python.packages", compute)
