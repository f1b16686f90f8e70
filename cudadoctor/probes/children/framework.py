"""A framework child of ``check --deep``: import one framework and run one tiny GPU operation.

Run as ``<python> -I framework.py <framework> [<site directories joined by os.pathsep>]`` (see
``__init__.py``). It imports only that framework, through :func:`load` (importlib: the framework is
imported in this child process only, never in cudadoctor's), reports the versions the framework
itself reports at run time, and prints one result line behind :data:`MARKER` on stdout.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import json
import os
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

#: Prefix of the one result line on stdout (cudadoctor.probes.runtime.MARKER).
MARKER = "@@cudadoctor-runtime@@"
#: Prefix of the progress lines on stderr (cudadoctor.probes.runtime.STAGE_MARKER).
STAGE = "@@cudadoctor-stage@@"


# --- the result protocol (the same in every child) ------------------------------------------------


def stage(name: str) -> None:
    """Say on stderr which stage starts, so a child that crashes still says where."""
    sys.stderr.write(STAGE + name + "\n")
    sys.stderr.flush()


def mapped() -> list[str]:
    """The shared libraries this process has mapped (``/proc/self/maps``), in mapping order."""
    found: list[str] = []
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


def emit(out: dict[str, Any]) -> None:
    """Print the one result line, on a line of its own: a library may have written to stdout."""
    out["maps"] = mapped()
    sys.stdout.write("\n" + MARKER + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (type(exc).__name__ + ": " + text)[:1000]


def add_sites(joined: str) -> None:
    """Put the site directories cudadoctor examined back (``-I`` dropped them) before site-packages."""
    extra = [p for p in joined.split(os.pathsep) if p and p not in sys.path]
    if extra:
        at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
        sys.path[at:at] = extra


def load(module: str) -> ModuleType:
    """Import a framework module: here, in this child process only, never in cudadoctor's own."""
    return importlib.import_module(module)


# --- torch and the extensions that run inside a torch process -----------------------------------


def devices_torch(torch: Any) -> list[dict[str, Any]]:
    found = []
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        found.append({"index": i, "name": torch.cuda.get_device_name(i), "cc": f"{major}.{minor}"})
    return found


def versions_torch(torch: Any, out: dict[str, Any]) -> None:
    # one failing query (torch raises on a cuDNN major it was not built for) must not hide the others
    queries: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("cudnn", lambda: torch.backends.cudnn.version()),
        ("cudnn_build", lambda: list(torch._C._cudnn.getCompileVersion())),
        ("nccl", lambda: torch.cuda.nccl.version()),
        ("arch_list", lambda: torch.cuda.get_arch_list() or torch._C._cuda_getArchFlags().split()),
    )
    for key, query in queries:
        try:
            out[key] = query()
        except Exception as exc:
            out["reported"][key + "_error"] = one_line(exc)


def torch_op(torch: Any) -> bool:
    x = torch.ones(8, device="cuda")
    value = float((x * 2).sum())
    torch.cuda.synchronize()
    return value == 16.0


def run_torch(out: dict[str, Any]) -> None:
    torch = load("torch")
    out["imported"] = True
    out["version"], out["cuda_runtime"] = torch.__version__, torch.version.cuda
    out["gpu_build"] = torch.version.cuda is not None
    if not out["gpu_build"]:
        return
    stage("versions")
    versions_torch(torch, out)
    stage("gpu")
    out["gpu_op"] = False
    out["gpu_op"] = torch_op(torch)
    out["devices"] = devices_torch(torch)


def with_torch(out: dict[str, Any]) -> Any:
    """torch, loaded first for an extension compiled against its C++ API."""
    torch = load("torch")
    out["reported"]["torch"] = torch.__version__
    out["gpu_build"] = torch.version.cuda is not None
    return torch


def run_vllm(out: dict[str, Any]) -> None:
    torch = with_torch(out)
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


def attention_inputs(torch: Any) -> Any:
    return torch.randn(1, 8, 2, 64, device="cuda", dtype=torch.float16)


def run_flash_attn(out: dict[str, Any]) -> None:
    torch = with_torch(out)
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


def run_xformers(out: dict[str, Any]) -> None:
    torch = with_torch(out)
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


# --- JAX, CuPy, TensorRT --------------------------------------------------------------------------


