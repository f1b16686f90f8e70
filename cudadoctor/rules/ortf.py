"""What onnxruntime-gpu, TensorFlow and paddlepaddle-gpu builds need, and which build fits (compat/ecosystem.toml).

Pure functions over the facts and the compat data, asked by checks/ortf.py (CD430-CD434) and available to
``suggest``. The CUDA major of a library is read from its soname where the soname carries it (libcudart,
cuBLAS, cuBLASLt: ``libcublasLt.so.12`` is CUDA 12's; https://docs.nvidia.com/deploy/cuda-compatibility/).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import OnnxruntimeRelease, PaddleRelease, TensorflowRelease
from cudadoctor.facts.model import CudaWheels, InstalledPackage, LibraryCopy, LoaderView, ToolkitInstall
from cudadoctor.rules.wheels import python_has_wheels, tensorflow_has_wheels

__all__ = [
    "cuda_majors_present",
    "cuda_minors_present",
    "cudnn_majors_present",
    "ort_build",
    "ort_for_cuda",
    "paddle_build",
    "paddle_for_cuda",
    "paddle_runs_on",
    "tf_for_cuda",
    "tf_tested",
    "tf_with_cuda_wheels",
]

#: Libraries whose soname number is the CUDA major (cuFFT, cuRAND, cuDNN … number their own).
_CUDA_NUMBERED = ("cudart", "cublas", "cublasLt")
_SONAME = re.compile(r"^lib([A-Za-z]+?)\.so\.(\d+)")


def _numbered(path: str) -> tuple[str, int] | None:
    match = _SONAME.match(posixpath.basename(path))
    return (match.group(1), int(match.group(2))) if match else None


def _cuda_major_of(path: str) -> int | None:
    found = _numbered(path)
    return found[1] if found and found[0] in _CUDA_NUMBERED else None


def cuda_majors_present(
    toolkits: tuple[ToolkitInstall, ...],
    wheels: CudaWheels | None,
    packages: dict[str, InstalledPackage],
    loader: LoaderView | None,
) -> dict[int, str]:
    """CUDA major -> where this environment has its libraries: toolkits, the CUDA runtime pip wheels, a CUDA
    build of torch (which brings or bundles its CUDA), and copies the loader finds for any package's needs."""
    found: dict[int, str] = {}
    for toolkit in toolkits:
        if toolkit.version is not None:
            found.setdefault(toolkit.version.major, f"CUDA toolkit {toolkit.version} at {toolkit.root}")
    for component in wheels.components if wheels else ():
        if component.distribution.startswith("nvidia-cuda-runtime"):
            found.setdefault(component.version.major, f"{component.distribution} {component.version}")
    torch = packages.get("torch")
    if torch is not None and torch.cuda_build and (major := re.match(r"(\d+)", torch.cuda_build)):
        found.setdefault(int(major.group(1)), f"torch {torch.version} (CUDA {torch.cuda_build} build)")
    for need in loader.needs if loader else ():
        copies = ([need.loaded.path] if need.loaded else []) + list(need.other_majors)
        for path in copies:
            if (major_n := _cuda_major_of(path)) is not None:
                found.setdefault(major_n, path)
    return found


def cudnn_majors_present(copies: Iterable[LibraryCopy], cuda_major: int | None = None) -> set[int]:
    """cuDNN majors installed (for ``cuda_major`` where a copy says which CUDA it was built for)."""
    return {
        c.version.major for c in copies
        if c.version is not None and (cuda_major is None or c.cuda_major in (None, cuda_major))
    }  # fmt: skip


def ort_build(
    matrix: CompatMatrix, package: InstalledPackage, loader: LoaderView | None
) -> tuple[int | None, int | None, str]:
    """(CUDA major, cuDNN major, how known) of the installed onnxruntime-gpu: from the libraries its CUDA provider
    links (the loader's view, which also tells a build from ORT's CUDA 12 feed, same version as PyPI's CUDA 11
    wheel) or else from the data on that release's PyPI wheel."""
    cuda = cudnn = None
    for need in loader.needs if loader else ():
        if need.package != package.name:
            continue
        parsed = _numbered(need.soname)
        if parsed and parsed[0] in _CUDA_NUMBERED:
            cuda = cuda or parsed[1]
        elif parsed and parsed[0] == "cudnn":
            cudnn = cudnn or parsed[1]
    if cuda is not None:
        return cuda, cudnn, "the libraries libonnxruntime_providers_cuda.so links"
    row = matrix.onnxruntime_release(package.version)
    if row is None:
        return None, None, f"onnxruntime-gpu {package.version} is not in compat/ecosystem.toml"
    return row.cuda_major, row.cudnn_major, "its PyPI wheel (compat/ecosystem.toml)"


def _fits_python(pythons: tuple[str, ...], requires: SpecifierSet | None, python: Version | None) -> bool:
    if python is None:
        return True
    verdict = python_has_wheels(python, pythons=pythons, requires_python=requires)
    return not verdict.is_problem


