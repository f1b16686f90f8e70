"""The runtime probes of ``check --deep``: child processes that initialise CUDA and import the frameworks.

Nothing here imports a framework or loads libcuda in cudadoctor's own process. Each probe is a
child of the *target* interpreter, run as ``<python> -I -c <script> …`` through the context's
runner with a timeout (``-I``: the user's current directory, ``PYTHONPATH`` and user site cannot
shadow what is examined; the site directories cudadoctor examined are passed back explicitly):

* the driver-API child (:data:`DRIVER_SCRIPT`, standard library only) loads ``libcuda.so.1`` with
  ctypes and calls ``cuDriverGetVersion``, ``cuInit(0)``, ``cuDeviceGetCount`` and, per device,
  ``cuDeviceGetName`` and the compute-capability attributes (75/76, doctor-anchors §15.2);
* one child per installed framework (:data:`FRAMEWORK_SCRIPT`, argument: the framework) imports
  only that framework, runs one tiny GPU operation and reports the versions the framework itself
  reports at run time.

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
from cudadoctor.probes.packages import probe_packages, target_python
from cudadoctor.runner import CommandResult

__all__ = [
    "DEFAULT_TIMEOUT",
    "DRIVER_SCRIPT",
    "FRAMEWORKS",
    "FRAMEWORK_SCRIPT",
    "MARKER",
    "STAGE_MARKER",
    "decode_cudnn_version",
    "decode_nccl_version",
    "driver_argv",
    "framework_argv",
    "installed_frameworks",
    "loaded_libraries",
    "parse_driver_output",
    "parse_framework_output",
    "parse_marked_json",
    "parse_undefined_symbol",
    "probe_runtime",
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

# --- the child scripts (run by the target interpreter; standard library plus the one framework) -----

#: Shared by both scripts: emit the one result line, read the mapped libraries, mark stages.
_COMMON = (
    f"MARKER = {MARKER!r}\nSTAGE = {STAGE_MARKER!r}\n"
    + r"""
import json, os, sys
out = {}
def stage(name):
    sys.stderr.write(STAGE + name + "\n")
    sys.stderr.flush()
def mapped():
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.rstrip("\n").split(None, 5)
                if len(parts) == 6:
                    path = parts[5].replace(" (deleted)", "")
                    if path.startswith("/") and ".so" in path and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found
def emit():
    out["maps"] = mapped()
    sys.stdout.write("\n" + MARKER + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()
def one_line(exc):
    text = " ".join(str(exc).split())
    return (type(exc).__name__ + ": " + text)[:1000]
"""
)

#: The driver-API child: ctypes on ``libcuda.so.1`` and nothing else.
DRIVER_SCRIPT = (
    _COMMON
    + r"""
import ctypes
out["probe"] = "driver"
def error_text(lib, rc):
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(rc, ctypes.byref(name)) != 0:
            name.value = None
        if lib.cuGetErrorString(rc, ctypes.byref(text)) != 0:
            text.value = None
    except (AttributeError, OSError):
        return None, None
    return (name.value.decode("utf-8", "replace") if name.value else None,
            text.value.decode("utf-8", "replace") if text.value else None)
def main():
    try:
        nodes = sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    except OSError:
        nodes = []
    out["device_nodes"] = nodes
    stage("load")
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        out["load_error"] = str(exc)
        return
    stage("version")
    version = ctypes.c_int(0)
    out["version_rc"] = int(lib.cuDriverGetVersion(ctypes.byref(version)))
    out["version"] = int(version.value)
    stage("init")
    rc = int(lib.cuInit(0))
    out["init_rc"] = rc
    if rc != 0:
        out["init_error_name"], out["init_error_string"] = error_text(lib, rc)
        return
    stage("devices")
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return
    out["device_count"] = int(count.value)
    devices = []
    for index in range(count.value):
        device, major, minor = ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1)
        buf = ctypes.create_string_buffer(256)
        if lib.cuDeviceGet(ctypes.byref(device), index) != 0:
            continue
        lib.cuDeviceGetName(buf, 256, device)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)
        cc = "%d.%d" % (major.value, minor.value) if major.value >= 0 and minor.value >= 0 else None
        devices.append({"index": index, "name": buf.value.decode("utf-8", "replace"), "cc": cc})
    out["devices"] = devices
try:
    main()
except Exception as exc:
    out["error"] = one_line(exc)
emit()
"""
)

#: One framework child: ``-c FRAMEWORK_SCRIPT <framework> [<site dirs joined by os.pathsep>]``.
FRAMEWORK_SCRIPT = (
    _COMMON
    + r"""
