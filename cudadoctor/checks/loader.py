"""CD3xx from the loader's view: CUDA libraries a package needs that resolve nowhere, and LD_PRELOAD."""

# CD304  every CUDA library an installed package's shared objects need resolves (else: which soname,
#        where copies of other majors are, the wheel to install or the directory to add)
# CD306  no CUDA library is forced in through LD_PRELOAD ahead of the copies packages pin

from __future__ import annotations

import posixpath
import re

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.reuse import loaded_elsewhere
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import HostInfo, InstalledPackage, LibraryCopy, LoaderView, NeededLibrary
from cudadoctor.facts.names import canonical_name
from cudadoctor.fixes import Install
from cudadoctor.fixes.build import pip
from cudadoctor.fixes.parse import parse_pin
from cudadoctor.rules.bitsandbytes import bnb_native

__all__ = ["CD304", "CD306", "dlopen_commands", "unread_reason", "wheel_dir", "wheel_for"]

#: Library stem -> the pip wheel that ships it, without the CUDA suffix (NVIDIA's wheels on PyPI:
#: https://pypi.org/project/nvidia-cublas-cu12/, https://pypi.org/project/nvidia-cudnn-cu12/ …).
_WHEEL_BASE = {
    "cudart": "cuda-runtime", "cublas": "cublas", "cublasLt": "cublas", "cudnn": "cudnn", "nccl": "nccl",
    "nvJitLink": "nvjitlink", "cusparse": "cusparse", "cufft": "cufft", "curand": "curand",
    "cusolver": "cusolver", "nvrtc": "cuda-nvrtc", "cupti": "cuda-cupti",
}  # fmt: skip
#: Libraries whose soname number is the CUDA major (libcudart.so.12 is CUDA 12); cuFFT, cuRAND,
#: cuSOLVER, cuDNN and NCCL number their sonames on their own.
_CUDA_NUMBERED = ("cudart", "cublas", "cublasLt", "nvJitLink", "cusparse", "nvrtc")
#: CUDA 13's toolkit wheels dropped the -cu13 suffix (https://pypi.org/project/nvidia-cublas/);
#: cuDNN and NCCL kept it (https://pypi.org/project/nvidia-cudnn-cu13/).
_SUFFIXED_FROM_13 = ("cudnn", "nccl")

_SONAME = re.compile(r"^lib([A-Za-z]+)(?:_[a-z_]+)?\.so\.(\d+)$")


def _stem_major(soname: str) -> tuple[str, int] | None:
    match = _SONAME.match(soname)
    return (match.group(1), int(match.group(2))) if match else None


def _cuda_major(view: LoaderView, package: str) -> int | None:
    """The CUDA major a package's objects were built for: the soname number of their cudart / cuBLAS / … needs."""
    for need in view.needs:
        parsed = _stem_major(need.soname)
        if need.package == package and parsed and parsed[0] in _CUDA_NUMBERED:
            return parsed[1]
    return None


def wheel_for(soname: str, cuda_major: int | None) -> str | None:
    """The pip requirement that installs ``soname`` for ``cuda_major``.

    ``libcudnn.so.9`` for CUDA 12 -> ``nvidia-cudnn-cu12==9.*``; ``libcublas.so.13`` -> ``nvidia-cublas``.
    """
    parsed = _stem_major(soname)
    if parsed is None or parsed[0] not in _WHEEL_BASE or cuda_major is None:
        return None
    stem, number = parsed
    base = _WHEEL_BASE[stem]
    name = f"nvidia-{base}" if cuda_major >= 13 and stem not in _SUFFIXED_FROM_13 else f"nvidia-{base}-cu{cuda_major}"
    if stem in ("cudnn", "cufft", "curand", "cusolver"):  # the soname number is the library's own major
        return f"{name}=={number}.*"
    return name


_SITE = re.compile(r"^(.*/(?:site|dist)-packages)/")


def wheel_dir(needer: str, wheel: str) -> str | None:
    """Where pip puts ``wheel``'s libraries in the site directory of ``needer``: ``nvidia/cublas/lib`` for
    ``nvidia-cublas-cu12``, ``nvidia/cu13/lib`` for the CUDA 13 wheels (https://pypi.org/project/nvidia-cublas/)."""
    site = _SITE.match(needer)
    match = re.match(r"^nvidia-([a-z-]+?)(?:-cu(\d+))?(?:==.*)?$", wheel)
    if site is None or match is None:
        return None
    component = match.group(1).replace("-", "_") if match.group(2) and match.group(2) != "13" else "cu13"
    return f"{site.group(1)}/nvidia/{component}/lib"


