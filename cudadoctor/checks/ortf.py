"""CD430-CD434: onnxruntime-gpu, TensorFlow and paddlepaddle-gpu builds against the CUDA this environment has.

Each package's needs per release come from compat/ecosystem.toml (the rules in cudadoctor/rules/ortf.py);
which copy of a library the loader finds is the loader checks' (CD302-CD309).
"""

# CD4xx: Python packages
#   CD430  onnxruntime-gpu is built for the CUDA major this environment's CUDA libraries have
#   CD431  onnxruntime (the CPU package) is not installed beside onnxruntime-gpu
#   CD432  TensorFlow's tested CUDA major is the one this environment's CUDA libraries have
#   CD433  TensorFlow on a GPU machine has CUDA libraries at all (the [and-cuda] extra or a system CUDA)
#   CD434  paddlepaddle-gpu's CUDA build fits the driver and the CUDA libraries present

from __future__ import annotations

from packaging.version import Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.loader import wheel_for
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import OnnxruntimeRelease
from cudadoctor.facts.derive import GpuEvidence
from cudadoctor.facts.model import (
    CudaWheels,
    DriverInfo,
    HostInfo,
    InstalledPackage,
    LibraryCopy,
    LoaderView,
    PythonEnv,
    ToolkitInstall,
)
from cudadoctor.fixes import Install, Pin, Steps, Uninstall
from cudadoctor.fixes.build import pip
from cudadoctor.fixes.parse import parse_pin
from cudadoctor.rules.ortf import (
    cuda_majors_present,
    cuda_minors_present,
    cudnn_majors_present,
    ort_build,
    ort_for_cuda,
    paddle_build,
    paddle_for_cuda,
    paddle_runs_on,
    tf_for_cuda,
    tf_tested,
    tf_with_cuda_wheels,
)

__all__ = ["CD430", "CD431", "CD432", "CD433", "CD434"]

_ORT = "onnxruntime-gpu"
#: ORT's install page: the PyPI wheel's CUDA major per release and the feeds of the other builds
_ORT_INSTALL = "https://onnxruntime.ai/docs/install/"


def _majors_text(present: dict[int, str]) -> str:
    return ", ".join(f"CUDA {m} ({where})" for m, where in sorted(present.items()))


def _unprobed_cuda(cudnn: tuple[LibraryCopy, ...], major: int | None = None) -> str | None:
    """A conda cuDNN for ``major`` or of unknown CUDA: conda's cudatoolkit beside it (the environment's lib/,
    no ``targets/`` directory) is not a toolkit the probes find, so the CUDA present is not known well enough to
    call it missing."""
    for copy in cudnn:
        if copy.origin == "conda" and (major is None or copy.cuda_major in (None, major)):
            return (
                f"cuDNN {copy.version or '?'} ({copy.origin}, {copy.path}) suggests a CUDA outside toolkits and wheels"
            )
    return None


def _target_major(present: dict[int, str], packages: dict[str, InstalledPackage]) -> int:
    """The CUDA major a replacement should be built for: torch's where it is a CUDA build (it cannot move
    without rebuilding the environment), else the newest present."""
    torch = packages.get("torch")
    if torch is not None and torch.cuda_build:
        major = int(torch.cuda_build.split(".")[0])
        if major in present:
            return major
    return max(present)