import faulthandler, warnings
faulthandler.enable()
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX: do not take 75% of GPU memory
name = sys.argv[1]
extra = [p for p in (sys.argv[2].split(os.pathsep) if len(sys.argv) > 2 else []) if p and p not in sys.path]
if extra:
    at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
    sys.path[at:at] = extra
out.update(probe="framework", framework=name, imported=False, gpu_op=None, reported={})
import importlib
def load(module):
    # Frameworks are imported here, in this child process only, never in cudadoctor's own.
    return importlib.import_module(module)
def devices_torch(torch):
    found = []
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        found.append({"index": i, "name": torch.cuda.get_device_name(i), "cc": "%d.%d" % (major, minor)})
    return found
def versions_torch(torch):
    # one failing query (torch raises on a cuDNN major it was not built for) must not hide the others
    for key, query in (("cudnn", lambda: torch.backends.cudnn.version()),
                       ("cudnn_build", lambda: list(torch._C._cudnn.getCompileVersion())),
                       ("nccl", lambda: torch.cuda.nccl.version()),
                       ("arch_list", lambda: torch.cuda.get_arch_list() or torch._C._cuda_getArchFlags().split())):
        try:
            out[key] = query()
        except Exception as exc:
            out["reported"][key + "_error"] = one_line(exc)
def torch_op(torch):
    x = torch.ones(8, device="cuda")
    value = float((x * 2).sum())
    torch.cuda.synchronize()
    return value == 16.0
def run_torch():
    torch = load("torch")
    out["imported"] = True
    out["version"], out["cuda_runtime"] = torch.__version__, torch.version.cuda
    out["gpu_build"] = torch.version.cuda is not None
    if not out["gpu_build"]:
        return
    stage("versions")
    versions_torch(torch)
    stage("gpu")
    out["gpu_op"] = False
    out["gpu_op"] = torch_op(torch)
    out["devices"] = devices_torch(torch)
def run_jax():
    jax = load("jax")
    out["imported"] = True
    out["version"] = jax.__version__
    try:
        jaxlib = load("jaxlib")
        out["reported"]["jaxlib"] = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
    except Exception:
        pass
    stage("versions")
    try:
        cv = load("jax._src.lib.cuda_versions")
    except Exception:
        cv = None
    for key, fn in (("cuda_runtime", "cuda_runtime_get_version"), ("cuda_runtime_build", "cuda_runtime_build_version"),
                    ("cudnn", "cudnn_get_version"), ("cudnn_build", "cudnn_build_version")):
        try:
            out[key] = getattr(cv, fn)()
        except Exception:
            pass
    stage("gpu")
    out["gpu_op"] = False
    devs = jax.devices("gpu")
    out["gpu_build"] = True
    out["devices"] = [{"index": i, "name": d.device_kind, "cc": getattr(d, "compute_capability", None)}
                      for i, d in enumerate(devs)]
    jnp = load("jax.numpy")
    x = jax.device_put(jnp.ones(8), devs[0])
    out["gpu_op"] = float((x * 2).sum().block_until_ready()) == 16.0
def run_cupy():
    cupy = load("cupy")
    out["imported"] = True
    out["version"] = cupy.__version__
    out["gpu_build"] = True
    rt = cupy.cuda.runtime
    stage("versions")
    for key, fn in (("cuda_runtime", rt.runtimeGetVersion), ("cuda_driver", rt.driverGetVersion)):
        try:
            value = fn()
            if key == "cuda_runtime":
                out[key] = value
            else:
                out["reported"][key] = str(value)
        except Exception:
            pass
    try:
        nccl = load("cupy.cuda.nccl")
        out["nccl"], out["nccl_build"] = nccl.get_version(), nccl.get_build_version()
    except Exception:
        pass
    stage("gpu")
    out["gpu_op"] = False
    a = cupy.arange(8, dtype=cupy.float32)
    out["gpu_op"] = float((a * 2).sum()) == 56.0
    found = []
    for i in range(rt.getDeviceCount()):
        props = rt.getDeviceProperties(i)  # holds the UUID too: only name and capability are kept
        found.append({"index": i, "name": props["name"].decode("utf-8", "replace"),
                      "cc": "%d.%d" % (props["major"], props["minor"])})
    out["devices"] = found
def with_torch():
    torch = load("torch")
    out["reported"]["torch"] = torch.__version__
    out["gpu_build"] = torch.version.cuda is not None
    return torch