def dlopen_commands(need: NeededLibrary, wheel: str) -> tuple[str, ...]:
    """pip's command for ``wheel`` and, for a library opened by name (dlopen searches no wheel directory
    unless LD_LIBRARY_PATH names it), the export of its directory, as faster-whisper's README says."""
    commands = [pip(Install((parse_pin(wheel),)))]
    directory = wheel_dir(need.needer, wheel)
    if need.how == "dlopen" and directory:
        commands.append(f"export LD_LIBRARY_PATH={directory}:$LD_LIBRARY_PATH")
    return tuple(commands)


def _fix(
    view: LoaderView, need: NeededLibrary, packages: dict[str, InstalledPackage], matrix: CompatMatrix | None
) -> tuple[str, tuple[str, ...]]:
    cuda_major = _cuda_major(view, need.package)
    wheel = wheel_for(need.soname, cuda_major)
    if wheel:  # at the version an installed package pins; that package's pin of another major: a build that fits it
        from cudadoctor.checks.wheelfix import fitting_build_fix, pinned_wheel  # the fix path only: not at start-up

        pin = pinned_wheel(wheel, packages)
        if pin.owner is not None:
            return fitting_build_fix(need, cuda_major, pin, packages, matrix)
        wheel = pin.wheel
    same_elsewhere = [p for p in need.other_majors if posixpath.basename(p) == need.soname]
    commands: list[str] = []
    name = canonical_name(parse_pin(wheel).name) if wheel else ""
    if wheel and name in packages and same_elsewhere:
        wheel = None  # installed already: pip would answer "Requirement already satisfied"; its directory is the fix
    if wheel:
        commands += dlopen_commands(need, wheel)
    text = f"Install {need.soname}" + (f" (pip install '{wheel}')" if wheel else "")
    text += f", or install the {need.package} build made for the CUDA libraries you have"
    if same_elsewhere:
        directory = posixpath.dirname(same_elsewhere[0])
        commands.append(f"export LD_LIBRARY_PATH={directory}:$LD_LIBRARY_PATH")
        text += f"; a copy exists in {directory}, outside the loader's search path: add it"
    return text + ".", tuple(commands)


_CUDNN_MAJOR = re.compile(r"^libcudnn(?:_[a-z_]+)?\.so\.(\d+)")


def _ctranslate2_for_cudnn(
    missing: list[NeededLibrary],
    packages: dict[str, InstalledPackage],
    matrix: CompatMatrix | None,
    cudnn: tuple[LibraryCopy, ...],
) -> tuple[str, ...]:
    """ctranslate2 opening a cuDNN major that is not installed while another is: its newest release for the same
    CUDA whose cuDNN is an installed one (rules/ctranslate2.py: 4.4.0 for cuDNN 8), in place."""
    ct2 = packages.get("ctranslate2")
    wanted = {int(m.group(1)) for n in missing if n.package == "ctranslate2" and (m := _CUDNN_MAJOR.match(n.soname))}
    if ct2 is None or matrix is None or not wanted:
        return ()
    found = {c.version.major for c in cudnn if c.version is not None} - wanted
    row = matrix.ctranslate2_range(ct2.version)
    if not found or row is None:
        return ()
    from cudadoctor.fixes import Pin
    from cudadoctor.rules.ctranslate2 import ctranslate2_fitting, ctranslate2_pins

    pins = ctranslate2_pins(p.requires for p in packages.values())
    fitting = ctranslate2_fitting(matrix, lambda cuda: cuda.major == row.cuda.major, ct2.version, pins, found)
    return (pip(Install((Pin.exact("ctranslate2", fitting),))),) if fitting is not None else ()