def _ort_fix(
    matrix: CompatMatrix,
    replacement: OnnxruntimeRelease | None,
    target: int,
    want_cudnn: int | None,
    built: int,
    has_cudnn: bool,
) -> tuple[str, tuple[str, ...]]:
    """The words and commands of CD430's fix: the release that fits, with cuDNN where none is installed."""
    if replacement is None:
        cudnn_text = f" and cuDNN {want_cudnn}" if want_cudnn else ""
        return (
            f"PyPI has no onnxruntime-gpu built for CUDA {target}{cudnn_text} with a wheel for this Python; "
            f"ONNX Runtime's install page ({_ORT_INSTALL}) names the package feed of its other CUDA builds, "
            f"or install the CUDA {built} libraries it was built for.",
            (),
        )
    text = f"Install onnxruntime-gpu {replacement.version}, whose PyPI wheel is built for CUDA {target}" + (
        f" and cuDNN {replacement.cudnn_major}." if replacement.cudnn_major else "."
    )
    if matrix.onnxruntime_has_preload(replacement):
        text += (
            " Where its CUDA libraries come from pip wheels and torch is not imported first, call "
            "onnxruntime.preload_dlls() before creating the session."
        )
    commands: tuple[str, ...] = (pip(Install((Pin.exact(_ORT, replacement.version),))),)
    wheel = wheel_for(f"libcudnn.so.{replacement.cudnn_major}", target) if replacement.cudnn_major else None
    if not has_cudnn and wheel:  # no cuDNN at all: it needs one
        text += f" It also needs cuDNN {replacement.cudnn_major}, of which none is installed."
        commands += (pip(Install((parse_pin(wheel),))),)
    return text, commands


class CD430(Check):
    """onnxruntime-gpu is built for the CUDA major whose libraries this environment has.

    What it checks: the CUDA major (and cuDNN major) the installed onnxruntime-gpu's CUDA provider is built
    for, read from the libraries libonnxruntime_providers_cuda.so links or, for its release, from
    compat/ecosystem.toml (PyPI's wheel is CUDA 11 / cuDNN 8 up to 1.18.x, CUDA 12 / cuDNN 9 from 1.19.0 to
    1.26.0, CUDA 13 from 1.27.0), against the CUDA majors present: toolkits, the CUDA runtime pip wheels,
    a CUDA build of torch, and the copies the loader finds.

    Why it matters: a provider built for another CUDA major cannot load ("Failed to load library
    libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file", then
    "Failed to create CUDAExecutionProvider"); ONNX Runtime then silently runs the session on
    CPUExecutionProvider. The same holds for a CUDA 13 build beside a CUDA 12 torch, and the reverse.

    How to fix: install the onnxruntime-gpu release whose PyPI wheel is built for the CUDA (and cuDNN) major
    present, for this Python (the command names it); ORT's install page lists the builds of the other
    major (https://onnxruntime.ai/docs/install/).
    """

    name = "onnxruntime-gpu-cuda-major"
    category = "python"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        toolkits: tuple[ToolkitInstall, ...] = (),
        cuda_wheels: CudaWheels | None = None,
        loader: LoaderView | None = None,
        cudnn: tuple[LibraryCopy, ...] = (),
        python: PythonEnv | None = None,
    ) -> Problem | None:
        ort = packages.get(_ORT)
        if ort is None:
            raise NotApplicable("onnxruntime-gpu is not installed")
        built, built_cudnn, how = ort_build(matrix, ort, loader)
        if built is None:
            raise CannotJudge(how)
        needs = [n for n in (loader.needs if loader else ()) if n.package == _ORT]
        if needs and all(n.loaded is not None for n in needs):
            return None  # every library its provider links loads
        present = cuda_majors_present(toolkits, cuda_wheels, packages, loader)
        if built in present:
            return None  # the major is there; a single missing library is CD304's
        if not present:
            raise CannotJudge("no CUDA libraries found to compare with (no toolkit, runtime wheel or CUDA torch)")
        if not needs and (unprobed := _unprobed_cuda(cudnn, built)):
            raise CannotJudge(unprobed)  # without its provider's needs, a conda CUDA of its major may be there
        target = _target_major(present, packages)
        cudnn_majors = cudnn_majors_present(cudnn, target)
        want_cudnn = max(cudnn_majors) if cudnn_majors else None
        replacement = ort_for_cuda(matrix, target, want_cudnn, python.version if python else None)
        evidence = {
            _ORT: f"{ort.version}: built for CUDA {built}"
            + (f", cuDNN {built_cudnn}" if built_cudnn else "")
            + f" ({how})",
            "CUDA present": _majors_text(present),
        }
        text, commands = _ort_fix(matrix, replacement, target, want_cudnn, built, bool(cudnn_majors))
        return Problem(
            f"onnxruntime-gpu {ort.version} is built for CUDA {built}, but this environment's CUDA libraries are "
            f"CUDA {', '.join(str(m) for m in sorted(present))}: its CUDA provider cannot load, and ONNX Runtime "
            "silently falls back to CPUExecutionProvider",
            evidence,
            Remediation(text, commands),
            status=Status.FAIL,
        )