def run_vllm():
    torch = with_torch()
    load("vllm._C")
    out["imported"] = True
    out["version"] = getattr(sys.modules.get("vllm"), "__version__", None)
    stage("gpu")
    out["gpu_op"] = False
    if hasattr(torch.ops._C, "silu_and_mul"):
        x = torch.randn(4, 16, device="cuda", dtype=torch.float16)
        y = torch.empty(4, 8, device="cuda", dtype=torch.float16)
        torch.ops._C.silu_and_mul(y, x)
        torch.cuda.synchronize()
        out["reported"]["op"] = "torch.ops._C.silu_and_mul"
        out["gpu_op"] = bool(torch.isfinite(y).all())
    else:
        out["reported"]["op"] = "torch.ones (vllm._C has no silu_and_mul)"
        out["gpu_op"] = torch_op(torch)
    out["devices"] = devices_torch(torch)
def run_tensorrt():
    trt = load("tensorrt")
    out["imported"] = True
    out["version"] = trt.__version__
    out["gpu_build"] = True
    stage("gpu")
    out["gpu_op"] = False
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    out["gpu_op"] = builder is not None
    try:
        out["reported"]["fast_fp16"] = str(builder.platform_has_fast_fp16)
    except Exception:
        pass
def attention_inputs(torch):
    return torch.randn(1, 8, 2, 64, device="cuda", dtype=torch.float16)
def run_flash_attn():
    torch = with_torch()
    flash_attn = load("flash_attn")
    flash_attn_func = flash_attn.flash_attn_func
    out["imported"] = True
    out["version"] = flash_attn.__version__
    stage("gpu")
    out["gpu_op"] = False
    q = attention_inputs(torch)
    o = flash_attn_func(q, q, q)
    torch.cuda.synchronize()
    out["gpu_op"] = bool(torch.isfinite(o).all())
    out["devices"] = devices_torch(torch)
def run_xformers():
    torch = with_torch()
    xformers = load("xformers")
    load("xformers.ops")
    out["imported"] = True
    out["version"] = xformers.__version__
    out["reported"]["cpp_library"] = str(getattr(xformers, "_has_cpp_library", None))
    stage("gpu")
    out["gpu_op"] = False
    q = attention_inputs(torch)
    o = xformers.ops.memory_efficient_attention(q, q, q)
    torch.cuda.synchronize()
    out["gpu_op"] = bool(torch.isfinite(o).all())
    out["devices"] = devices_torch(torch)
RUN = {"torch": run_torch, "jax": run_jax, "cupy": run_cupy, "vllm": run_vllm, "tensorrt": run_tensorrt,
       "flash-attn": run_flash_attn, "xformers": run_xformers}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        stage("import")
        RUN[name]()
    except BaseException as exc:
        out["error_kind"] = "gpu" if out.get("imported") else "import"
        out["error"] = one_line(exc)
    seen = []
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)):
            continue
        text = " ".join(str(w.message).split())[:300]
        if text not in seen:
            seen.append(text)
    # the ones about CUDA first: they explain a failure, the rest is a framework's chatter
    seen.sort(key=lambda t: not any(k in t.lower() for k in ("cuda", "gpu", "driver", "cudnn", "nccl", "device")))
    out["warnings"] = seen[:5]
emit()
"""
)


#: One rank: ``-c NCCL_SCRIPT <rank> <world size> <port> <timeout s> [<site dirs>]``.
NCCL_SCRIPT = (
    _COMMON
    + r"""
import datetime, importlib
rank, world, port, limit = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
extra = [p for p in (sys.argv[5].split(os.pathsep) if len(sys.argv) > 5 else []) if p and p not in sys.path]
if extra:
    at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
    sys.path[at:at] = extra
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
out.update(probe="nccl", rank=rank, world=world, ok=False)
try:
    torch = importlib.import_module("torch")  # in this child process only
    dist = importlib.import_module("torch.distributed")
    torch.cuda.set_device(rank)
    stage("init")
    dist.init_process_group("nccl", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=limit))
    stage("all_reduce")
    x = torch.ones(1024, device="cuda:%d" % rank)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    out["ok"] = bool((x == world).all())
    out["nccl"] = ".".join(str(p) for p in torch.cuda.nccl.version())
    dist.destroy_process_group()
except BaseException as exc:
    out["error"] = one_line(exc)
emit()
"""
)


# --- argv -----------------------------------------------------------------------------------------


def driver_argv(python: str) -> list[str]:
    """The driver-API child's command line."""
    return [python, "-I", "-c", DRIVER_SCRIPT]


