"""The runtime probes of ``check --deep``: child processes that initialise CUDA and import the frameworks.

Nothing here imports a framework or loads libcuda in cudadoctor's own process. Each probe is a
child of the *target* interpreter, run as ``<python> -I <child program> …`` through the context's
runner with a timeout (``-I``: the user's current directory, ``PYTHONPATH`` and user site cannot
shadow what is examined; the site directories cudadoctor examined are passed back explicitly). The
child programs are the modules of :mod:`cudadoctor.probes.children`, run by file path (the target
interpreter need not have cudadoctor installed):

* the driver-API child (:data:`DRIVER_CHILD`, standard library only) loads ``libcuda.so.1`` with
  ctypes and calls ``cuDriverGetVersion``, ``cuInit(0)``, ``cuDeviceGetCount`` and, per device,
  ``cuDeviceGetName`` and the compute-capability attributes (75/76,
  https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html);
* one child per installed framework (:data:`FRAMEWORK_CHILD`, argument: the framework) imports
  only that framework, runs one tiny GPU operation and reports the versions the framework itself
  reports at run time;
* with ``--nccl``, one child per GPU (:data:`NCCL_CHILD`) joins an NCCL all-reduce.

Every child also reports the shared libraries it actually mapped (its ``/proc/self/maps``), and
prints exactly one JSON line behind :data:`MARKER`, so a framework's own output on stdout cannot
corrupt the result. Before each stage it writes :data:`STAGE_MARKER` lines to stderr and turns on
``faulthandler``, so a child that crashes still says where. A child that times out, crashes or
prints no result becomes a fact with ``error`` set, never an exception here.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from packaging.version import Version

from cudadoctor.facts.model import InstalledPackage, Source, SourceKind
from cudadoctor.facts.runtime import (
    DriverApiResult,
    FrameworkRuntime,
    LoadedLibrary,
    NcclSmoke,
    RuntimeDevice,
    RuntimeInfo,
)
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.interpreter import target_python
from cudadoctor.probes.packages import probe_packages
from cudadoctor.runner import CommandResult

__all__ = [
    "DEFAULT_TIMEOUT",
    "DRIVER_CHILD",
    "FRAMEWORKS",
    "FRAMEWORK_CHILD",
    "MARKER",
    "NCCL_CHILD",
    "STAGE_MARKER",
    "decode_cudnn_version",
    "decode_nccl_version",
    "driver_argv",
    "framework_argv",
    "installed_frameworks",
    "loaded_libraries",
    "nccl_argv",
    "parse_driver_output",
    "parse_framework_output",
    "parse_marked_json",
    "parse_undefined_symbol",
    "parse_worker_output",
    "probe_nccl_smoke",
    "probe_runtime",
    "visible_gpus",
]

_PROBE = "runtime"

#: Seconds each child may take (``check --deep --timeout``).
DEFAULT_TIMEOUT = 30.0

#: Children run side by side: importing a framework is mostly CPU and disk, and each child makes its
#: own CUDA context; four keeps the GPU memory held at once to a few contexts.
_MAX_PARALLEL = 4

#: Prefix of the one result line every child prints on stdout.
MARKER = "@@cudadoctor-runtime@@"
#: Prefix of the progress lines children write to stderr (``import``, ``gpu``, ``versions`` …).
STAGE_MARKER = "@@cudadoctor-stage@@"

#: Frameworks tried when installed, in report order, and the module each child imports (which
#: distributions provide them: :func:`installed_frameworks`).
FRAMEWORKS: dict[str, str] = {
    "torch": "torch",
    "jax": "jax",
    "cupy": "cupy",
    "vllm": "vllm._C",
    "tensorrt": "tensorrt",
    "flash-attn": "flash_attn",
    "xformers": "xformers",
}

# --- the child programs (cudadoctor/probes/children/, run by the target interpreter) --------------

_CHILDREN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "children")

#: The driver-API child: ctypes on ``libcuda.so.1`` and nothing else.
DRIVER_CHILD = os.path.join(_CHILDREN, "driver_api.py")
#: One framework child: ``FRAMEWORK_CHILD <framework> [<site dirs joined by os.pathsep>]``.
FRAMEWORK_CHILD = os.path.join(_CHILDREN, "framework.py")
#: One NCCL rank: ``NCCL_CHILD <rank> <world size> <port> <timeout s> [<site dirs>]``.
NCCL_CHILD = os.path.join(_CHILDREN, "nccl.py")


# --- argv -----------------------------------------------------------------------------------------


def driver_argv(python: str) -> list[str]:
    """The driver-API child's command line."""
    return [python, "-I", DRIVER_CHILD]


