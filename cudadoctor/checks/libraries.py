"""CD2xx and CD3xx: the toolkit extensions are built with, and the cuDNN / NCCL / CUDA library copies."""

# CD2xx: CUDA toolkit
#   CD201  the nvcc that extensions build with has torch's CUDA major
# CD3xx: libraries
#   CD301  one CUDA major per nvidia-* library (not both -cu12 and -cu13 of one library)
#   CD302  no other cuDNN / NCCL copy on LD_LIBRARY_PATH shadows the pip wheel a framework pins
#   CD303  CuPy, TensorRT and onnxruntime-gpu find CUDA libraries of the major they were built for

from __future__ import annotations

import posixpath
import re

from cudadoctor.bounded import parse_int
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.facts.model import (
    CudaWheels,
    HostInfo,
    InstalledPackage,
    LibraryCopy,
    NvccInfo,
    ToolkitInstall,
)

__all__ = ["CD201", "CD301", "CD302", "CD303"]


class CD201(Check):
    """The nvcc that CUDA extensions build with has the CUDA major torch was built with.

    What it checks: the release of the first nvcc on PATH (what torch.utils.cpp_extension, flash-attn,
    vLLM or DeepSpeed source builds use) against torch's CUDA version (torch/version.py).

    Why it matters: torch refuses to build an extension when the majors differ ("The detected CUDA
    version (12.4) mismatches the version that was used to compile PyTorch (13.0)"); a minor mismatch
    only warns, and is not reported here.

    How to fix: put a toolkit of torch's CUDA major first on PATH and in CUDA_HOME, or install the torch
    build for the toolkit you have.
    """

    name = "nvcc-matches-torch-cuda-major"
    category = "toolkit"
    severity = Status.WARN

    def check(self, nvcc: NvccInfo, torch: InstalledPackage) -> Problem | None:
        if nvcc.release is None:
            raise CannotJudge("nvcc's release is unknown")
        build = torch.torch_build.cuda if torch.torch_build and torch.torch_build.cuda else torch.cuda_build
        if not build or not torch.cuda_variant or not torch.cuda_variant.startswith("cu"):
            raise NotApplicable("torch is not a CUDA build")
        try:
            build_major = parse_int(build.split(".")[0], max_digits=4)
        except ValueError:  # not a CUDA version (a snapshot or version.py may say anything)
            raise CannotJudge(f"torch's CUDA build {build[:20]!r} is not a CUDA version") from None
        if build_major == nvcc.release.major:
            return None
        return Problem(
            f"nvcc on PATH is CUDA {nvcc.release} ({nvcc.path}) but torch was built with CUDA {build}: building "
            "CUDA extensions against this torch will fail",
            {"nvcc": f"{nvcc.version or nvcc.release} ({nvcc.source})", "torch": f"CUDA {build}"},
            Remediation(f"Put a CUDA {build.split('.')[0]}.x toolkit first on PATH and in CUDA_HOME.", ()),
        )


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
    value = next((v.value for v in host.env if v.name == "LD_LIBRARY_PATH"), "")
    return [posixpath.normpath(p) for p in value.split(":") if p]


def _pinned(packages: dict[str, InstalledPackage], prefix: str) -> list[tuple[InstalledPackage, str]]:
    """(framework, pinned distribution) for Requires-Dist pins on ``prefix`` wheels (nvidia-cudnn-cu13 …)."""
    out = []
    for pkg in packages.values():
        for line in pkg.requires:
            name = re.split(r"[\s<>=!~\[;(]", line.strip(), maxsplit=1)[0].lower()
            if name.startswith(prefix) and "==" in line:
                out.append((pkg, name))
    return out


class CD302(Check):
    """No other cuDNN or NCCL copy on LD_LIBRARY_PATH shadows the pip wheel a framework pins.

    What it checks: system (or conda, or tarball) cuDNN and NCCL copies whose library directory is listed
    in LD_LIBRARY_PATH, when an installed framework pins the pip wheel of that library and the versions
    differ. A copy that is only in the ld cache is not reported: the framework's own RUNPATH comes first.

    Why it matters: LD_LIBRARY_PATH is searched before a library's RUNPATH, so torch loads the other copy:
    collect_env-style reports then disagree with what runs, and a cuDNN or NCCL older than the pin
    fails or misbehaves (`check --deep` shows the file really loaded).

    How to fix: take that directory out of LD_LIBRARY_PATH.
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
    ) -> Problem | None:
        dirs = set(_ld_library_path(host))
        if not dirs:
            return None
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
                    if wanted is not None and wanted.version != copy.version:
                        problems.append(
                            f"{label} {copy.version} in {', '.join(sorted(shadow))} (on LD_LIBRARY_PATH) is loaded "
                            f"before the {label} {wanted.version} wheel {framework.name} pins"
                        )
                        evidence[f"{label} {copy.origin}"] = f"{copy.version} at {copy.path}"
                        evidence[f"{label} pip"] = f"{wanted.version} ({dist}, pinned by {framework.name})"
        if not problems:
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


class CD303(Check):
    """CuPy and TensorRT find CUDA libraries of the major they were built for.

    What it checks: cupy-cudaNNx and tensorrt-cuNN against the CUDA majors this environment provides:
    installed toolkits and the CUDA runtime pip wheels.

    Why it matters: these packages load the CUDA runtime (and math libraries) from the system or from
    nvidia-* wheels; with none of their major present, importing or first use fails with
    "libcudart.so.12: cannot open shared object file".

    How to fix: install the CUDA runtime wheels of that major (for CuPy: pip install "cupy-cudaNNx[ctk]"),
    a toolkit of that major, or the package variant for the CUDA you have.
    """

    name = "cuda-major-of-packages-present"
    category = "wheels"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        toolkits: tuple[ToolkitInstall, ...] = (),
        cuda_wheels: CudaWheels | None = None,
    ) -> Problem | None:
        needing = []
        for name, pkg in packages.items():
            match = _NEEDS_MAJOR.match(name)
            if match:
                needing.append((pkg, int(match.group(2) or match.group(3))))
        if not needing:
            raise NotApplicable("no CuPy or TensorRT package installed")
        available = _available_majors(toolkits, cuda_wheels)
        if not available:
            raise CannotJudge(
                "no CUDA toolkit or runtime wheel found to compare with (system libraries are not probed)"
            )
        missing = [(pkg, major) for pkg, major in needing if major not in available]
        if not missing:
            return None
        return Problem(
            "; ".join(f"{p.name} {p.version} needs CUDA {m} libraries" for p, m in missing)
            + f", but this environment provides CUDA {', '.join(str(m) for m in sorted(available))}",
            {p.name: f"built for CUDA {m}" for p, m in missing},
            Remediation(
                "Install the CUDA runtime of that major (cupy: the [ctk] extra) or the variant for your CUDA.",
                tuple(f"python -m pip install '{p.name}[ctk]'" for p, _m in missing if p.name.startswith("cupy")),
            ),
        )
