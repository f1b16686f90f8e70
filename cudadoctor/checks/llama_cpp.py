"""CD440-CD441: llama-cpp-python's build, read from the shared objects it installed.

PyPI has only llama-cpp-python's sdist (compat/llama_cpp.toml), so a plain ``pip install llama-cpp-python``
compiles llama.cpp on the machine without CUDA, unless ``CMAKE_ARGS`` turned it on; the project's prebuilt CUDA
wheels come from its own indexes (``https://abetlen.github.io/llama-cpp-python/whl/cuXYZ``) and link the machine's
CUDA runtime and cuBLAS. Whether a CUDA library the build needs loads is CD304's (the loader view reads these
objects like every other package's).
"""

# CD4xx: Python packages
#   CD440  llama-cpp-python is a CUDA build where an NVIDIA GPU is present
#   CD441  the driver runs the CUDA major llama-cpp-python was built for

from __future__ import annotations

from packaging.version import Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.cpu_builds import nvidia_present
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.derive import GpuEvidence
from cudadoctor.facts.model import (
    CudaWheels,
    DriverInfo,
    HostInfo,
    InstalledPackage,
    LlamaCppBuild,
    NvccInfo,
    ToolkitInstall,
)
from cudadoctor.fixes.build import pip
from cudadoctor.fixes.llama_cpp import llama_cpp_index_with, llama_cpp_prebuilt, llama_cpp_source_build
from cudadoctor.rules.driver import ForwardCompat, driver_runs_cuda
from cudadoctor.rules.llama_cpp import llama_cpp_cuda, llama_cpp_other_backend

__all__ = ["CD440", "CD441"]


def _nvcc_release(toolkits: tuple[ToolkitInstall, ...], nvcc: NvccInfo | None) -> Version | None:
    """The CUDA a source build would compile with: nvcc on PATH (what CMake's FindCUDAToolkit finds first), else a
    toolkit that holds an nvcc."""
    if nvcc is not None and nvcc.release is not None:
        return nvcc.release
    found = next((t.nvcc_version for t in toolkits if t.nvcc_version is not None), None)
    return Version(f"{found.major}.{found.minor}") if found is not None else None


def _runtimes(toolkits: tuple[ToolkitInstall, ...], cuda_wheels: CudaWheels | None) -> set[Version]:
    """The CUDA runtimes installed (toolkits, nvidia-cuda-runtime wheels), major.minor: a prebuilt wheel links one."""
    found = {t.version for t in toolkits if t.version is not None}
    if cuda_wheels is not None:
        found |= {c.version for c in cuda_wheels.components if c.distribution.startswith("nvidia-cuda-runtime")}
    return {Version(f"{v.major}.{v.minor}") for v in found}


def _runs(matrix: CompatMatrix, major: int, driver: DriverInfo | None, forward: ForwardCompat | None) -> bool:
    return driver is not None and driver_runs_cuda(matrix, major, driver.version, forward=forward).is_ok


def _commands(
    matrix: CompatMatrix,
    version: Version,
    build_cuda: Version | None,
    runtimes: set[Version],
    runs: set[int],
) -> tuple[str, ...]:
    """A source build with the installed nvcc (when the driver runs its CUDA), and the prebuilt wheel of a CUDA
    whose runtime is installed and which the driver runs."""
    commands: list[str] = []
    if build_cuda is not None and build_cuda.major in runs and (source := llama_cpp_source_build(matrix, version)):
        commands.append(pip(source))
    index = llama_cpp_index_with(matrix, version, {r for r in runtimes if r.major in runs})
    if index is not None:
        commands.append(pip(llama_cpp_prebuilt(index, version)))
    return tuple(commands)


def _build_evidence(build: LlamaCppBuild) -> dict[str, str]:
    return {
        "llama_cpp objects": ", ".join(build.objects[:6]) + (" …" if len(build.objects) > 6 else ""),
        "CUDA libraries they need": ", ".join(build.cuda_needs) or "none",
    }


