"""CD2xx and CD3xx: the toolkit extensions are built with, and the cuDNN / NCCL / CUDA library copies."""

# CD2xx: CUDA toolkit
#   CD201  the nvcc that extensions build with has torch's CUDA major
#   CD202  the nvcc that extensions build with is not newer than the driver's CUDA
# CD3xx: libraries
#   CD301  one CUDA major per nvidia-* library (not both -cu12 and -cu13 of one library)
#   CD302  no other cuDNN / NCCL copy on LD_LIBRARY_PATH shadows the pip wheel a framework pins
#   CD303  CuPy, TensorRT and packages needing (or opening by name) CUDA libraries find the major they were built for

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from packaging.version import InvalidVersion, Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.byname import older_copy_symptom
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import driver_fixed_by
from cudadoctor.checks.loader import unread_reason
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.facts.derive import ld_library_path
from cudadoctor.facts.model import (
    CudaWheels,
    DriverInfo,
    HostInfo,
    InstalledPackage,
    LibraryCopy,
    LinkedFile,
    LoaderView,
    ManagedPlatform,
    NeededLibrary,
    PythonEnv,
    SubLibrary,
    ToolkitInstall,
)
from cudadoctor.facts.requires import exact_pins
from cudadoctor.fixes import Install, Pin, Uninstall
from cudadoctor.fixes.build import pip, uninstall_then_install
from cudadoctor.fixes.machine import installed_versions
from cudadoctor.fixes.torch import torch_build_install, torch_default_tag
from cudadoctor.rules.bitsandbytes import bnb_native
from cudadoctor.rules.toolchain import JIT_BUILDERS, BuildToolkit, nvcc_matches_torch, nvcc_runs_on_driver

__all__ = ["CD201", "CD202", "CD301", "CD302", "CD303"]


class CD201(Check):
    """The toolkit CUDA extensions build with has the CUDA major torch was built with.

    What it checks: the nvcc release of the toolkit torch.utils.cpp_extension builds with (CUDA_HOME, else
    CUDA_PATH, else the first nvcc on PATH, else /usr/local/cuda; what flash-attn, apex, vLLM or DeepSpeed
    source and JIT builds use) against torch's CUDA version (torch/version.py). Under --root the release is
    read from the toolkit's version file, since nothing from an image is run.

    Why it matters: torch refuses to build an extension when the majors differ ("The detected CUDA
    version (12.4) mismatches the version that was used to compile PyTorch (13.0)"); a minor mismatch
    only warns, and is not reported here. It is an error when extensions get built here (CUDA_HOME or
    CUDA_PATH set, nvcc on PATH, or a JIT-building package such as DeepSpeed installed), a warning when
    the toolkit is only found at /usr/local/cuda.

    How to fix: install the torch build for the toolkit's CUDA major (the command shown), or put a toolkit
    of torch's CUDA major first on PATH and in CUDA_HOME.
    """

    name = "nvcc-matches-torch-cuda-major"
    category = "toolkit"
    severity = Status.FAIL

    def check(
        self,
        build_toolkit: BuildToolkit,
        torch: InstalledPackage,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        python: PythonEnv | None = None,
    ) -> Problem | None:
        build = torch.torch_build.cuda if torch.torch_build and torch.torch_build.cuda else torch.cuda_build
        if not build or not torch.cuda_variant or not torch.cuda_variant.startswith("cu"):
            raise NotApplicable("torch is not a CUDA build")
        verdict = nvcc_matches_torch(build_toolkit, build)
        if verdict.is_unknown:
            raise CannotJudge(verdict.missing)
        if not verdict.is_problem:
            return None
        builders = [name for name in JIT_BUILDERS if name in packages]
        builds_here = build_toolkit.chosen_by != "/usr/local/cuda" or bool(builders)
        evidence = {
            "nvcc": f"CUDA {build_toolkit.release} ({build_toolkit.where})",
            "toolkit": f"{build_toolkit.root} (chosen by {build_toolkit.chosen_by})",
            "torch": f"{torch.version} (CUDA {build}, {torch.cuda_variant_source or 'version tag'})",
        }
        if builders:
            evidence["builds CUDA extensions at run time"] = ", ".join(builders)
        interpreter = python.version if python is not None else None
        nearest, commands = _torch_for_toolkit(matrix, torch, packages, interpreter, build_toolkit.release)
        return Problem(
            f"torch builds CUDA extensions with nvcc CUDA {build_toolkit.release} from {build_toolkit.root} "
            f"(chosen by {build_toolkit.chosen_by}) but torch was built with CUDA {build}: building an "
            "extension (flash-attn, apex, DeepSpeed ops, a vLLM source build) against this torch fails",
            evidence,
            Remediation(
                f"Install the torch build for CUDA {build_toolkit.release.major} (the toolkit's major), or put a "
                f"CUDA {build.split('.')[0]}.x toolkit first on PATH and in CUDA_HOME." + nearest,
                commands,
            ),
            status=None if builds_here else Status.WARN,
        )


def _toolkit_build(matrix: CompatMatrix, row: TorchRelease, toolkit: Version) -> str | None:
    """The build of a torch release for the toolkit's CUDA major (compat/torch.toml): the newest variant of
    that major no newer than the toolkit, else the oldest of the major (torch.utils.cpp_extension refuses
    only another major); None when the release has none."""
    builds = []
    for tag in {*row.variants, *torch_default_tag(row)}:
        variant = matrix.torch_variants.get(tag)
        if variant is not None and variant.cuda is not None and variant.cuda.major == toolkit.major:
            builds.append((variant.cuda, tag))
    fitting = [b for b in builds if b[0] <= toolkit]
    return (max(fitting) if fitting else min(builds))[1] if builds else None