class CD431(Check):
    """onnxruntime (the CPU package) is not installed beside onnxruntime-gpu.

    What it checks: whether both distributions, onnxruntime and onnxruntime-gpu, are installed.

    Why it matters: both install the same `onnxruntime` import package; whichever pip installed last
    overwrote the other's files, and with the CPU package's files ONNX Runtime offers only
    CPUExecutionProvider ("Specified provider 'CUDAExecutionProvider' is not in available provider
    names"; onnxruntime.get_device() says CPU). ONNX Runtime's docs: only one of the two should be installed
    in an environment; the GPU package includes the CPU provider. Removing the CPU package alone leaves the
    shared files removed, so the GPU package must be reinstalled.

    How to fix: uninstall onnxruntime, then reinstall onnxruntime-gpu (forced, so its files are written
    again; without its dependencies, which are installed and need not move).
    """

    name = "onnxruntime-cpu-beside-gpu"
    category = "python"

    def check(self, packages: dict[str, InstalledPackage]) -> Problem | None:
        cpu, gpu = packages.get("onnxruntime"), packages.get(_ORT)
        if gpu is None:
            raise NotApplicable("onnxruntime-gpu is not installed")
        if cpu is None:
            return None
        command = Steps(
            (Uninstall(("onnxruntime",)), Install((Pin.exact(_ORT, gpu.version),), force_reinstall=True, no_deps=True))
        )
        return Problem(
            f"onnxruntime {cpu.version} (CPU only) and onnxruntime-gpu {gpu.version} are both installed: they share "
            "the onnxruntime package directory, so the CPU package's files can hide the GPU one's and only "
            "CPUExecutionProvider is available",
            {"onnxruntime": f"{cpu.version} ({cpu.source.where})", _ORT: f"{gpu.version} ({gpu.source.where})"},
            Remediation(
                "Keep only onnxruntime-gpu (it includes the CPU provider): uninstall onnxruntime and reinstall "
                "onnxruntime-gpu so its files are complete again.",
                (pip(command),),
            ),
            status=Status.FAIL,
        )


def _tensorflow(packages: dict[str, InstalledPackage], host: HostInfo | None) -> InstalledPackage:
    tf = packages.get("tensorflow")
    if tf is None:
        raise NotApplicable("tensorflow is not installed")
    if host is not None and (host.os != "Linux" or host.arch != "x86_64"):
        # TensorFlow's GPU wheels are Linux x86_64 ones (https://www.tensorflow.org/install/pip; the native
        # Windows GPU build ended with 2.10)
        raise NotApplicable(f"TensorFlow's CUDA builds are Linux x86_64 wheels, this is {host.os} {host.arch}")
    return tf


def _tf_and_cuda(version: str) -> str:
    return pip(Install((Pin.exact("tensorflow", version, extras=("and-cuda",)),)))