def framework_argv(python: str, framework: str, site_paths: tuple[str, ...] = ()) -> list[str]:
    """A framework child's command line: the framework, then the site directories to add back."""
    argv = [python, "-I", FRAMEWORK_CHILD, framework]
    if site_paths:
        argv.append(os.pathsep.join(site_paths))
    return argv


def nccl_argv(python: str, rank: int, world: int, port: str, timeout: float, sites: str) -> list[str]:
    """One NCCL rank's command line."""
    return [python, "-I", NCCL_CHILD, str(rank), str(world), port, str(timeout), sites]


# --- which frameworks -----------------------------------------------------------------------------

_TENSORRT_DIST = re.compile(r"tensorrt(-cu\d+)?(-bindings)?")
_JAX_CUDA = re.compile(r"jax-cuda\d+-(plugin|pjrt)")


def installed_frameworks(packages: dict[str, InstalledPackage]) -> list[tuple[str, str]]:
    """(framework, distribution) for each framework in :data:`FRAMEWORKS` that is installed.

    JAX is tried only with a CUDA plugin (``jax-cuda13-plugin`` …) or a CUDA jaxlib (``+cuda12``):
    a CPU-only JAX is not expected to reach a GPU.

    :param packages: the distributions of interest, by canonical name (``probe_packages``).
    :return: pairs in :data:`FRAMEWORKS` order, e.g. ``[("torch", "torch"), ("cupy", "cupy-cuda13x")]``.
    """
    names = sorted(packages)
    found: list[tuple[str, str]] = []
    for framework in FRAMEWORKS:
        dist: str | None = None
        if framework in ("torch", "vllm", "flash-attn", "xformers"):
            dist = framework if framework in packages else None
        elif framework == "jax":
            jaxlib = packages.get("jaxlib")
            cuda_jaxlib = jaxlib is not None and (jaxlib.cuda_variant or "").startswith("cu")
            if "jax" in packages and (cuda_jaxlib or any(_JAX_CUDA.fullmatch(n) for n in names)):
                dist = "jax"
        elif framework == "cupy":
            dist = next((n for n in names if n == "cupy" or n.startswith("cupy-cuda")), None)
        elif framework == "tensorrt":
            dist = next((n for n in names if _TENSORRT_DIST.fullmatch(n)), None)
        if dist is not None:
            found.append((framework, dist))
    return found


# --- parsers --------------------------------------------------------------------------------------