class CD440(Check):
    """llama-cpp-python is a CUDA build where an NVIDIA GPU is present.

    What it checks: on a machine with an NVIDIA GPU or driver, the shared objects llama-cpp-python installed
    (llama_cpp/ and llama_cpp/lib/): a CUDA build needs the CUDA runtime and cuBLAS (DT_NEEDED
    libcudart.so.N, libcublas.so.N) and from 0.3.2 on installs libggml-cuda.so. PyPI has only the sdist
    (compat/llama_cpp.toml), so a plain pip install or upgrade compiles it without CUDA.

    Why it matters: a CPU build never uses the GPU: the model loads with "BLAS = 0", n_gpu_layers is ignored
    (newer releases warn that llama.cpp was not compiled with GPU offload support), and inference runs on the
    CPU.

    How to fix: rebuild the installed release with CUDA, with the CMake flag its README gives
    (CMAKE_ARGS="-DGGML_CUDA=on"; -DLLAMA_CUDA=on for 0.2.60-0.2.81, -DLLAMA_CUBLAS=on before) and
    --force-reinstall --no-cache-dir (pip otherwise keeps or reuses the CPU build); this needs the CUDA toolkit
    (nvcc). Or install the prebuilt wheel from https://abetlen.github.io/llama-cpp-python/whl/cuXYZ for a CUDA
    whose runtime is installed, where that index lists the release.
    """

    name = "llama-cpp-is-cuda-build"
    category = "python"

    def check(
        self,
        llama_cpp: LlamaCppBuild,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        gpu_evidence: GpuEvidence | None = None,
        driver: DriverInfo | None = None,
        toolkits: tuple[ToolkitInstall, ...] = (),
        nvcc: NvccInfo | None = None,
        cuda_wheels: CudaWheels | None = None,
        forward: ForwardCompat | None = None,
    ) -> Problem | None:
        nvidia = nvidia_present(gpu_evidence, driver)
        cuda, _major = llama_cpp_cuda(llama_cpp)
        if cuda is None:
            why = "; ".join(llama_cpp.unread[:3]) or f"no shared object found in {llama_cpp.directory}"
            raise CannotJudge(f"whether llama-cpp-python was built with CUDA: {why}")
        if cuda or llama_cpp_other_backend(llama_cpp) is not None:
            return None
        pkg = packages.get("llama-cpp-python")
        if pkg is None:
            raise CannotJudge("llama-cpp-python's version (its metadata was not read)")
        build_cuda = _nvcc_release(toolkits, nvcc)
        runtimes = _runtimes(toolkits, cuda_wheels)
        majors = {r.major for r in runtimes} | ({build_cuda.major} if build_cuda else set())
        runs = {m for m in majors if _runs(matrix, m, driver, forward)}
        commands = _commands(matrix, pkg.version, build_cuda, runtimes, runs)
        source = llama_cpp_source_build(matrix, pkg.version)
        if build_cuda is None and source is not None:  # the rebuild, once the toolkit the text names is installed
            commands = (pip(source), *commands)
        evidence = {**nvidia, f"llama-cpp-python {pkg.version}": f"{llama_cpp.directory}: no CUDA library needed",
                    **_build_evidence(llama_cpp)}  # fmt: skip
        if build_cuda is not None:
            evidence["nvcc"] = f"CUDA {build_cuda} (a source build compiles with it)"
        keeps = "the command keeps the installed release; pip must not reuse its cached CPU wheel"
        if build_cuda is None:
            text = f"Install the CUDA toolkit (nvcc) of a CUDA this driver runs, then rebuild with CUDA ({keeps})."
        elif commands:
            text = f"Rebuild llama-cpp-python with CUDA ({keeps}), or install the prebuilt CUDA wheel."
        else:
            shown = driver.version if driver else "?"
            text = f"nvcc is CUDA {build_cuda}, which driver {shown} does not run: upgrade the driver or the toolkit."
        return Problem(
            f"llama-cpp-python {pkg.version} was built without CUDA (no object needs the CUDA runtime or cuBLAS, "
            "no libggml-cuda.so): models load with 'BLAS = 0' and n_gpu_layers is ignored, on a machine with an "
            "NVIDIA " + ("GPU" if gpu_evidence else "driver"),
            evidence,
            Remediation(text, commands),
            # the environment was set up for CUDA builds (a toolkit or CUDA runtime is installed): an error
            status=Status.FAIL if build_cuda is not None or runtimes else Status.WARN,
        )