def _torch_for_toolkit(
    matrix: CompatMatrix,
    torch: InstalledPackage,
    packages: dict[str, InstalledPackage],
    python: Version | None,
    toolkit: Version,
) -> tuple[str, tuple[str, ...]]:
    """(what the text adds, pip's command) for a torch built for the toolkit's CUDA major: this release's
    build, else the nearest newer release that has one and wheels for this Python. Nothing when none does:
    the fix is then the toolkit, as the text says."""
    shown = torch.torch_build.version if torch.torch_build and torch.torch_build.version else torch.version
    row = matrix.torch_release(Version(str(shown)))
    if row is None:
        return "", ()
    newer = sorted((r for r in matrix.torch_releases if r.version > row.version), key=lambda r: r.version)
    for candidate in (row, *newer):
        if python is not None and not matrix.torch_publishes_for_python(candidate, python):
            continue
        tag = _toolkit_build(matrix, candidate, toolkit)
        command = torch_build_install(matrix, candidate, tag, installed_versions(packages)) if tag else None
        if command is None:
            continue
        if candidate is row:
            return "", (pip(command),)
        here = f" for Python {python.major}.{python.minor}" if python is not None else ""
        return (
            f" torch {row.version} has no CUDA {toolkit.major} build{here}; {candidate.version} is the nearest "
            "release that has one (compat/torch.toml).",
            (pip(command),),
        )
    return "", ()


class CD202(Check):
    """The nvcc extensions build with is not newer than the CUDA version the driver supports.

    What it checks: the nvcc release of the toolkit torch.utils.cpp_extension builds with (CUDA_HOME, else
    the first nvcc on PATH, else /usr/local/cuda) against the newest CUDA version the driver supports.

    Why it matters: code that nvcc builds for a newer CUDA than the driver's does not run here: across
    majors nothing loads (CUDA_ERROR_INSUFFICIENT_DRIVER, 35); within a major the built GPU code runs under
    minor-version compatibility, but its PTX cannot be JIT-compiled by the older driver
    (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222), so a GPU the build has no SASS for fails.

    How to fix: upgrade the driver to one that supports the toolkit's CUDA, or build with a toolkit no newer
    than the driver supports (on a managed platform, whose driver cannot be changed, only the latter).
    """

    name = "nvcc-not-newer-than-driver"
    category = "toolkit"
    severity = Status.WARN

    def check(
        self,
        build_toolkit: BuildToolkit,
        driver: DriverInfo,
        matrix: CompatMatrix,
        driver_cuda: tuple[Version | None, str] = (None, "unknown"),
        platform: ManagedPlatform | None = None,
    ) -> Problem | None:
        cuda, how = driver_cuda
        if cuda is None:
            raise CannotJudge("the CUDA version the driver supports (no NVML reading, driver not in compat/cuda.toml)")
        verdict = nvcc_runs_on_driver(build_toolkit, cuda)
        if not verdict.is_problem:
            return None
        needed = matrix.min_driver_for_cuda(build_toolkit.release)
        across = build_toolkit.release.major > cuda.major
        return Problem(
            f"nvcc is CUDA {build_toolkit.release} ({build_toolkit.root}) but driver {driver.version} supports CUDA "
            f"{cuda}: "
            + ("what it builds will not run on this driver" if across else
               "PTX it builds cannot be JIT-compiled by this driver (only the GPU code built for this GPU runs)"),
            {"nvcc": f"CUDA {build_toolkit.release} ({build_toolkit.where})",
             "driver": f"{driver.version} (CUDA {cuda}, {how})"},
            Remediation(
                f"Upgrade the driver to {needed} or newer (CUDA {build_toolkit.release}), or build with a CUDA "
                f"{cuda} (or older) toolkit." if platform is None else
                f"Build with a CUDA {cuda} (or older) toolkit. {driver_fixed_by(platform)}",
                (),
            ),
        )  # fmt: skip


_SUFFIX = re.compile(r"^(nvidia-[a-z0-9-]+?)(?:-cu(\d+))?$")
#: CUDA 13 wheels of the toolkit components dropped the -cu13 suffix: https://pypi.org/project/nvidia-cuda-runtime/
#: against https://pypi.org/project/nvidia-cuda-runtime-cu12/.
_UNSUFFIXED_MAJOR = 13


def _library_majors(packages: dict[str, InstalledPackage]) -> dict[str, dict[int, InstalledPackage]]:
    by_base: dict[str, dict[int, InstalledPackage]] = {}
    for name, pkg in packages.items():
        match = _SUFFIX.match(name)
        if not match or name == "nvidia-ml-py":
            continue
        base, suffix = match.groups()
        if suffix:
            major = int(suffix)
        elif pkg.version.major == _UNSUFFIXED_MAJOR and name.startswith("nvidia-cuda-"):
            major = _UNSUFFIXED_MAJOR
        else:
            continue
        by_base.setdefault(base, {})[major] = pkg
    return by_base


class CD301(Check):
    """Each nvidia-* CUDA library is installed for one CUDA major only.

    What it checks: pairs such as nvidia-cudnn-cu12 with nvidia-cudnn-cu13, or nvidia-cuda-runtime-cu12
    with nvidia-cuda-runtime 13.x, installed side by side.

    Why it matters: the two land in different directories and a framework loads whichever its search
    order finds first; mixing a CUDA 12 build with CUDA 13 libraries fails with missing symbols or
    "cannot open shared object file".

    How to fix: uninstall the variant no installed framework pins (pip shows who requires it).
    """

    name = "one-cuda-major-per-library"
    category = "wheels"
    severity = Status.WARN

    def check(self, packages: dict[str, InstalledPackage]) -> Problem | None:
        doubled = {base: majors for base, majors in _library_majors(packages).items() if len(majors) > 1}
        if not doubled:
            return None
        pairs = [" and ".join(f"{p.name} {p.version}" for _m, p in sorted(m.items())) for m in doubled.values()]
        return Problem(
            "two CUDA majors of one library are installed: " + "; ".join(pairs),
            {base: ", ".join(f"CUDA {m}" for m in sorted(majors)) for base, majors in doubled.items()},
            Remediation("Keep the variant the installed frameworks pin; uninstall the other.", ()),
        )