class CD432(Check):
    """TensorFlow's tested CUDA major is the one whose libraries this environment has.

    What it checks: the CUDA and cuDNN the installed TensorFlow's X.Y series was tested with (tensorflow.org's
    tested build configurations, compat/ecosystem.toml) against the CUDA majors present: toolkits, the CUDA
    runtime pip wheels (tensorflow[and-cuda] installs them from 2.14 on), a CUDA build of torch, copies the
    loader finds.

    Why it matters: TensorFlow opens its CUDA libraries by name with the major in the name
    (libcudart.so.11.0, libcublas.so.12 …); with only another major present it logs "Could not find cuda
    drivers on your machine, GPU will not be used" or "Cannot dlopen some GPU libraries … Skipping registering
    GPU devices" and runs on the CPU.

    How to fix: install the CUDA libraries of TensorFlow's major: from 2.14 on its own pip wheels,
    pip install 'tensorflow[and-cuda]==<version>'; before 2.14, a TensorFlow release whose [and-cuda] brings
    the CUDA it needs (the command names it), or that major's toolkit and cuDNN.
    """

    name = "tensorflow-cuda-major"
    category = "python"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        toolkits: tuple[ToolkitInstall, ...] = (),
        cuda_wheels: CudaWheels | None = None,
        loader: LoaderView | None = None,
        python: PythonEnv | None = None,
        host: HostInfo | None = None,
        cudnn: tuple[LibraryCopy, ...] = (),
    ) -> Problem | None:
        tf = _tensorflow(packages, host)
        tested = tf_tested(matrix, tf.version)
        if tested is None or tested.cuda is None:
            raise CannotJudge(f"the CUDA TensorFlow {tf.version}'s series was tested with is not in compat data")
        present = cuda_majors_present(toolkits, cuda_wheels, packages, loader)
        if not present:
            raise NotApplicable("no CUDA libraries at all: CD433 judges that")
        minors = cuda_minors_present(toolkits, cuda_wheels)
        if _tf_finds(tested.cuda, present, minors):
            return None
        if unprobed := _unprobed_cuda(cudnn, tested.cuda.major):
            raise CannotJudge(unprobed)
        with_cudnn = f" / cuDNN {tested.cudnn}" if tested.cudnn else ""
        have = sorted(f"{a}.{b}" for a, b in minors) if tested.cuda.major < 11 else sorted(map(str, present))
        evidence = {
            "tensorflow": f"{tf.version}: tested with CUDA {tested.cuda}{with_cudnn} (tensorflow.org, "
            f"{tested.version})",
            "CUDA present": _majors_text(present),
        }
        text, commands = _tf_fix(matrix, tf, (tested.cuda, tested.cudnn), present, packages, python)
        return Problem(
            f"TensorFlow {tf.version} was built and tested for CUDA {tested.cuda}{with_cudnn}, but this "
            f"environment's CUDA libraries are CUDA {', '.join(have)}: it cannot open them and runs on the CPU "
            '("Could not load dynamic library", "Cannot dlopen some GPU libraries")',
            evidence,
            Remediation(text, commands),
            status=Status.FAIL,
        )


def _tf_finds(need: Version, present: dict[int, str], minors: set[tuple[int, int]]) -> bool:
    """Whether TensorFlow finds the CUDA it was built for: its major from CUDA 11 on; before, the exact minor,
    which the runtime's soname carries (libcudart.so.10.1), where the minors present are known."""
    if need.major not in present:
        return False
    same_major = {m for m in minors if m[0] == need.major}
    return need.major >= 11 or not same_major or (need.major, need.minor) in same_major


def _tf_fix(
    matrix: CompatMatrix,
    tf: InstalledPackage,
    tested: tuple[Version, Version | None],
    present: dict[int, str],
    packages: dict[str, InstalledPackage],
    python_env: PythonEnv | None,
) -> tuple[str, tuple[str, ...]]:
    """CD432's fix: TensorFlow's own CUDA wheels where its [and-cuda] installs, else the toolkit it was tested
    with (``tested``: its CUDA and cuDNN) or a release tested with the CUDA present."""
    cuda, cudnn = tested
    python = python_env.version if python_env else None
    own = tf_with_cuda_wheels(matrix, tf.version, python)
    if own is not None:
        return (
            f"Install TensorFlow's own CUDA {cuda.major} wheels with its [and-cuda] extra"
            + (f" (TensorFlow {own.version}: {tf.version}'s extra cannot be resolved)." if own.version != tf.version
               else "."),
            (_tf_and_cuda(str(own.version)),),
        )  # fmt: skip
    want = f"{cuda}" if cuda.major < 11 else f"{cuda.major}.x"
    text = f"Install the CUDA {want} toolkit" + (f" and cuDNN {cudnn}" if cudnn else "")
    text += " it was tested with"
    target = _target_major(present, packages)
    newer = tf_for_cuda(matrix, target, python)
    if newer is None:
        return text + ".", ()
    return (
        text + f", or TensorFlow {newer.version}, tested with CUDA {target}, with its CUDA wheels ([and-cuda]).",
        (_tf_and_cuda(str(newer.version)),),
    )