def versions_jax(out: dict[str, Any]) -> None:
    try:
        cv: Any = load("jax._src.lib.cuda_versions")
    except Exception:
        cv = None
    for key, fn in (
        ("cuda_runtime", "cuda_runtime_get_version"),
        ("cuda_runtime_build", "cuda_runtime_build_version"),
        ("cudnn", "cudnn_get_version"),
        ("cudnn_build", "cudnn_build_version"),
    ):
        with contextlib.suppress(Exception):  # a version this JAX does not report stays unset
            out[key] = getattr(cv, fn)()


def run_jax(out: dict[str, Any]) -> None:
    jax = load("jax")
    out["imported"] = True
    out["version"] = jax.__version__
    with contextlib.suppress(Exception):
        jaxlib = load("jaxlib")
        out["reported"]["jaxlib"] = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
    stage("versions")
    versions_jax(out)
    stage("gpu")
    out["gpu_op"] = False
    devs = jax.devices("gpu")
    out["gpu_build"] = True
    out["devices"] = [
        {"index": i, "name": d.device_kind, "cc": getattr(d, "compute_capability", None)} for i, d in enumerate(devs)
    ]
    jnp = load("jax.numpy")
    x = jax.device_put(jnp.ones(8), devs[0])
    out["gpu_op"] = float((x * 2).sum().block_until_ready()) == 16.0


def versions_cupy(cupy: Any, out: dict[str, Any]) -> None:
    rt = cupy.cuda.runtime
    for key, fn in (("cuda_runtime", rt.runtimeGetVersion), ("cuda_driver", rt.driverGetVersion)):
        with contextlib.suppress(Exception):
            value = fn()
            if key == "cuda_runtime":
                out[key] = value
            else:
                out["reported"][key] = str(value)
    with contextlib.suppress(Exception):  # a CuPy built without NCCL
        nccl = load("cupy.cuda.nccl")
        out["nccl"], out["nccl_build"] = nccl.get_version(), nccl.get_build_version()


def run_cupy(out: dict[str, Any]) -> None:
    cupy = load("cupy")
    out["imported"] = True
    out["version"] = cupy.__version__
    out["gpu_build"] = True
    rt = cupy.cuda.runtime
    stage("versions")
    versions_cupy(cupy, out)
    stage("gpu")
    out["gpu_op"] = False
    a = cupy.arange(8, dtype=cupy.float32)
    out["gpu_op"] = float((a * 2).sum()) == 56.0
    found = []
    for i in range(rt.getDeviceCount()):
        props = rt.getDeviceProperties(i)  # holds the UUID too: only name and capability are kept
        name = props["name"].decode("utf-8", "replace")
        found.append({"index": i, "name": name, "cc": f"{props['major']}.{props['minor']}"})
    out["devices"] = found


def run_tensorrt(out: dict[str, Any]) -> None:
    trt = load("tensorrt")
    out["imported"] = True
    out["version"] = trt.__version__
    out["gpu_build"] = True
    stage("gpu")
    out["gpu_op"] = False
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    out["gpu_op"] = builder is not None
    with contextlib.suppress(Exception):
        out["reported"]["fast_fp16"] = str(builder.platform_has_fast_fp16)


#: What each framework runs (the keys are cudadoctor.probes.runtime.FRAMEWORKS').
RUN: dict[str, Callable[[dict[str, Any]], None]] = {
    "torch": run_torch,
    "jax": run_jax,
    "cupy": run_cupy,
    "vllm": run_vllm,
    "tensorrt": run_tensorrt,
    "flash-attn": run_flash_attn,
    "xformers": run_xformers,
}

_CUDA_WORDS = ("cuda", "gpu", "driver", "cudnn", "nccl", "device")
_CHATTER = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def kept_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The first few distinct warnings, the ones about CUDA first (they explain a failure; the rest
    is a framework's chatter); deprecations dropped."""
    seen: list[str] = []
    for w in caught:
        if issubclass(w.category, _CHATTER):
            continue
        text = " ".join(str(w.message).split())[:300]
        if text not in seen:
            seen.append(text)
    seen.sort(key=lambda t: not any(k in t.lower() for k in _CUDA_WORDS))
    return seen[:5]


def main(argv: list[str]) -> None:
    faulthandler.enable()
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX: do not take 75% of GPU memory
    name = argv[0]
    add_sites(argv[1] if len(argv) > 1 else "")
    out: dict[str, Any] = {"probe": "framework", "framework": name, "imported": False, "gpu_op": None}
    out["reported"] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            stage("import")
            RUN[name](out)
        except BaseException as exc:
            out["error_kind"] = "gpu" if out.get("imported") else "import"
            out["error"] = one_line(exc)
        out["warnings"] = kept_warnings(caught)
    emit(out)


if __name__ == "__main__":
    main(sys.argv[1:])