class CD441(Check):
    """The NVIDIA driver runs the CUDA major llama-cpp-python was built for.

    What it checks: the CUDA major of the runtime llama-cpp-python's objects link (libcudart.so.N,
    libcublas.so.N) against the oldest driver of that major (minor-version compatibility, compat/cuda.toml),
    as for any framework's CUDA build (CD111).

    Why it matters: a prebuilt wheel from a cuXYZ index of a newer CUDA major than the driver supports (or a
    source build with a newer toolkit) fails at the first CUDA call with "CUDA driver version is insufficient
    for CUDA runtime version", and llama.cpp falls back to the CPU or stops.

    How to fix: upgrade the driver, or rebuild with a toolkit of a CUDA major the driver runs, or install the
    release's wheel from the index of such a CUDA (compat/llama_cpp.toml lists which releases each has).
    """

    name = "driver-runs-llama-cpp-cuda"
    category = "driver"

    def check(
        self,
        llama_cpp: LlamaCppBuild,
        driver: DriverInfo,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        host: HostInfo,
        toolkits: tuple[ToolkitInstall, ...] = (),
        nvcc: NvccInfo | None = None,
        cuda_wheels: CudaWheels | None = None,
        forward: ForwardCompat | None = None,
    ) -> Problem | None:
        cuda, major = llama_cpp_cuda(llama_cpp)
        if cuda is False or (llama_cpp_other_backend(llama_cpp) and not cuda):
            raise NotApplicable("llama-cpp-python is not a CUDA build (CD440)")
        if cuda is None or major is None:
            raise CannotJudge("the CUDA major llama-cpp-python was built for (no libcudart/libcublas need read)")
        verdict = driver_runs_cuda(matrix, major, driver.version, windows=host.os == "Windows", forward=forward)
        if verdict.is_unknown:
            raise CannotJudge(f"the driver floor of CUDA {major}: {verdict.missing}")
        if not verdict.is_problem:
            return None
        pkg = packages.get("llama-cpp-python")
        version = pkg.version if pkg is not None else None
        build_cuda = _nvcc_release(toolkits, nvcc)
        runtimes = _runtimes(toolkits, cuda_wheels)
        candidates = ({r.major for r in runtimes} | ({build_cuda.major} if build_cuda else set())) - {major}
        runs = {m for m in candidates if _runs(matrix, m, driver, forward)}
        commands = _commands(matrix, version, build_cuda, runtimes, runs) if version is not None else ()
        return Problem(
            f"llama-cpp-python {version or ''} is built for CUDA {major} ({', '.join(llama_cpp.cuda_needs)}), but "
            f"driver {driver.version} is older than {verdict.detail}, the oldest that runs CUDA {major}: the first "
            "CUDA call fails with 'CUDA driver version is insufficient for CUDA runtime version'",
            {
                "driver": str(driver.version),
                f"CUDA {major}.x": f"needs driver >= {verdict.detail}",
                **_build_evidence(llama_cpp),
            },
            Remediation(
                f"Upgrade the NVIDIA driver to {verdict.detail} or newer, or install a llama-cpp-python build for a "
                "CUDA major this driver runs.",
                commands,
            ),
            status=Status.FAIL,
        )
