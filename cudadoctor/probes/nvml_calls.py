"""The NVML and libcuda calls of the fast path, answered as plain data (dicts of JSON types).

They import nothing but the standard library and the NVML binding, so the helper process a live ``check``
starts (:mod:`cudadoctor.probes.nvml_child`) stays small: NVML's init alone maps ~18 MB (it loads libcuda and
allocates a 13.5 MB block; measured on an H200), which the doctor's own process then never holds.
:mod:`cudadoctor.probes.native` turns the answers into records.
"""

from __future__ import annotations

import ctypes
import os

TYPE_CHECKING = False  # the helper process imports this module: only ctypes (see cudadoctor.probes.nvml_child)
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, TypeAlias

    Plain: TypeAlias = dict[str, Any]

__all__ = [
    "BINDING_VAR",
    "initialise",
    "load_nvml_library",
    "nvml_binding",
    "query_libcuda",
    "query_nvml",
]

#: ``CUDADOCTOR_NVML=pynvml`` selects NVIDIA's nvidia-ml-py over cudadoctor's own binding (cudadoctor.probes.nvml)
#: and ``inprocess`` keeps the own binding; both query NVML in cudadoctor's own process (threads), not in a helper.
BINDING_VAR = "CUDADOCTOR_NVML"


def _text(value: object) -> str:
    # nvidia-ml-py 13 returns str (measured on a real H200); older pynvml releases returned bytes.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class _suppress:
    """``contextlib.suppress``, without importing contextlib and the collections it pulls in (the helper's memory)."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


def load_nvml_library() -> str | None:
    """Ask the dynamic loader for NVML by its fixed name; None when found, else why not."""
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        return str(exc)
    return None


def nvml_binding() -> Any:
    """The NVML binding to use: cudadoctor's own :mod:`cudadoctor.probes.nvml`, or NVIDIA's ``pynvml``.

    The own binding has the same names and return shapes for the calls cudadoctor makes and imports in
    2.4 ms against 13.2 ms for pynvml (medians of 5 on the H200); ``bench/compare_nvml.py`` found the
    records of both identical there, live readings aside (driver 580.159.04, 2026-12-01).
    ``CUDADOCTOR_NVML=pynvml`` selects nvidia-ml-py (``pip install nvidia-ml-py``), to compare or as a way
    out should the own binding misread a driver; ImportError when it is not installed.
    """
    if os.environ.get(BINDING_VAR) == "pynvml":
        import pynvml  # NVIDIA's binding, only on request

        return pynvml
    from cudadoctor.probes import nvml

    return nvml


def initialise() -> None:
    """Initialise NVML once for the helper's two threads (:mod:`cudadoctor.probes.nvml_child`), so their own
    reference-counted inits never race to do the work; a failure is left for their queries to report."""
    with _suppress(Exception):  # each query initialises again and says what failed
        nvml_binding().nvmlInit()


def query_nvml() -> Plain:
    """NVML's driver, CUDA and device answers (the fields of ``native.NvmlResult``), or why there are none."""
    # Importing the binding costs ~20 ms; a machine without the NVML library cannot use it, so ask
    # the loader first (pynvml loads the same name, so on a GPU machine this costs nothing extra).
    if load_nvml_library() is not None:
        return {"error": "NVML Shared Library Not Found (libnvidia-ml.so.1)"}
    try:
        pynvml = nvml_binding()
    except ImportError:
        return {"error": f"nvidia-ml-py is not installed ({BINDING_VAR}=pynvml asks for it)"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return {"error": _text(exc)}
    except Exception as exc:  # a broken binding must not take the doctor down
        return {"error": f"{type(exc).__name__}: {exc}"}
    try:
        driver = cuda = None
        with _suppress(pynvml.NVMLError):
            driver = _text(pynvml.nvmlSystemGetDriverVersion())
        with _suppress(pynvml.NVMLError):
            cuda = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        devices: list[Plain] = []
        errors: list[str] = []
        try:
            count = int(pynvml.nvmlDeviceGetCount())
        except pynvml.NVMLError as exc:
            count = 0
            errors.append(f"nvmlDeviceGetCount: {_text(exc)}")
        for index in range(count):
            try:
                devices.append(_nvml_device(pynvml, index))
            except pynvml.NVMLError as exc:
                errors.append(f"device {index}: {_text(exc)}")
        return {"driver_version": driver, "cuda_driver_version": cuda, "devices": devices, "device_errors": errors}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    # No nvmlShutdown: NVML's init is reference counted and only the first one per process does the
    # work, so the health probe's own nvmlInit (in parallel) reuses this one; a shutdown cost 3-9 ms
    # on an H200 (measured) and the process ends right after its probes. See nvmlInit_v2 in
    # https://docs.nvidia.com/deploy/nvml-api/group__nvmlInitializationAndCleanup.html


_BRANDS = {
    # nvmlBrandType_t values from nvml.h, as nvidia-container-toolkit names them.
    0: "Unknown", 1: "Quadro", 2: "Tesla", 3: "NVS", 4: "GRID", 5: "GeForce", 6: "TITAN",
    7: "NVIDIA vApps", 8: "NVIDIA VPC", 9: "NVIDIA VCS", 10: "NVIDIA VWS", 11: "NVIDIA Cloud Gaming",
    12: "Quadro RTX", 13: "NVIDIA RTX", 14: "NVIDIA",
}  # fmt: skip


def _nvml_device(pynvml: object, index: int) -> Plain:
    nv = pynvml
    handle = nv.nvmlDeviceGetHandleByIndex(index)  # type: ignore[attr-defined]
    name = _text(nv.nvmlDeviceGetName(handle))  # type: ignore[attr-defined]
    cc = memory = mig = bus = brand = None
    with _suppress(Exception):
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)  # type: ignore[attr-defined]
        cc = f"{major}.{minor}"
    with _suppress(Exception):
        memory = int(nv.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024)  # type: ignore[attr-defined]
    with _suppress(Exception):
        current, _pending = nv.nvmlDeviceGetMigMode(handle)  # type: ignore[attr-defined]
        mig = "Enabled" if current else "Disabled"
    with _suppress(Exception):
        bus = _text(nv.nvmlDeviceGetPciInfo(handle).busId)  # type: ignore[attr-defined]
    with _suppress(Exception):
        brand = _BRANDS.get(int(nv.nvmlDeviceGetBrand(handle)), "Unknown")  # type: ignore[attr-defined]
    migs = _mig_device_count(nv, handle) if mig == "Enabled" else None
    return {
        "index": index, "name": name, "compute_capability": cc, "memory_mib": memory, "mig_mode": mig,
        "pci_bus_id": bus, "brand": brand, "mig_devices": migs,
    }  # fmt: skip