class CD433(Check):
    """TensorFlow on a machine with an NVIDIA GPU has CUDA libraries to use it.

    What it checks: on a machine with an NVIDIA GPU or driver, a TensorFlow from 2.14 on (whose [and-cuda]
    extra pins NVIDIA's CUDA wheels, compat/ecosystem.toml) with none of those wheels installed and no CUDA
    of any major found (toolkit, runtime wheel, CUDA torch, a copy the loader finds).

    Why it matters: `pip install tensorflow` alone installs no CUDA; without a system CUDA TensorFlow logs
    "Cannot dlopen some GPU libraries … Skipping registering GPU devices" and runs on the CPU. From 2.14 the
    documented GPU install on Linux is pip install 'tensorflow[and-cuda]' (https://www.tensorflow.org/install/pip).

    How to fix: pip install 'tensorflow[and-cuda]==<the installed version>'.
    """

    name = "tensorflow-has-cuda"
    category = "python"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        toolkits: tuple[ToolkitInstall, ...] = (),
        cuda_wheels: CudaWheels | None = None,
        loader: LoaderView | None = None,
        host: HostInfo | None = None,
        gpu_evidence: GpuEvidence | None = None,
        driver: DriverInfo | None = None,
        python: PythonEnv | None = None,
        cudnn: tuple[LibraryCopy, ...] = (),
    ) -> Problem | None:
        tf = _tensorflow(packages, host)
        if gpu_evidence is None and (driver is None or driver.version is None):
            raise NotApplicable("no NVIDIA GPU or driver on this machine")
        present = cuda_majors_present(toolkits, cuda_wheels, packages, loader)
        if present:
            return None  # some CUDA is there: whether it is TensorFlow's major is CD432's
        if unprobed := _unprobed_cuda(cudnn):
            raise CannotJudge(unprobed)
        release = next((r for r in matrix.tensorflow_releases if r.version == Version(tf.version.public)), None)
        if release is None:
            raise CannotJudge(f"TensorFlow {tf.version} is not in compat/ecosystem.toml")
        own = tf_with_cuda_wheels(matrix, tf.version, python.version if python else None)
        if not release.and_cuda:
            raise CannotJudge(
                f"TensorFlow {tf.version} (before 2.14) uses a system CUDA; none found in a toolkit or wheel, "
                "and system libraries outside a toolkit are not probed"
            )
        missing = sorted(name for name in release.and_cuda if name not in packages)
        return Problem(
            f"TensorFlow {tf.version} is installed without its [and-cuda] extra and no CUDA libraries were found: "
            'it cannot register the GPU ("Cannot dlopen some GPU libraries") and runs on the CPU',
            {"tensorflow": str(tf.version), "not installed": ", ".join(missing[:6])},
            Remediation(
                "Install TensorFlow with its CUDA wheels (the [and-cuda] extra, tensorflow.org's GPU install)"
                + (
                    f"; {tf.version}'s extra cannot be resolved, {own.version}'s can."
                    if own and own != release
                    else "."
                ),
                (_tf_and_cuda(str(own.version)),) if own else (),
            ),
            status=Status.FAIL,
        )