def _ld_library_path(host: HostInfo) -> list[str]:
    return [posixpath.normpath(p) for p in ld_library_path(host) or ()]


def _pinned(packages: dict[str, InstalledPackage], prefix: str) -> list[tuple[InstalledPackage, str]]:
    """(framework, pinned distribution) for Requires-Dist pins on ``prefix`` wheels (nvidia-cudnn-cu13 …)."""
    return [(pkg, name) for pkg in packages.values() for name in exact_pins(pkg) if name.startswith(prefix)]


def _older_than_wheel(need: NeededLibrary) -> str | None:
    """The loaded copy of a needed CUDA library is older than a pip wheel's copy it hides."""
    loaded = need.loaded
    if loaded is None or loaded.version is None or loaded.distribution is not None:
        return None
    wheels = [s for s in need.shadowed if s.distribution and s.version is not None]
    newer = [s for s in wheels if s.version is not None and _release3(s.version) > _release3(loaded.version)]
    if not newer:
        return None
    wheel = max(newer, key=lambda s: _release3(s.version) if s.version else ())
    return (
        f"{need.package}'s {posixpath.basename(need.needer)} loads {need.soname} {loaded.version} from "
        f"{posixpath.dirname(loaded.path)} ({loaded.via}), older than the {wheel.version} of {wheel.distribution} "
        "it hides"
        + (f": loading fails with {symptom}" if (symptom := older_copy_symptom(need.soname, loaded.version)) else "")
    )


def _release3(version: object) -> tuple[int, ...]:
    release = getattr(version, "release", ())
    return tuple((*release, 0, 0, 0)[:3])


def _loader_problems(loader: LoaderView | None) -> tuple[list[str], dict[str, str], list[str]]:
    return _needs_judged(loader, _older_than_wheel)


def _needs_judged(
    loader: LoaderView | None, judge: Callable[[NeededLibrary], str | None]
) -> tuple[list[str], dict[str, str], list[str]]:
    """(problems, evidence, the LD_LIBRARY_PATH / LD_PRELOAD directories they load from) of every need
    ``judge`` finds a problem with."""
    problems: list[str] = []
    evidence: dict[str, str] = {}
    dirs: list[str] = []
    for need in loader.needs if loader else ():
        text = judge(need)
        if text and need.loaded is not None:
            problems.append(text)
            evidence[f"{need.package}: {need.soname}"] = f"{need.loaded.path} ({need.loaded.via})"
            if need.loaded.via in ("LD_LIBRARY_PATH", "LD_PRELOAD"):
                dirs.append(posixpath.dirname(need.loaded.path))
    return problems, evidence, dirs


def _chosen_sublibrary(sub: SubLibrary, own_first: bool) -> LinkedFile | None:
    """The copy of a cuDNN sub-library the shim's ``dlopen`` gets under its major's rule."""
    return (sub.beside or sub.searched) if own_first else (sub.searched or sub.beside)


def _mixed_sublibraries(need: NeededLibrary, matrix: CompatMatrix) -> tuple[list[str], list[LinkedFile]] | None:
    """(sonames, their loaded copies) of the sub-libraries a loaded cuDNN shim takes from another cuDNN version.

    cuDNN 8's shim prefers the loader's search over its own directory, cuDNN 9's its own directory with the
    search as a fallback (compat/libraries.toml ``cudnn_loading``, from pytorch/pytorch#119989); only the
    sub-libraries that release's core loads count (``cudnn_sublibrary``). None when the data cannot say.
    """
    shim = need.loaded
    if shim is None or shim.version is None or not need.sublibraries:
        return None
    own_first = matrix.cudnn_own_directory_first(int(need.soname.rsplit(".", 1)[1]))
    loaded_names = matrix.cudnn_sublibraries_loaded(shim.version)
    if own_first is None or loaded_names is None:
        return None
    names: list[str] = []
    copies: list[LinkedFile] = []
    for sub in need.sublibraries:
        chosen = _chosen_sublibrary(sub, own_first)
        if sub.soname not in loaded_names or chosen is None or chosen is sub.beside or chosen.version is None:
            continue
        if _release3(chosen.version) != _release3(shim.version):
            names.append(sub.soname)
            copies.append(chosen)
    return names, copies