class CD304(Check):
    """Every CUDA library an installed package's shared objects need can be loaded.

    What it checks: the DT_NEEDED entries of the shared objects each installed package ships
    (any package in site-packages) that name a CUDA library (cudart, cuBLAS, cuDNN and its
    sub-libraries, NCCL, nvJitLink, cuSPARSE, cuFFT, cuRAND, cuSOLVER, NVRTC, CUPTI, TensorRT),
    resolved in ld.so's order: LD_PRELOAD, RPATH, LD_LIBRARY_PATH, RUNPATH (with $ORIGIN),
    /etc/ld.so.cache and the default directories. A copy built for another CPU is skipped, as ld.so
    skips it; a shared object the scan could not read (truncated, lying headers) or left out (past
    its cap) makes it could not judge, naming it, unless a library is missing anyway.

    Why it matters: a needed library that resolves nowhere fails the import ("libcudnn.so.9: cannot
    open shared object file"); when only another major is installed (libcublas.so.12 where
    libcublas.so.11 is needed) the package was built for another CUDA or cuDNN. A library a package opens
    by name (compat/runtime_libraries.toml) that only a pip wheel off its search path holds is an error when
    nothing installed loads from that wheel first (TensorFlow 2.16.1 registers no GPU, tensorflow#63362), a
    warning when another package does (torch through its RUNPATH: then it works only after that import).

    How to fix: install the wheel that ships that soname (the finding names it, at the version an installed
    package pins) and make its directory visible to the loader, or install the package's build for the
    libraries you have: where another package pins that library at another major (torch's cuDNN 8 beside an
    onnxruntime-gpu that needs cuDNN 9, microsoft/onnxruntime#22198), the build compat data lists for it.
    """

    name = "needed-cuda-libraries-resolve"
    category = "wheels"
    severity = Status.FAIL

    def check(
        self,
        loader: LoaderView | None = None,
        packages: dict[str, InstalledPackage] | None = None,
        matrix: CompatMatrix | None = None,
        host: HostInfo | None = None,
        cudnn: tuple[LibraryCopy, ...] = (),
    ) -> Problem | None:
        unknown = _runtime_loads_unknown(packages or {}, matrix, host)
        unread = unread_reason(loader)
        if unread:  # what the objects not read need is unknown: a finding of nothing missing is not a verdict
            unknown.append(unread)
        if loader is None or not loader.needs:
            if unknown:
                raise CannotJudge("; ".join(unknown))
            raise NotApplicable("no installed package needs a CUDA library")
        # bitsandbytes ships a library per CUDA version and loads one: CD437 judges that one's needs
        missing = [n for n in loader.needs if n.loaded is None and not n.optional and not bnb_native(n)]
        if not missing:
            found = _off_search_path(loader)
            if found is None and unknown:
                raise CannotJudge("; ".join(unknown))
            return found
        first = missing[0]
        parts = []
        evidence: dict[str, str] = {"loader cache": loader.cache}
        for need in missing:
            others = sorted({posixpath.basename(p) for p in need.other_majors})
            where = f"; only {', '.join(others)} installed (another major)" if others else ""
            if need.foreign:
                where += f"; skipped, built for another CPU: {', '.join(need.foreign[:2])}"
            parts.append(
                f"{need.package} needs {need.soname} ({posixpath.basename(need.needer)}), found nowhere{where}"
            )
            evidence[f"{need.package}: {need.soname}"] = (
                f"needed by {need.needer}"
                + (f"; other copies: {', '.join(need.other_majors[:4])}" if need.other_majors else "")
                + (f"; skipped by ld.so: {', '.join(need.foreign[:4])}" if need.foreign else "")
            )
        if unread:
            evidence["not read"] = "; ".join(loader.unread[:4]) if loader else ""
        text, commands = _fix(loader, first, packages or {}, matrix)
        for need in missing[1:]:  # every missing library's wheel, in order, once
            commands += tuple(c for c in _fix(loader, need, packages or {}, matrix)[1] if c not in commands)
        commands += _ctranslate2_for_cudnn(missing, packages or {}, matrix, cudnn)
        return Problem("; ".join(parts), evidence, Remediation(text, commands))


def unread_reason(loader: LoaderView | None) -> str | None:
    """Why the loader's view is incomplete: the shared objects (or directories) its scan could not read or left
    out, named (the first three) and counted; None when it read everything."""
    if loader is None or not loader.unread:
        return None
    total = max(loader.unread_total, len(loader.unread))
    shown = "; ".join(loader.unread[:3]) + (f"; and {total - 3} more" if total > 3 else "")
    return f"the loader's view is incomplete ({total} not read, so what they need is unknown): {shown}"


def _runtime_loads_unknown(
    packages: dict[str, InstalledPackage], matrix: CompatMatrix | None, host: HostInfo | None
) -> list[str]:
    """Installed packages known to open CUDA libraries by name (compat/runtime_libraries.toml) whose release the
    table does not cover: what they open is not known, so it is not judged."""
    if matrix is None:
        return []
    arch = host.arch if host is not None else "x86_64"
    covered = {row.package for row in matrix.runtime_loads}
    return [
        f"the libraries {pkg.name} {pkg.version} opens by name (not in compat/runtime_libraries.toml)"
        for name, pkg in sorted(packages.items())
        if name in covered
        and not matrix.runtime_loads_for(name, pkg.version, arch)
        and not matrix.installs_no_objects(name, pkg.version)
    ]