def parse_marked_json(stdout: str) -> dict[str, Any] | None:
    """The object on the last :data:`MARKER` line of a child's stdout; None when there is none.

    Text before the marker on the same line, and anything after the JSON object, are ignored (a
    framework's C code may write to the same stream). Parse, e.g.::

        Some framework banner
        @@cudadoctor-runtime@@{"probe": "driver", "version_rc": 0, "version": 13000, "init_rc": 803}
    """
    at = stdout.rfind(MARKER)
    if at < 0:
        return None
    try:
        value, _end = json.JSONDecoder().raw_decode(stdout, at + len(MARKER))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _strings(value: Any) -> tuple[str, ...]:
    """The strings of a JSON list; () for anything else."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _version(text: Any) -> Version | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
        return None


def _cuda_version(value: Any) -> Version | None:
    """``13000`` -> 13.0, ``"13.0"`` -> 13.0.

    The number is major * 1000 + minor * 10 (``cuDriverGetVersion``:
    https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html).
    """
    if (number := _int(value)) is not None:
        return Version(f"{number // 1000}.{(number % 1000) // 10}") if number > 0 else None
    return _version(value)


def _dotted(value: Any) -> Version | None:
    """``[9, 19, 0]`` -> 9.19.0."""
    if isinstance(value, (list, tuple)) and value and all(_int(v) is not None and v >= 0 for v in value):
        return Version(".".join(str(v) for v in value))
    return None


def _decode_packed(value: Any, wide_from: int) -> Version | None:
    """A version packed as one number: X * 10000 + Y * 100 + Z from ``wide_from`` on, else X * 1000 + Y * 100 + Z.

    A ``[X, Y, Z]`` list or a version string is taken as it is.
    """
    if (dotted := _dotted(value)) is not None:
        return dotted
    number = _int(value)
    if number is None or number <= 0:
        return _version(value)
    if number >= wide_from:
        return Version(f"{number // 10000}.{(number % 10000) // 100}.{number % 100}")
    return Version(f"{number // 1000}.{(number % 1000) // 100}.{number % 100}")


def decode_cudnn_version(value: Any) -> Version | None:
    """cuDNN's version number as ``cudnnGetVersion()`` returns it, or a ``[major, minor, patch]`` list.

    cuDNN 9 encodes major * 10000 + minor * 100 + patch (91900 -> 9.19.0); cuDNN 8 and older
    major * 1000 + minor * 100 + patch (8907 -> 8.9.7): https://github.com/conda-forge/jax-feedstock/issues/149.
    """
    return _decode_packed(value, wide_from=90000)


def decode_nccl_version(value: Any) -> Version | None:
    """NCCL's version: torch's ``(2, 28, 9)``, or ``ncclGetVersion``'s number.

    From NCCL 2.9 on the number is X * 10000 + Y * 100 + Z (22809 -> 2.28.9); before, X * 1000 +
    Y * 100 + Z (2708 -> 2.7.8) (``NCCL_VERSION`` in https://github.com/NVIDIA/nccl/blob/master/src/nccl.h.in).
    """
    return _decode_packed(value, wide_from=10000)


#: Libraries kept from a child's maps: the driver, the CUDA runtime and math libraries, cuDNN (and
#: its cuDNN 9 sub-libraries), NCCL and TensorRT. Group 1 is the short name, group 2 the suffix.
_LIBRARY = re.compile(
    r"lib(cuda|cudart|cudnn(?:_[a-z_]+)?|nccl|nvJitLink|cublas|cublasLt|nvrtc|cufft|cusparse|cusolver|curand"
    r"|nvinfer(?:_plugin)?)\.so(?:\.([0-9][0-9.]*))?"
)


def _origin(path: str) -> str:
    parts = path.split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        return "pip"
    if "compat" in parts:
        return "compat"
    if "stubs" in parts:
        return "stub"
    if any(p == "conda" or p.endswith(("conda3", "conda", "forge")) or p == "envs" for p in parts):
        return "conda"
    if re.search(r"^/usr/local/cuda(-[\d.]+)?/", path) or "/targets/" in path:
        return "toolkit"
    return "system"


def loaded_libraries(paths: list[str] | tuple[str, ...]) -> tuple[LoadedLibrary, ...]:
    """The CUDA libraries among the files a child had mapped, in the order they were mapped.

    :param paths: mapped file paths, as the child read them from ``/proc/self/maps``, e.g.
        ``/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9``.
    :return: one :class:`LoadedLibrary` per interesting file, each file once.
    """
    found: list[LoadedLibrary] = []
    seen: set[str] = set()
    for path in paths:
        if not isinstance(path, str) or not path.startswith("/") or path in seen:
            continue
        match = _LIBRARY.fullmatch(posixpath.basename(path))
        if match is None:
            continue
        seen.add(path)
        found.append(LoadedLibrary(match.group(1), path, (match.group(2) or "").rstrip("."), _origin(path)))
    return tuple(found)


def _devices(value: Any) -> tuple[RuntimeDevice, ...]:
    devices: list[RuntimeDevice] = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict) or _int(item.get("index")) is None or _str(item.get("name")) is None:
            continue
        cc = item.get("cc")
        devices.append(RuntimeDevice(item["index"], item["name"], str(cc) if isinstance(cc, (str, int)) else None))
    return tuple(devices)


def _maps(data: dict[str, Any]) -> tuple[LoadedLibrary, ...]:
    maps = data.get("maps")
    return loaded_libraries(maps) if isinstance(maps, list) else ()


def parse_driver_output(stdout: str, where: str = "driver-API probe") -> DriverApiResult | None:
    """The driver-API child's result; None when its stdout holds no result line.

    Parse, e.g. (a real H200 with an older cuda-compat libcuda first on the search path,
    tests/fixtures/runtime/driver-s1-compat-first.txt)::

        @@cudadoctor-runtime@@{"probe": "driver", "device_nodes": ["nvidia-uvm", "nvidia0", "nvidiactl"],
        "version_rc": 0, "version": 13000, "init_rc": 803, "init_error_name": "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        "init_error_string": "system has unsupported display driver / cuda driver combination",
        "maps": ["/usr/local/cuda-13.0/compat/libcuda.so.580.95.05", …]}
    """
    data = parse_marked_json(stdout)
    if data is None or data.get("probe") != "driver":
        return None
    libraries = _maps(data)
    libcuda = next((lib.path for lib in libraries if lib.name == "cuda"), None)
    version_rc = _int(data.get("version_rc"))
    error = _str(data.get("error"))
    return DriverApiResult(
        source=Source(SourceKind.RUNTIME, where),
        libcuda_path=libcuda,
        load_error=_str(data.get("load_error")),
        version_rc=version_rc,
        cuda_api=_cuda_version(data.get("version")) if version_rc == 0 else None,
        init_rc=_int(data.get("init_rc")),
        init_error_name=_str(data.get("init_error_name")),
        init_error_string=_str(data.get("init_error_string")),
        device_count=_int(data.get("device_count")),
        devices=_devices(data.get("devices")),
        device_nodes=_strings(data.get("device_nodes")),
        libraries=libraries,
        error=f"raised {error}" if error else None,
        error_kind="crash" if error else None,
    )


_UNDEFINED = re.compile(r"undefined symbol: ([^\s,;'\"]+)")
_MISSING = re.compile(r"([^\s:'\"]+\.so[0-9.]*): cannot open shared object file")


def parse_undefined_symbol(error: str) -> str | None:
    """The symbol of an ``undefined symbol`` import error.

    Parse, e.g.::

        ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi
    """
    match = _UNDEFINED.search(error)
    return match.group(1) if match else None


def parse_framework_output(
    stdout: str, framework: str, distribution: str, where: str | None = None
) -> FrameworkRuntime | None:
    """A framework child's result; None when its stdout holds no result line for ``framework``.

    Parse, e.g. (torch 2.11.0+cu130 on a real H200, tests/fixtures/runtime/torch-healthy-h200.txt, maps
    shortened)::

        @@cudadoctor-runtime@@{"probe": "framework", "framework": "torch", "imported": true, "gpu_op": true,
        "version": "2.11.0+cu130", "cuda_runtime": "13.0", "gpu_build": true, "cudnn": 91900,
        "nccl": [2, 28, 9], "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
        "devices": [{"index": 0, "name": "NVIDIA H200", "cc": "9.0"}], "reported": {}, "warnings": [],
        "maps": ["/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13", …]}
    """
    data = parse_marked_json(stdout)
    if data is None or data.get("probe") != "framework" or data.get("framework") != framework:
        return None
    error = _str(data.get("error"))
    reported = data.get("reported")
    gpu_op = data.get("gpu_op")
    gpu_build = data.get("gpu_build")
    missing = _MISSING.search(error) if error else None
    return FrameworkRuntime(
        framework=framework,
        module=FRAMEWORKS.get(framework, framework),
        distribution=distribution,
        source=Source(SourceKind.RUNTIME, where or f"{FRAMEWORKS.get(framework, framework)} probe"),
        imported=data.get("imported") is True,
        gpu_op=gpu_op if isinstance(gpu_op, bool) else None,
        gpu_build=gpu_build if isinstance(gpu_build, bool) else None,
        version=_version(data.get("version")),
        cuda_runtime=_cuda_version(data.get("cuda_runtime")),
        cuda_runtime_build=_cuda_version(data.get("cuda_runtime_build")),
        cudnn=decode_cudnn_version(data.get("cudnn")),
        cudnn_build=decode_cudnn_version(data.get("cudnn_build")),
        nccl=decode_nccl_version(data.get("nccl")),
        nccl_build=decode_nccl_version(data.get("nccl_build")),
        arch_list=_strings(data.get("arch_list")),
        devices=_devices(data.get("devices")),
        libraries=_maps(data),
        reported={str(k): str(v) for k, v in reported.items() if v is not None} if isinstance(reported, dict) else {},
        error_kind=(_str(data.get("error_kind")) or "import") if error else None,
        error=error,
        undefined_symbol=parse_undefined_symbol(error) if error else None,
        missing_library=missing.group(1) if missing else None,
        warnings=_strings(data.get("warnings")),
    )


# --- running the children -------------------------------------------------------------------------


def _last_stage(stderr: str) -> str | None:
    at = stderr.rfind(STAGE_MARKER)
    if at < 0:
        return None
    return stderr[at + len(STAGE_MARKER) :].split("\n", 1)[0].strip() or None


def _tail(stderr: str, lines: int = 15, chars: int = 2000) -> str | None:
    kept = [line for line in stderr.splitlines() if STAGE_MARKER not in line and line.strip()]
    text = "\n".join(kept[-lines:])[-chars:]
    return text or None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _failure(result: CommandResult) -> tuple[str, str]:
    """(kind, one line) for a child that printed no result."""
    stage = _last_stage(result.stderr)
    during = f" during {stage}" if stage else ""
    if result.error is not None:
        kind = "timeout" if result.timed_out else "not-run"
        return kind, f"{result.error}{during}"
    if result.returncode is not None and result.returncode < 0:
        return "crash", f"crashed with {_signal_name(-result.returncode)}{during}"
    if result.returncode:
        return "crash", f"exited with status {result.returncode}{during} and printed no result"
    return "no-output", f"printed no result{during}"


def _run(ctx: ProbeContext, argv: list[str], timeout: float) -> tuple[CommandResult, float]:
    start = time.perf_counter()
    result = ctx.runner.run(argv, timeout=timeout)
    return result, round(time.perf_counter() - start, 3)


def _probe_driver(ctx: ProbeContext, python: str, timeout: float) -> DriverApiResult:
    where = f"{python} -I <driver-API probe>"
    result, seconds = _run(ctx, driver_argv(python), timeout)
    parsed = parse_driver_output(result.stdout, where) if result.error is None else None
    if parsed is None:
        kind, message = _failure(result)
        return DriverApiResult(Source(SourceKind.RUNTIME, where), error=message, error_kind=kind, seconds=seconds)
    return replace(parsed, seconds=seconds)


def _probe_framework(
    ctx: ProbeContext, python: str, framework: str, distribution: str, sites: tuple[str, ...], timeout: float
) -> FrameworkRuntime:
    module = FRAMEWORKS[framework]
    where = f"{python} -I <import {module} and run one GPU operation>"
    result, seconds = _run(ctx, framework_argv(python, framework, sites), timeout)
    parsed = parse_framework_output(result.stdout, framework, distribution, where) if result.error is None else None
    if parsed is None:
        kind, message = _failure(result)
        return FrameworkRuntime(
            framework=framework,
            module=module,
            distribution=distribution,
            source=Source(SourceKind.RUNTIME, where),
            error_kind=kind,
            error=message,
            stderr_tail=_tail(result.stderr),
            seconds=seconds,
        )
    failed = parsed.error is not None or parsed.gpu_op is False
    return replace(parsed, stderr_tail=_tail(result.stderr) if failed else None, seconds=seconds)


def probe_runtime(ctx: ProbeContext, *, timeout: float = DEFAULT_TIMEOUT) -> RuntimeInfo | None:
    """Run the driver-API child and one child per installed framework (``check --deep``).

    Only on the live machine: nothing from an image root is ever run. The children run side by side,
    each with its own ``timeout``; one that hangs, crashes or prints nothing becomes a fact whose
    ``error`` says so.

    :param ctx: the probe context (its runner runs the children).
    :param timeout: seconds each child may take.
    :return: the runtime facts, or None when no child could be run (recorded as a probe error).
    """
    if not ctx.live:
        ctx.fail(_PROBE, "runtime probes run only on the machine itself, not on an image root")
        return None
    env = target_python(ctx)
    if not env.executable:
        ctx.fail(_PROBE, "no Python interpreter to run the runtime probes with")
        return None
    python = env.executable
    frameworks = installed_frameworks(probe_packages(ctx))
    sites = tuple(env.site_paths)
    with ThreadPoolExecutor(max_workers=_MAX_PARALLEL, thread_name_prefix="cudadoctor-runtime") as pool:
        driver = pool.submit(_probe_driver, ctx, python, timeout)
        futures = [
            pool.submit(_probe_framework, ctx, python, framework, dist, sites, timeout)
            for framework, dist in frameworks
        ]
        return RuntimeInfo(
            python=python,
            timeout=timeout,
            driver=driver.result(),
            frameworks=tuple(f.result() for f in futures),
        )


# --- the NCCL all-reduce (check --deep --nccl) ----------------------------------------------------


def parse_worker_output(stdout: str) -> dict[str, object] | None:
    """One worker's result (rank, ok, nccl, error), or None when it printed no marked line."""
    parsed = parse_marked_json(stdout)
    if parsed is None or parsed.get("probe") != "nccl":
        return None
    return parsed


def visible_gpus(runtime: RuntimeInfo) -> int:
    """The GPUs CUDA lets a process use (after CUDA_VISIBLE_DEVICES), from the driver-API child.

    Not NVML's count: with CUDA_VISIBLE_DEVICES=0 on a two-GPU machine NVML still lists two, and a
    second rank would wait for a GPU it cannot have until the timeout (seen on a real 2x H200).
    """
    driver = runtime.driver
    return driver.device_count if driver is not None and driver.device_count else 0


def _probe_rank(
    ctx: ProbeContext, python: str, rank: int, world: int, port: str, timeout: float, sites: str
) -> tuple[CommandResult, float]:
    # The worker's own NCCL timeout is ``timeout``; the process gets a margin to report it.
    return _run(ctx, nccl_argv(python, rank, world, port, timeout, sites), timeout + 15)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rank_errors(results: list[CommandResult], outputs: list[dict[str, object] | None]) -> list[str]:
    """One line per rank that failed or printed no result, in rank order."""
    errors = []
    for rank, (result, parsed) in enumerate(zip(results, outputs, strict=True)):
        if parsed is None:
            errors.append(f"rank {rank}: {result.describe() if result.error or result.returncode else 'no result'}")
        elif parsed.get("error"):
            errors.append(f"rank {rank}: {parsed['error']}")
    return errors


def _worker_nccl(outputs: list[dict[str, object] | None]) -> Version | None:
    """The NCCL version the first rank that says one reported."""
    for parsed in outputs:
        if parsed and isinstance(parsed.get("nccl"), str):
            return _version(parsed["nccl"])
    return None


def probe_nccl_smoke(
    ctx: ProbeContext, gpus: int, *, timeout: float = 60.0, port: int | None = None
) -> NcclSmoke | None:
    """All-reduce across ``min(gpus, 8)`` ranks; None (with a recorded reason) when it cannot run."""
    if not ctx.live:
        ctx.fail("runtime", "the NCCL test runs only on the machine itself")
        return None
    if gpus < 2:
        ctx.fail("runtime", f"the NCCL test needs two GPUs; {gpus} found")
        return None
    env = target_python(ctx)
    world = min(gpus, 8)
    master = str(port or _free_port())
    sites = os.pathsep.join(env.site_paths)
    python = env.executable
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=world, thread_name_prefix="cudadoctor-nccl") as pool:
        runs = list(pool.map(lambda rank: _probe_rank(ctx, python, rank, world, master, timeout, sites), range(world)))
    results = [result for result, _seconds in runs]
    seconds = round(time.perf_counter() - start, 3)
    outputs = [parse_worker_output(r.stdout) if r.error is None else None for r in results]
    errors = _rank_errors(results, outputs)
    ok = None if any(p is None for p in outputs) and not errors else all(bool(p and p.get("ok")) for p in outputs)
    return NcclSmoke(
        source=Source(SourceKind.RUNTIME, f"{python} -I <NCCL all-reduce, rank r of {world}>"),
        world_size=world,
        ok=False if errors else ok,
        nccl=_worker_nccl(outputs),
        error=errors[0][:500] if errors else None,
        seconds=seconds,
    )