def _unjudged(loader: LoaderView | None, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> list[str]:
    """The parts of CD302 the data could not decide: a loaded cuDNN shim with sub-libraries whose release or
    major compat/libraries.toml does not cover, and a torch whose cuDNN in torch/lib compat/torch.toml does not know."""
    parts = []
    torch = packages.get("torch")
    for need in loader.needs if loader else ():
        shim = need.loaded
        if shim is not None and shim.version is not None and need.sublibraries:
            major = int(need.soname.rsplit(".", 1)[1])
            if (
                matrix.cudnn_own_directory_first(major) is None
                or matrix.cudnn_sublibraries_loaded(shim.version) is None
            ):
                parts.append(f"the sub-libraries cuDNN {shim.version} loads (not in compat/libraries.toml)")
        bundled = (
            torch is not None and torch.cuda_variant is not None and any(f.bundled_by == "torch" for f in need.shadowed)
        )
        if (
            bundled
            and torch is not None
            and matrix.torch_bundled_cudnn(torch.version, torch.cuda_variant or "") is None
        ):
            parts.append(f"the cuDNN torch {torch.version} bundles in torch/lib (not in compat/torch.toml)")
    parts += [u for need in (loader.needs if loader else ()) if (u := _unversioned_shadow(need))]
    unread = unread_reason(loader)  # a shared object not read may load a library from that directory
    return sorted(set(parts)) + ([unread] if unread else [])


def _unversioned_shadow(need: NeededLibrary) -> str | None:
    """What is unknown when the copy that loads ahead of a pip wheel's has no version in its file name or link target
    (a copied libnvJitLink.so.12): older or not than the wheel it hides, it cannot be told."""
    loaded = need.loaded
    if loaded is None or loaded.version is not None or loaded.distribution is not None or loaded.bundled_by:
        return None
    wheel = next((s for s in need.shadowed if s.distribution and s.version is not None), None)
    if wheel is None:
        return None
    return (
        f"the version of {loaded.path} ({need.soname}, loaded ahead of {wheel.distribution} {wheel.version} through "
        f"{loaded.via}): neither its file name nor its link target holds one"
    )


def _sublibrary_problems(
    loader: LoaderView | None, matrix: CompatMatrix
) -> tuple[list[str], dict[str, str], list[str]]:
    """CD302's findings for cuDNN shims that would load sub-libraries of another cuDNN version, and the
    directories to put first on LD_LIBRARY_PATH (the shim's own, where it holds every mixed sub-library)."""
    problems: list[str] = []
    evidence: dict[str, str] = {}
    first: list[str] = []
    seen: set[str] = set()
    for need in loader.needs if loader else ():
        mixed = _mixed_sublibraries(need, matrix)
        if not mixed or not mixed[0] or need.loaded is None or need.loaded.path in seen:
            continue
        seen.add(need.loaded.path)
        names, copies = mixed
        shim_dir = posixpath.dirname(need.loaded.path)
        where = sorted({f"{posixpath.dirname(c.path)} (cuDNN {c.version}, {c.via})" for c in copies})
        problems.append(
            f"cuDNN {need.loaded.version} from {shim_dir} ({need.loaded.distribution or need.loaded.via}, needed by "
            f"{need.package}) loads its sub-libraries {', '.join(names)} from {'; '.join(where)}: two cuDNN "
            "versions in one process (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, undefined symbols)"
        )
        evidence[f"{need.soname} {shim_dir}"] = f"cuDNN {need.loaded.version} ({need.loaded.via})"
        for name, copy in zip(names, copies, strict=True):
            evidence[name] = f"{copy.path} (cuDNN {copy.version}, {copy.via})"
        beside = {s.soname for s in need.sublibraries if s.beside is not None}
        if set(names) <= beside:
            first.append(shim_dir)
    return problems, evidence, first


def _older_than_bundled(need: NeededLibrary, torch: InstalledPackage | None, matrix: CompatMatrix) -> str | None:
    """The loaded copy of cuDNN is older than the one torch 1.x ships in torch/lib and that it hides."""
    loaded = need.loaded
    if loaded is None or loaded.version is None or loaded.bundled_by or torch is None or not torch.cuda_variant:
        return None
    row = matrix.torch_bundled_cudnn(torch.version, torch.cuda_variant)
    hidden = [s for s in need.shadowed if s.bundled_by == "torch" and row and posixpath.basename(s.path) in row.files]
    if row is None or not hidden or _release3(row.cudnn) <= _release3(loaded.version):
        return None
    return (
        f"{need.package}'s {posixpath.basename(need.needer)} loads {need.soname} {loaded.version} from "
        f"{posixpath.dirname(loaded.path)} ({loaded.via}), older than the cuDNN {row.cudnn} torch {torch.version} "
        f"ships in {posixpath.dirname(hidden[0].path)}, which it hides"
    )


def _bundled_problems(
    loader: LoaderView | None, packages: dict[str, InstalledPackage], matrix: CompatMatrix
) -> tuple[list[str], dict[str, str], list[str]]:
    torch = packages.get("torch")
    return _needs_judged(loader, lambda need: _older_than_bundled(need, torch, matrix))


def _reinstall(pin: Pin) -> Install:
    """The pinned wheel installed again over the file another variant overwrote: its version is still recorded
    as installed, so pip would keep it without --force-reinstall; --no-deps leaves the rest as it is."""
    return Install((pin,), force_reinstall=True, no_deps=True)


def _overwritten_pin(need: NeededLibrary, packages: dict[str, InstalledPackage]) -> tuple[str, str] | None:
    """(finding, fix) when the loaded wheel file belongs to another CUDA variant of the wheel the needer pins,
    installed over it: nvidia-nccl-cu11 and nvidia-nccl-cu12 both install ``nvidia/nccl/lib/libnccl.so.2``, and
    the one installed last owns the file (its RECORD; see cudadoctor.probes.linkage.record_owner)."""
    loaded, needer = need.loaded, packages.get(need.package)
    if loaded is None or loaded.distribution is None or loaded.version is None or needer is None:
        return None
    base = re.sub(r"-cu\d+$", "", loaded.distribution)
    for name, pinned in exact_pins(needer).items():
        if name == loaded.distribution or re.sub(r"-cu\d+$", "", name) != base or name not in packages:
            continue
        try:
            wanted = Version(pinned)
        except InvalidVersion:
            return None
        # Another major has another soname, hence another file: only a same-major variant shares the path.
        if wanted.major != loaded.version.major or _release3(loaded.version) >= _release3(wanted):
            return None
        return (
            f"{need.package}'s {posixpath.basename(need.needer)} loads {need.soname} {loaded.version} from "
            f"{posixpath.dirname(loaded.path)}: that file is {loaded.distribution} {loaded.version}'s, installed over "
            f"the {name} {pinned} that {need.package} pins (both wheels install the same path)",
            pip(
                uninstall_then_install(
                    (loaded.distribution,), Install((Pin.exact(name, pinned),), force_reinstall=True, no_deps=True)
                )
            ),
        )
    return None


def _loader_finding(
    loader: LoaderView | None, packages: dict[str, InstalledPackage], matrix: CompatMatrix | None
) -> Problem | None:
    """CD302's error from the loader's view: an older copy hides a wheel's (or torch/lib's) copy, or a cuDNN
    shim takes sub-libraries from another cuDNN version."""
    older, evidence, dirs = _loader_problems(loader)
    first: list[str] = []
    if matrix is not None:
        for more, more_evidence, more_dirs in (_bundled_problems(loader, packages, matrix),):
            older, dirs = older + more, dirs + more_dirs
            evidence.update(more_evidence)
        mixed, mixed_evidence, first = _sublibrary_problems(loader, matrix)
        older += mixed
        evidence.update(mixed_evidence)
    overwritten = {found for need in (loader.needs if loader else ()) if (found := _overwritten_pin(need, packages))}
    older += [text for text, _fix in overwritten]
    if not older:
        return None
    # Where LD_LIBRARY_PATH itself names the newer wheel's folder, after the older copy's (TensorFlow's pip guide
    # appends it, tensorflow#60750), the fix is that folder first, not the other folder's removal.
    behind = _wheel_folders_behind(loader)
    first += [behind[d] for d in dirs if d in behind]
    dirs = [d for d in dirs if d not in behind]
    commands = (
        tuple(sorted({fix for _text, fix in overwritten}))
        + tuple(
            f"export LD_LIBRARY_PATH=$(echo \"$LD_LIBRARY_PATH\" | tr ':' '\\n' | grep -vx '{d}' | paste -sd:)"
            for d in sorted(set(dirs))
        )
        + tuple(f"export LD_LIBRARY_PATH={d}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" for d in sorted(set(first)))
    )
    return Problem(
        "; ".join(sorted(set(older))),
        evidence,
        Remediation(
            "Take that directory off LD_LIBRARY_PATH (or LD_PRELOAD) so the newer copy the framework ships loads "
            "(where LD_LIBRARY_PATH lists the wheel's folder after it, put that folder first), or upgrade the copy it "
            "loads; where cuDNN mixes sub-libraries, put the directory of the cuDNN that "
            "loads first on LD_LIBRARY_PATH (or remove the other cuDNN from the loader's path); where another "
            "variant of a pinned wheel overwrote its file, uninstall it and reinstall the pinned wheel.",
            commands,
        ),
        status=Status.FAIL,
    )


def _wheel_folders_behind(loader: LoaderView | None) -> dict[str, str]:
    """Older copy's folder -> the folder of the newer pip wheel copy it hides, where LD_LIBRARY_PATH found that wheel
    copy too (later in the variable)."""
    found: dict[str, str] = {}
    for need in loader.needs if loader else ():
        if _older_than_wheel(need) is None or need.loaded is None or need.loaded.via != "LD_LIBRARY_PATH":
            continue
        newer = [s for s in need.shadowed if s.distribution and s.via == "LD_LIBRARY_PATH" and s.version is not None]
        if newer:
            found.setdefault(posixpath.dirname(need.loaded.path), posixpath.dirname(newer[0].path))
    return found


def _wheel_dir_behind(host: HostInfo, copies: tuple[LibraryCopy, ...]) -> Problem | None:
    """An older cuDNN / NCCL copy earlier on LD_LIBRARY_PATH than the pip wheel's directory that the same variable
    lists: the variable names the wheel to be loaded (TensorFlow's pip guide, pytorch wheels' users do so), but
    every ``dlopen`` of the soname stops at the first directory that holds it."""
    order = {d: i for i, d in reversed(list(enumerate(_ld_library_path(host))))}
    found: list[tuple[LibraryCopy, str, LibraryCopy, str]] = []
    for wheel in (c for c in copies if c.origin == "pip" and c.version is not None):
        wheel_dirs = [d for p in wheel.lib_paths if (d := posixpath.dirname(p)) in order]
        for other in (c for c in copies if c.origin != "pip" and c.library == wheel.library and c.version):
            dirs = [d for p in other.lib_paths if (d := posixpath.dirname(p)) in order]
            if not wheel_dirs or not dirs or min(order[d] for d in dirs) > min(order[d] for d in wheel_dirs):
                continue
            if _soname_number(other) == _soname_number(wheel) and _release3(other.version) < _release3(wheel.version):
                found.append((other, min(dirs, key=order.__getitem__), wheel, min(wheel_dirs, key=order.__getitem__)))
    if not found:
        return None
    return Problem(
        "; ".join(
            f"{_LABEL.get(o.library, o.library)} {o.version} in {od} comes before the {w.distribution} {w.version} "
            f"wheel's {wd} on "
            "LD_LIBRARY_PATH: everything that loads it by name gets the older copy"
            for o, od, w, wd in found
        ),
        {f"{o.library} {o.origin}": f"{o.version} at {od}" for o, od, _w, _wd in found}
        | {f"{w.library} pip": f"{w.version} at {wd} ({w.distribution})" for _o, _od, w, wd in found},
        Remediation(
            "Put the wheel's directory first on LD_LIBRARY_PATH (prepend it rather than append it).",
            tuple(sorted({f"export LD_LIBRARY_PATH={wd}:$LD_LIBRARY_PATH" for _o, _od, _w, wd in found})),
        ),
        status=Status.FAIL,
    )


_LABEL = {"cudnn": "cuDNN", "nccl": "NCCL"}


def _soname_number(copy: LibraryCopy) -> int | None:
    """The number of the soname a copy provides: NCCL's is always 2, cuDNN's its major."""
    if copy.version is None:
        return None
    return 2 if copy.library == "nccl" else copy.version.major


_STEMS = {"cuDNN": "libcudnn.so.", "NCCL": "libnccl.so."}


def _loader_judged(loader: LoaderView | None, package: str, label: str) -> bool:
    """The loader's view resolved ``package``'s own need of this library (its DT_NEEDED with its real RPATH or
    RUNPATH), so where LD_LIBRARY_PATH sits in its search is known, not guessed: torch's wheels carry DT_RPATH,
    which LD_LIBRARY_PATH cannot override (pytorch/builder #1150; on the real H200, a system cuDNN 9.14 and
    NCCL 2.28.3 on LD_LIBRARY_PATH leave torch 2.11's pinned 9.19 and 2.28.9 in place)."""
    stem = _STEMS[label]
    return any(n.package == package and n.soname.startswith(stem) for n in (loader.needs if loader else ()))


class CD302(Check):
    """No other copy of a CUDA library shadows the pip wheel a framework pins or needs.

    What it checks: system (or conda, or tarball) cuDNN and NCCL copies whose library directory is listed
    in LD_LIBRARY_PATH, when an installed framework pins the pip wheel of that library and the versions
    differ; and, from the loader's view (every CUDA library a package's shared objects need, resolved
    in ld.so's order), any loaded copy of cuDNN, NCCL, nvJitLink, cuSPARSE, cuBLAS … older than a pip
    wheel's copy it hides, or than the cuDNN a torch 1.x wheel ships in torch/lib — an error. A copy
    that is only in the ld cache is not reported: the framework's own RUNPATH comes first. Also errors:
    a cuDNN shim that would load its sub-libraries (libcudnn_cnn_infer.so.8, libcudnn_engines_*.so.9 …)
    from another cuDNN version — cuDNN 8 searches the loader's path before its own directory, cuDNN 9
    falls back to it for a sub-library its directory lacks; a wheel file that another CUDA variant of
    the pinned wheel overwrote (nvidia-nccl-cu11 installed over nvidia-nccl-cu12, told by RECORD); and
    an older copy listed on LD_LIBRARY_PATH before the wheel directory that the same variable lists.

    Why it matters: LD_LIBRARY_PATH is searched before a library's RUNPATH (not before a DT_RPATH, which torch's
    own wheels carry since pytorch/builder #1150: the loader's view tells which), so the package loads the other copy:
    collect_env-style reports then disagree with what runs, and a cuDNN or NCCL older than the pin
    fails or misbehaves (`check --deep` shows the file really loaded).

    How to fix: take that directory out of LD_LIBRARY_PATH (or put the wheel's directory first); for mixed
    cuDNN sub-libraries, put the loading cuDNN's directory first or remove the other cuDNN from the loader's
    path; for an overwritten wheel, uninstall the other variant and reinstall the pinned wheel.
    """

    name = "no-shadowing-library-on-ld-library-path"
    category = "cudnn"
    severity = Status.WARN

    def check(
        self,
        host: HostInfo,
        packages: dict[str, InstalledPackage],
        cudnn: tuple[LibraryCopy, ...] = (),
        nccl: tuple[LibraryCopy, ...] = (),
        loader: LoaderView | None = None,
        matrix: CompatMatrix | None = None,
    ) -> Problem | None:
        found = _loader_finding(loader, packages, matrix) or _wheel_dir_behind(host, cudnn + nccl)
        if found is not None:
            return found
        dirs = set(_ld_library_path(host))
        problems = []
        evidence: dict[str, str] = {}
        for label, copies, prefix in (("cuDNN", cudnn, "nvidia-cudnn-cu"), ("NCCL", nccl, "nvidia-nccl-cu")):
            pins = _pinned(packages, prefix)
            pip = {c.distribution: c for c in copies if c.origin == "pip"}
            for copy in copies:
                if copy.origin == "pip":
                    continue
                shadow = {posixpath.dirname(p) for p in copy.lib_paths} & dirs
                if not shadow:
                    continue
                for framework, dist in pins:
                    wanted = pip.get(dist)
                    if _loader_judged(loader, framework.name, label):
                        continue  # the loader's view resolved this need itself (above): no guess from directories
                    if wanted is not None and wanted.version != copy.version:
                        problems.append(
                            f"{label} {copy.version} in {', '.join(sorted(shadow))} (on LD_LIBRARY_PATH) is loaded "
                            f"before the {label} {wanted.version} wheel {framework.name} pins"
                        )
                        evidence[f"{label} {copy.origin}"] = f"{copy.version} at {copy.path}"
                        evidence[f"{label} pip"] = f"{wanted.version} ({dist}, pinned by {framework.name})"
        if not problems:
            if matrix is not None and (unjudged := _unjudged(loader, packages, matrix)):
                raise CannotJudge("; ".join(unjudged))
            return None
        return Problem(
            "; ".join(sorted(set(problems))),
            evidence,
            Remediation("Remove the directory from LD_LIBRARY_PATH so the framework loads the pinned wheel.", ()),
        )


#: Packages whose name says the CUDA major they need at run time (their own CUDA libraries are not bundled).
_NEEDS_MAJOR = re.compile(r"^(cupy-cuda(\d+)x|tensorrt-cu(\d+)(?:-libs)?)$")


def _available_majors(toolkits: tuple[ToolkitInstall, ...], wheels: CudaWheels | None) -> set[int]:
    majors = {t.version.major for t in toolkits if t.version is not None}
    if wheels is not None:
        for component in wheels.components:
            if component.distribution.startswith("nvidia-cuda-runtime"):
                majors.add(component.version.major)
    return majors


def _available_minors(toolkits: tuple[ToolkitInstall, ...], wheels: CudaWheels | None) -> set[tuple[int, int]]:
    """(major, minor) of each installed toolkit and CUDA runtime wheel."""
    found = {(t.version.major, t.version.minor) for t in toolkits if t.version is not None}
    if wheels is not None:
        for component in wheels.components:
            if component.distribution.startswith("nvidia-cuda-runtime"):
                found.add((component.version.major, component.version.minor))
    return found


#: A CuPy binary package's range: (lowest, highest) CUDA it is for, or None for its whole major.
_Span = tuple[Version, Version] | None


def _package_need(name: str, matrix: CompatMatrix) -> tuple[int, _Span] | None:
    """(the CUDA major, the CUDA range) a package needs: CuPy's from compat/ecosystem.toml (its PyPI
    description), TensorRT's per-CUDA packages and unknown ``cupy-cudaNNx`` from the name."""
    row = matrix.cupy_package(name)
    if row is not None:
        return row.cuda_major, matrix.cupy_cuda_range(row)
    match = _NEEDS_MAJOR.match(name)
    return (int(match.group(2) or match.group(3)), None) if match else None


def _in_span(minors: set[tuple[int, int]], span: tuple[Version, Version]) -> bool:
    """A CUDA minor this package can run on. Before CUDA 11.2 only its own minors (the runtime's soname carries
    the minor, libcudart.so.10.2; NVRTC's did up to libnvrtc.so.11.1); from 11.2 on also a newer minor of the
    same major, whose libraries keep their sonames, so a build for an older minor runs on a newer one
    (minor-version compatibility, https://docs.nvidia.com/deploy/cuda-compatibility/; *inferred* for CuPy):
    cupy-cuda112 with only a CUDA 11.4 toolkit is fine, cupy-cuda111 with only 11.8 is not."""
    low, high = span[0].release[:2], span[1].release[:2]
    if low >= (11, 2):
        return any(m[0] == low[0] and m >= low for m in minors)
    return any(low <= m <= high for m in minors)


def _span_text(span: tuple[Version, Version]) -> str:
    return str(span[0]) if span[0] == span[1] else f"{span[0]} to {span[1]}"


def _off_span_problem(
    off: list[tuple[InstalledPackage, tuple[Version, Version]]], minors: set[tuple[int, int]], matrix: CompatMatrix
) -> Problem:
    """CuPy packages whose CUDA major is present, but not a CUDA minor inside the range they are for."""
    have = ", ".join(f"{a}.{b}" for a, b in sorted(minors))
    parts, commands = [], []
    for pkg, span in off:
        parts.append(f"{pkg.name} {pkg.version} is for CUDA {_span_text(span)} (its PyPI description)")
        target = next(
            (r for m in sorted(minors, reverse=True) if (r := matrix.cupy_for_cuda(Version(f"{m[0]}.{m[1]}")))),
            None,
        )
        if target is not None and target.package != pkg.name:
            commands += [pip(Uninstall((pkg.name,))), pip(Install((Pin(target.package),)))]
    # Before CUDA 11 the runtime's soname carries the minor (libcudart.so.10.2): nothing else loads.
    hard = any(span[0].major < 11 for _p, span in off)
    return Problem(
        "; ".join(parts) + f", but this environment provides CUDA {have}",
        {p.name: f"for CUDA {_span_text(span)}" for p, span in off},
        Remediation(
            "Install the CuPy package for the CUDA you have (or a CUDA toolkit in the package's range).",
            tuple(commands),
        ),
        status=Status.FAIL if hard else Status.WARN,
    )


#: CUDA libraries whose soname number is the CUDA major (libcublas.so.12 is CUDA 12's cuBLAS).
_CUDA_NUMBERED = ("cudart", "cublas", "cublasLt", "nvJitLink", "cusparse", "nvrtc")
_NEEDED_SONAME = re.compile(r"^lib([A-Za-z]+?)(?:_[a-z_]+)?\.so\.(\d+)")


def _cuda_number(soname: str) -> tuple[str, int] | None:
    """(stem, CUDA major) of a library numbered by the CUDA major: ``libcudart.so.11.0`` -> (cudart, 11)."""
    match = _NEEDED_SONAME.match(posixpath.basename(soname))
    return (match.group(1), int(match.group(2))) if match and match.group(1) in _CUDA_NUMBERED else None


def _major_gaps(loader: LoaderView | None) -> list[tuple[NeededLibrary, int, list[int]]]:
    """(need, the CUDA major it asks for, the majors installed instead) for each CUDA library a package
    needs (DT_NEEDED or opened by name) that resolves nowhere while copies of other majors exist."""
    gaps = []
    for need in loader.needs if loader else ():
        wanted = _cuda_number(need.soname)
        if need.loaded is not None or wanted is None or not need.other_majors or bnb_native(need):
            continue  # bitsandbytes' libraries for other CUDA versions are not loaded (CD437 judges its own)
        if need.package == "onnxruntime-gpu":  # its build against the CUDA present is CD430's (with the release)
            continue
        found = sorted({n[1] for p in need.other_majors if (n := _cuda_number(p)) and n[1] != wanted[1]})
        if found:
            gaps.append((need, wanted[1], found))
    return gaps


def _fitting_ctranslate2(
    gaps: list[tuple[NeededLibrary, int, list[int]]], packages: dict[str, InstalledPackage], matrix: CompatMatrix
) -> tuple[str, ...]:
    """ctranslate2 built for a CUDA whose libraries are missing while another major's are installed: its newest
    release built for an installed major (rules/ctranslate2.py: 3.24.0 where only CUDA 11 is), in place."""
    from cudadoctor.rules.ctranslate2 import ctranslate2_fitting, ctranslate2_pins

    ct2 = packages.get("ctranslate2")
    found = {m for n, _m, others in gaps if n.package == "ctranslate2" for m in others}
    if ct2 is None or not found:
        return ()
    pins = ctranslate2_pins(p.requires for p in packages.values())
    fitting = ctranslate2_fitting(matrix, lambda cuda: cuda.major in found, ct2.version, pins)
    if fitting is None:
        return ()
    return (pip(Install((Pin.exact("ctranslate2", fitting),))),)


def _gap_problem(
    gaps: list[tuple[NeededLibrary, int, list[int]]], packages: dict[str, InstalledPackage], matrix: CompatMatrix
) -> Problem:
    from cudadoctor.checks.loader import dlopen_commands, wheel_for

    grouped: dict[tuple[str, int, str], list[str]] = {}  # (package, major, majors found) -> sonames
    evidence: dict[str, str] = {}
    commands: dict[str, None] = {}
    for need, major, found in gaps:
        others = ", ".join(f"CUDA {m}" for m in found)
        grouped.setdefault((need.package, major, others), []).append(need.soname)
        evidence[f"{need.package}: {need.soname}"] = (
            f"{'opened by name' if need.how == 'dlopen' else 'needed'} by {need.needer}; found instead: "
            + ", ".join(need.other_majors[:3])
        )
        wheel = wheel_for(need.soname, major)
        if wheel:
            commands.update(dict.fromkeys(dlopen_commands(need, wheel)))
    parts = []
    for (name, major, others), sonames in grouped.items():
        pkg = packages.get(name)
        label = f"{name} {pkg.version}" if pkg else name
        names = ", ".join(sonames)
        parts.append(f"{label} was built for CUDA {major} ({names}), but only {others} copies are installed")
    majors = sorted({m for _n, m, _f in gaps})
    commands.update(dict.fromkeys(_fitting_ctranslate2(gaps, packages, matrix)))
    return Problem(
        "; ".join(parts),
        evidence,
        Remediation(
            f"Install the CUDA {', '.join(map(str, majors))} libraries these packages load (pip wheels, with their "
            "directory on LD_LIBRARY_PATH when the package opens them by name), or install the package release "
            "built for the CUDA you have.",
            tuple(commands),
        ),
        status=Status.FAIL if any(not n.optional for n, _m, _f in gaps) else Status.WARN,
    )


def _cupy_swaps(pkgs: list[InstalledPackage], minors: set[tuple[int, int]], matrix: CompatMatrix) -> tuple[str, ...]:
    """CuPy packages built for a CUDA major that is not installed: the per-major package of the newest CUDA that is
    (compat/ecosystem.toml), in place of the installed one."""
    newest = max(minors, default=None)
    target = matrix.cupy_for_cuda(Version(f"{newest[0]}.{newest[1]}")) if newest is not None else None
    if target is None:
        return ()
    return tuple(
        pip(uninstall_then_install((p.name,), Install((Pin(target.package),))))
        for p in pkgs
        if p.name.startswith("cupy-") and p.name != target.package
    )


class CD303(Check):
    """CuPy, TensorRT and packages needing CUDA libraries find the CUDA major they were built for.

    What it checks: cupy-cudaNNx and tensorrt-cuNN against the CUDA majors this environment provides:
    installed toolkits and the CUDA runtime pip wheels; CuPy's packages also against the CUDA minors their
    PyPI description names (compat/ecosystem.toml: cupy-cuda11x is for 11.2 to 11.8, the older per-minor
    cupy-cuda102 … cupy-cuda117 for one CUDA minor each: an error below CUDA 11, whose runtime soname carries
    the minor, libcudart.so.10.2, a warning from 11.0 on); and, from the loader's view, every CUDA library
    numbered by the CUDA major (cudart, cuBLAS, cuSPARSE, nvJitLink, NVRTC) that a package's objects need
    or open by name at run time (ctranslate2's libcublas.so.N, compat/runtime_libraries.toml) and that
    resolves nowhere while copies of another major are installed.

    Why it matters: these packages load the CUDA runtime (and math libraries) from the system or from
    nvidia-* wheels; with none of their major present, importing or first use fails with
    "libcudart.so.12: cannot open shared object file" or "Library libcublas.so.12 is not found or cannot
    be loaded".

    How to fix: install the CUDA libraries of that major (for CuPy: pip install "cupy-cudaNNx[ctk]"; the
    nvidia-*-cuNN wheels, with their directory on LD_LIBRARY_PATH for a package that opens them by name),
    a toolkit of that major, or the package variant for the CUDA you have.
    """

    name = "cuda-major-of-packages-present"
    category = "wheels"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        toolkits: tuple[ToolkitInstall, ...] = (),
        cuda_wheels: CudaWheels | None = None,
        loader: LoaderView | None = None,
    ) -> Problem | None:
        gaps = _major_gaps(loader)
        if gaps:
            return _gap_problem(gaps, packages, matrix)
        needing = [(pkg, *need) for name, pkg in packages.items() if (need := _package_need(name, matrix))]
        if not needing:
            unknown = sorted(n for n in packages if re.fullmatch(r"cupy-cuda\d+", n))
            if unknown:
                raise CannotJudge(f"{', '.join(unknown)}: not in compat/ecosystem.toml (which CUDA it is for)")
            raise NotApplicable("no CuPy or TensorRT package installed")
        available = _available_majors(toolkits, cuda_wheels)
        if not available:
            raise CannotJudge(
                "no CUDA toolkit or runtime wheel found to compare with (system libraries are not probed)"
            )
        missing = [(pkg, major) for pkg, major, _span in needing if major not in available]
        minors = _available_minors(toolkits, cuda_wheels)
        if not missing:
            off = [(p, span) for p, major, span in needing if span is not None and not _in_span(minors, span)]
            return _off_span_problem(off, minors, matrix) if off else None
        return Problem(
            "; ".join(f"{p.name} {p.version} needs CUDA {m} libraries" for p, m in missing)
            + f", but this environment provides CUDA {', '.join(str(m) for m in sorted(available))}",
            {p.name: f"built for CUDA {m}" for p, m in missing},
            Remediation(
                "Install the CUDA runtime of that major (cupy: the [ctk] extra) or the variant for your CUDA.",
                _cupy_swaps([p for p, _m in missing], minors, matrix)
                + tuple(
                    pip(Install((Pin(p.name, extras=("ctk",)),))) for p, _m in missing if p.name.startswith("cupy")
                ),
            ),
        )