def _off_search_path(loader: LoaderView) -> Problem | None:
    """A library opened by name that only a pip wheel off the opener's search path has: it loads only when
    another package (torch) has loaded that copy first. A warning when an installed framework does preload it (then
    it depends on import order); an error when nothing installed does (TensorFlow 2.16.1 with its own pip cuDNN:
    "Cannot dlopen some GPU libraries", tensorflow/tensorflow#63362)."""
    # A linked (DT_NEEDED) library found only off the search path is CD307's.
    off = [(n, n.loaded) for n in loader.needs if n.how == "dlopen" and not n.optional and n.loaded is not None
           and n.loaded.distribution and n.loaded.via.startswith("wheel, off")]  # fmt: skip
    if not off:
        return None
    # Copies another package loads anyway (torch's libcublas.so.12 through its RPATH, or a framework's preload): a
    # library opened by name is found once that package is imported, for that soname only (cuDNN's sub-libraries
    # load when cuDNN first uses them: CTranslate2#1826).
    elsewhere = loaded_elsewhere(loader)
    alone = [(n, c) for n, c in off if (n.soname, c.path) not in elsewhere]
    commands: dict[str, None] = {}
    for need, copy in off:
        exports = dlopen_commands(need, copy.distribution or "")[1:]
        # a DT_NEEDED library: ld.so searches LD_LIBRARY_PATH too, and the copy's own directory is the one to add
        commands.update(
            dict.fromkeys(exports or (f"export LD_LIBRARY_PATH={posixpath.dirname(copy.path)}:$LD_LIBRARY_PATH",))
        )
    names = ", ".join(sorted({f"{n.soname} ({c.distribution})" for n, c in off}))
    how = "opens" if all(n.how == "dlopen" for n, _c in off) else "needs"
    by_name = " by name at run time" if how == "opens" else ""
    when = (
        f"no installed package loads {', '.join(sorted({n.soname for n, _c in alone}))} first, so it is not found"
        if alone
        else "it loads only because another package (torch) has loaded it first: import that one first"
    )
    return Problem(
        f"{off[0][0].package} {how} {names}{by_name}, but that copy is in a pip wheel directory "
        f"outside its search path: {when}",
        {f"{n.package}: {n.soname}": f"{_verb(n)} by {n.needer}; only copy {c.path}" for n, c in off},
        Remediation("Add the wheel's library directory to LD_LIBRARY_PATH before starting Python.", tuple(commands)),
        status=Status.FAIL if alone else Status.WARN,
    )


def _verb(need: NeededLibrary) -> str:
    return "opened" if need.how == "dlopen" else "needed"


class CD306(Check):
    """No CUDA library is forced in through LD_PRELOAD.

    What it checks: LD_PRELOAD entries that are CUDA libraries (libnccl.so.2, libcudnn.so.9 …),
    which ld.so loads before anything else, so every package gets that copy whatever its RUNPATH
    or pinned wheel says.

    Why it matters: a cluster module or a launcher that preloads a system NCCL older than the one
    torch pins fails with "undefined symbol: ncclComm…"; a preloaded cuDNN of another minor trips
    cuDNN's version check. An error when the preloaded copy is older than the copy it hides.

    How to fix: remove the entry from LD_PRELOAD (or preload the copy the framework pins).
    """

    name = "no-cuda-library-in-ld-preload"
    category = "wheels"
    severity = Status.WARN

    def check(self, loader: LoaderView) -> Problem | None:
        if not loader.preloaded:
            return None
        older = []
        for need in loader.needs:
            if need.loaded is None or need.loaded.via != "LD_PRELOAD" or need.loaded.version is None:
                continue
            newer = [s for s in need.shadowed if s.version is not None and s.version > need.loaded.version]
            older += [
                f"{need.soname} {need.loaded.version} hides {s.version} ({s.distribution or s.path})" for s in newer
            ]
        names = ", ".join(f"{f.path}" + (f" ({f.version})" if f.version else "") for f in loader.preloaded)
        message = f"LD_PRELOAD loads CUDA libraries before any package's own: {names}"
        if older:
            message += "; older than the copy it hides: " + "; ".join(sorted(set(older)))
        return Problem(
            message,
            {"LD_PRELOAD": names},
            Remediation("Remove the CUDA library from LD_PRELOAD.", ("unset LD_PRELOAD",)),
            status=Status.FAIL if older else None,
        )