class CD434(Check):
    """paddlepaddle-gpu's CUDA build fits the driver and the CUDA libraries present.

    What it checks: the CUDA (and cuDNN) the installed paddlepaddle-gpu was built with, from its pinned CUDA
    runtime wheel or, for a PyPI release, its wheel's paddle/version/__init__.py (compat/ecosystem.toml: 10.2
    up to 2.4.2, 11.2 for 2.5.0, 11.8 from 2.5.1), against the driver's floor for that CUDA and the CUDA
    toolkits and runtime wheels present (before CUDA 11 the runtime's soname carries the minor).

    Why it matters: Paddle opens libcudart and cuDNN by name at run time; with a driver too old or only
    another CUDA present, paddle.utils.run_check() fails or Paddle runs without the GPU.

    How to fix: install the paddlepaddle-gpu build for the CUDA present (the command names a PyPI release where
    one fits; Paddle's own index has the others, https://www.paddlepaddle.org.cn/en/install/quick), or the
    CUDA toolkit and cuDNN it was built with.
    """

    name = "paddle-cuda-build"
    category = "python"

    def check(
        self,
        packages: dict[str, InstalledPackage],
        matrix: CompatMatrix,
        toolkits: tuple[ToolkitInstall, ...] = (),
        cuda_wheels: CudaWheels | None = None,
        driver: DriverInfo | None = None,
        host: HostInfo | None = None,
        cudnn: tuple[LibraryCopy, ...] = (),
    ) -> Problem | None:
        from cudadoctor.rules.driver import driver_runs_cuda

        paddle = packages.get("paddlepaddle-gpu")
        if paddle is None:
            raise NotApplicable("paddlepaddle-gpu is not installed")
        if host is not None and host.os != "Linux":
            raise CannotJudge("the data covers Paddle's Linux wheels only")
        build = paddle_build(matrix, paddle)
        if build is None:
            raise CannotJudge(
                f"paddlepaddle-gpu {paddle.version}: its CUDA build is in neither its pins nor compat data "
                "(a build from Paddle's own index)"
            )
        cuda, built_cudnn, how = build
        shown = f"{paddle.version}: CUDA {cuda}" + (f", cuDNN {built_cudnn}" if built_cudnn else "")
        evidence = {"paddlepaddle-gpu": f"{shown} ({how})"}
        problems: list[str] = []
        if driver is not None and driver.version is not None and not paddle.cuda_build:  # else CD111 judges it
            verdict = driver_runs_cuda(matrix, cuda.major, driver.version, cuda_minor=cuda.minor)
            if verdict.is_problem:
                problems.append(f"driver {driver.version} is older than CUDA {cuda} needs ({verdict.detail})")
                evidence["driver"] = f"{driver.version}: needs >= {verdict.detail}"
        minors = cuda_minors_present(toolkits, cuda_wheels)
        commands: tuple[str, ...] = ()
        if minors and not paddle_runs_on(cuda, minors) and (unprobed := _unprobed_cuda(cudnn, cuda.major)):
            raise CannotJudge(unprobed)
        if minors and not paddle_runs_on(cuda, minors):
            have = ", ".join(f"{a}.{b}" for a, b in sorted(minors))
            problems.append(f"this environment's CUDA is {have}")
            evidence["CUDA present"] = have
            fit = paddle_for_cuda(matrix, minors)
            if fit is not None and fit.version != paddle.version:
                commands = (pip(Install((Pin.exact("paddlepaddle-gpu", fit.version),))),)
        if not problems:
            if not minors and paddle.cuda_build is None:
                raise CannotJudge(
                    f"no CUDA toolkit or runtime wheel found to hold Paddle's CUDA {cuda} (system libraries "
                    "outside a toolkit are not probed)"
                )
            return None
        return Problem(
            f"paddlepaddle-gpu {paddle.version} is built for CUDA {cuda}, but " + "; ".join(problems),
            evidence,
            Remediation(
                "Install the paddlepaddle-gpu build for the CUDA (and driver) you have, or the CUDA toolkit and "
                "cuDNN it was built with" + (" (the command names the PyPI release)." if commands else "."),
                commands,
            ),
            status=Status.FAIL,
        )