def _mig_device_count(nv: object, handle: object) -> int | None:
    """How many MIG devices of a MIG-enabled GPU NVML shows this process, None when it cannot say.

    nvmlDeviceGetMaxMigDeviceCount gives the slots; nvmlDeviceGetMigDeviceHandleByIndex answers
    NVML_ERROR_NOT_FOUND for an empty slot (nvml.h, "MIG device management";
    https://docs.nvidia.com/deploy/nvml-api/group__nvmlMultiInstanceGPU.html). In a container NVML shows
    only the MIG devices whose capabilities the runtime mounted.
    """
    try:
        slots = int(nv.nvmlDeviceGetMaxMigDeviceCount(handle))  # type: ignore[attr-defined]
    except Exception:
        return None
    found = 0
    for slot in range(max(0, min(slots, 64))):
        with _suppress(Exception):
            nv.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)  # type: ignore[attr-defined]
            found += 1
    return found


def query_libcuda() -> Plain:
    """``cuDriverGetVersion`` of the libcuda the loader picks (the fields of ``native.LibcudaResult``)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"error": str(exc)}
    path = _mapped_path("libcuda.so")
    version = ctypes.c_int(0)
    try:
        rc = int(lib.cuDriverGetVersion(ctypes.byref(version)))
    except (AttributeError, OSError) as exc:
        return {"path": path, "error": f"cuDriverGetVersion unavailable: {exc}"}
    return {"path": path, "returncode": rc, "version": int(version.value)}


def _mapped_path(stem: str) -> str | None:
    """The file of a loaded library whose name starts with ``stem``, from /proc/self/maps."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
                if path.startswith("/") and path.rsplit("/", 1)[-1].startswith(stem):
                    return path
    except OSError:
        return None
    return None