def ort_for_cuda(
    matrix: CompatMatrix, cuda_major: int, cudnn_major: int | None, python: Version | None
) -> OnnxruntimeRelease | None:
    """The newest onnxruntime-gpu release whose PyPI wheel is built for ``cuda_major`` (and ``cudnn_major``
    when given) and has a wheel for ``python``; None when PyPI has none (CUDA 12 with cuDNN 8: only ORT's
    own feed has those builds, https://onnxruntime.ai/docs/install/)."""
    rows = [
        r for r in matrix.onnxruntime_releases
        if r.cuda_major == cuda_major and (cudnn_major is None or r.cudnn_major == cudnn_major)
        and _fits_python(*matrix.onnxruntime_pythons(r), python)
    ]  # fmt: skip
    return max(rows, key=lambda r: r.version, default=None)


def tf_tested(matrix: CompatMatrix, version: Version) -> TensorflowRelease | None:
    """The row holding the CUDA/cuDNN TensorFlow ``version``'s X.Y series was tested with (its X.Y.0)."""
    public = Version(version.public)
    rows = [r for r in matrix.tensorflow_releases if r.version.release[:2] == public.release[:2] and r.cuda]
    return min(rows, key=lambda r: r.version, default=None)


def _and_cuda_installs(row: TensorflowRelease, python: Version | None) -> bool:
    """``pip install 'tensorflow[and-cuda]==<row>'`` resolves here: the extra exists, pip can resolve its pins
    (2.15.0's tensorrt-libs==8.6.1 is not on PyPI, compat/ecosystem.toml) and a wheel is there for ``python``."""
    if not row.and_cuda or row.and_cuda_resolves is False or row.version.is_prerelease:
        return False
    return python is None or not tensorflow_has_wheels(row, python, "linux-x86_64").is_problem


def tf_for_cuda(matrix: CompatMatrix, cuda_major: int, python: Version | None) -> TensorflowRelease | None:
    """The newest TensorFlow release tested with ``cuda_major`` whose ``[and-cuda]`` extra installs that CUDA
    from pip and that has a Linux x86_64 wheel for ``python``."""
    rows = [
        row for row in matrix.tensorflow_releases
        if (tested := tf_tested(matrix, row.version)) is not None and tested.cuda is not None
        and tested.cuda.major == cuda_major and _and_cuda_installs(row, python)
    ]  # fmt: skip
    return max(rows, key=lambda r: r.version, default=None)


def tf_with_cuda_wheels(matrix: CompatMatrix, version: Version, python: Version | None) -> TensorflowRelease | None:
    """The release to install as ``tensorflow[and-cuda]`` for an installed ``version``: itself where its extra
    installs, else the next release of its X.Y series whose does (2.15.0 -> 2.15.1), else None."""
    public = Version(version.public)
    series = [r for r in matrix.tensorflow_releases if r.version.release[:2] == public.release[:2]]
    own = next((r for r in series if r.version == public), None)
    if own is not None and _and_cuda_installs(own, python):
        return own
    usable = [r for r in series if r.version > public and _and_cuda_installs(r, python)]
    return min(usable, key=lambda r: r.version, default=None)


def paddle_build(matrix: CompatMatrix, package: InstalledPackage) -> tuple[Version, Version | None, str] | None:
    """(CUDA, cuDNN, how known) of the installed paddlepaddle-gpu: its pinned CUDA runtime wheel (Paddle 3.x
    builds on Paddle's own index depend on nvidia-*-cuNN wheels) or the data on its PyPI release; None when
    neither says (a ``.postNNN`` build from Paddle's own index, 2.0.x/2.1.x)."""
    if package.cuda_build and (match := re.match(r"(\d+)\.(\d+)", package.cuda_build)):
        return Version(f"{match.group(1)}.{match.group(2)}"), None, package.cuda_variant_source or "its pins"
    row = matrix.paddle_release(package.version)
    if row is None:
        return None
    return row.cuda, row.cudnn, "its PyPI wheel's paddle/version/__init__.py (compat/ecosystem.toml)"


def paddle_runs_on(build: Version, minors: set[tuple[int, int]]) -> bool:
    """Whether CUDA libraries of these (major, minor) serve a build for ``build``: before CUDA 11 the runtime's
    soname carries the minor (libcudart.so.10.2), so only that minor; from 11 on the same major
    (https://docs.nvidia.com/deploy/cuda-compatibility/, minor-version compatibility; *inferred* for Paddle)."""
    if build.major < 11:
        return (build.major, build.minor) in minors
    return any(major == build.major for major, _minor in minors)


def paddle_for_cuda(matrix: CompatMatrix, minors: set[tuple[int, int]]) -> PaddleRelease | None:
    """The newest paddlepaddle-gpu PyPI release whose build runs on these CUDA minors."""
    rows = [r for r in matrix.paddle_releases if paddle_runs_on(r.cuda, minors)]
    return max(rows, key=lambda r: r.version, default=None)


def cuda_minors_present(toolkits: tuple[ToolkitInstall, ...], wheels: CudaWheels | None) -> set[tuple[int, int]]:
    """(major, minor) of each installed toolkit and CUDA runtime wheel."""
    found = {(t.version.major, t.version.minor) for t in toolkits if t.version is not None}
    for component in wheels.components if wheels else ():
        if component.distribution.startswith("nvidia-cuda-runtime"):
            found.add((component.version.major, component.version.minor))
    return found