def framework_argv(python: str, framework: str, site_paths: tuple[str, ...] = ()) -> list[str]:
    """A framework child's command line: the framework, then the site directories to add back."""
    argv = [python, "-I", "-c", FRAMEWORK_SCRIPT, framework]
    if site_paths:
        argv.append(os.pathsep.join(site_paths))
    return argv


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


def _version(text: Any) -> Version | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
        return None


def _cuda_version(value: Any) -> Version | None:
    """``13000`` -> 13.0 (major * 1000 + minor * 10, doctor-anchors §15.1), ``"13.0"`` -> 13.0."""
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
    major * 1000 + minor * 100 + patch (8907 -> 8.9.7) (doctor-anchors §15.1).
    """
    return _decode_packed(value, wide_from=90000)


def decode_nccl_version(value: Any) -> Version | None:
    """NCCL's version: torch's ``(2, 28, 9)``, or ``ncclGetVersion``'s number.

    From NCCL 2.9 on the number is X * 10000 + Y * 100 + Z (22809 -> 2.28.9); before, X * 1000 +
    Y * 100 + Z (2708 -> 2.7.8) (``NCCL_VERSION`` in nccl.h, doctor-anchors §15.1).
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

    Parse, e.g. (S1 of doctor-anchors §12.2: an older cuda-compat libcuda first on the search path)::

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
    nodes = data.get("device_nodes")
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
        device_nodes=tuple(n for n in nodes if isinstance(n, str)) if isinstance(nodes, list) else (),
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

    Parse, e.g. (torch 2.11.0+cu130 on the real H200, doctor-anchors §15.1, maps shortened)::

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
    reported = data.get("reported") if isinstance(data.get("reported"), dict) else {}
    arch = data.get("arch_list")
    warnings = data.get("warnings")
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
        arch_list=tuple(a for a in arch if isinstance(a, str)) if isinstance(arch, list) else (),
        devices=_devices(data.get("devices")),
        libraries=_maps(data),
        reported={str(k): str(v) for k, v in reported.items() if v is not None},
        error_kind=(_str(data.get("error_kind")) or "import") if error else None,
        error=error,
        undefined_symbol=parse_undefined_symbol(error) if error else None,
        missing_library=missing.group(1) if missing else None,
        warnings=tuple(w for w in warnings if isinstance(w, str)) if isinstance(warnings, list) else (),
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
        kind = "timeout" if result.error.startswith("timed out") else "not-run"
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
    where = f"{python} -I -c <driver-API probe>"
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
    where = f"{python} -I -c <import {module} and run one GPU operation>"
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


def nccl_argv(python: str, rank: int, world: int, port: str, timeout: float, sites: str) -> list[str]:
    return [python, "-I", "-c", NCCL_SCRIPT, str(rank), str(world), port, str(timeout), sites]


def _probe_rank(
    ctx: ProbeContext, python: str, rank: int, world: int, port: str, timeout: float, sites: str
) -> tuple[CommandResult, float]:
    # The worker's own NCCL timeout is ``timeout``; the process gets a margin to report it.
    return _run(ctx, nccl_argv(python, rank, world, port, timeout, sites), timeout + 15)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    port = str(port or _free_port())
    sites = os.pathsep.join(env.site_paths)
    where = f"{env.executable} -I -c <NCCL all-reduce, rank r of {world}>"
    python = env.executable
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=world, thread_name_prefix="cudadoctor-nccl") as pool:
        runs = list(pool.map(lambda rank: _probe_rank(ctx, python, rank, world, port, timeout, sites), range(world)))
    results = [result for result, _seconds in runs]
    seconds = round(time.perf_counter() - start, 3)
    outputs = [parse_worker_output(r.stdout) if r.error is None else None for r in results]
    errors = []
    for rank, (result, parsed) in enumerate(zip(results, outputs, strict=True)):
        if parsed is None:
            errors.append(f"rank {rank}: {result.describe() if result.error or result.returncode else 'no result'}")
        elif parsed.get("error"):
            errors.append(f"rank {rank}: {parsed['error']}")
    nccl = None
    for parsed in outputs:
        if parsed and isinstance(parsed.get("nccl"), str):
            try:
                nccl = Version(parsed["nccl"])
            except ValueError:  # InvalidVersion
                nccl = None
            break
    ok = None if any(p is None for p in outputs) and not errors else all(bool(p and p.get("ok")) for p in outputs)
    return NcclSmoke(
        source=Source(SourceKind.RUNTIME, where),
        world_size=world,
        ok=False if errors else ok,
        nccl=nccl,
        error=errors[0][:500] if errors else None,
        seconds=seconds,
    )
