"""The two library calls the fast path makes: NVML and ``cuDriverGetVersion``.

Neither creates a CUDA context: NVML is the management library ``nvidia-smi`` uses, and
``cuDriverGetVersion`` answers without ``cuInit`` (about 1.6 ms, measured on a real H200). Both
run in a daemon thread with a timeout, so a wedged driver cannot hang cudadoctor: the call is
abandoned and recorded as timed out. Probes see only the :class:`Native` protocol; tests inject
a fake, and ``--root`` / ``--from`` use :class:`NullNative`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Callable
from dataclasses import field
from typing import Any, Protocol, TypeVar

from cudadoctor.record import record

__all__ = [
    "LibcudaResult",
    "Native",
    "NullNative",
    "NvmlDevice",
    "NvmlResult",
    "RealNative",
    "call_with_timeout",
    "decode_cuda_version",
    "load_nvml_library",
    "nvml_binding",
    "open_nvml_library",
    "start_early",
    "take_early",
]

#: Seconds allowed for NVML init + queries, and for loading libcuda.
NATIVE_TIMEOUT = 10.0
#: ``CUDADOCTOR_NVML=pynvml`` selects NVIDIA's nvidia-ml-py over cudadoctor's own binding (cudadoctor.probes.nvml).
BINDING_VAR = "CUDADOCTOR_NVML"

T = TypeVar("T")


def decode_cuda_version(value: int) -> str | None:
    """``13000`` -> ``"13.0"``, ``12080`` -> ``"12.8"`` (cuDriverGetVersion / NVML encoding).

    The encoding is major * 1000 + minor * 10
    (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html).
    Returns None for 0 or negative values (a stub library answers 0).
    """
    if value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


@record
class NvmlDevice:
    """One device as NVML reports it. The UUID is never read."""

    index: int
    name: str
    compute_capability: str | None = None
    memory_mib: int | None = None
    mig_mode: str | None = None
    pci_bus_id: str | None = None
    brand: str | None = None
    #: MIG devices (GPU instance + compute instance) that exist on this GPU and this process may use;
    #: None when MIG is off or NVML could not say
    mig_devices: int | None = None


@record
class NvmlResult:
    """NVML's answers, or why there are none."""

    driver_version: str | None = None
    cuda_driver_version: int | None = None  #: nvmlSystemGetCudaDriverVersion_v2, e.g. 13000
    devices: tuple[NvmlDevice, ...] = ()
    error: str | None = None  #: e.g. "NVML Shared Library Not Found", "Driver/library version mismatch"
    device_errors: tuple[str, ...] = field(default=())


@record
class LibcudaResult:
    """``cuDriverGetVersion`` of the libcuda the dynamic loader picks for ``libcuda.so.1``."""

    path: str | None = None  #: the file the loader mapped
    returncode: int | None = None  #: CUresult; 34 = CUDA_ERROR_STUB_LIBRARY
    version: int | None = None  #: e.g. 13000
    error: str | None = None  #: the library could not be loaded or the call timed out


class Native(Protocol):
    def nvml(self) -> NvmlResult: ...

    def libcuda_version(self) -> LibcudaResult: ...


class NullNative:
    """Calls nothing; every answer says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def nvml(self) -> NvmlResult:
        return NvmlResult(error=self.reason)

    def libcuda_version(self) -> LibcudaResult:
        return LibcudaResult(error=self.reason)


def call_with_timeout(func: Callable[[], T], timeout: float, on_timeout: T) -> T:
    """Run ``func`` in a daemon thread; give up after ``timeout`` seconds and return ``on_timeout``.

    ctypes releases the GIL during foreign calls, so a call stuck in the driver does not stop
    this thread from returning; the abandoned thread dies with the process.
    """
    box: list[T] = []

    def target() -> None:
        box.append(func())

    thread = threading.Thread(target=target, name="cudadoctor-native", daemon=True)
    thread.start()
    thread.join(timeout)
    return box[0] if box else on_timeout


class _Early:
    """A native query started before the probes run, in a daemon thread of its own."""

    def __init__(self, func: Callable[[], object]) -> None:
        self._box: list[object] = []
        self._thread = threading.Thread(target=lambda: self._box.append(func()), name="cudadoctor-early", daemon=True)
        self._thread.start()

    def result(self, timeout: float, on_timeout: T) -> T:
        self._thread.join(timeout)
        return self._box[0] if self._box else on_timeout  # type: ignore[return-value]


_EARLY: dict[str, _Early] = {}
_EARLY_LOCK = threading.Lock()


def start_early(*, health: bool) -> None:
    """Start the NVML and libcuda queries (and NVML's health answers) now, for this machine's probes.

    The queries mostly wait in C code with the GIL released, so started before the checks are imported
    they overlap that import instead of following it (``cudadoctor check`` on an H200: the NVML calls
    take ~50 ms). Only for a live run: a probe that finds no early query asks itself, as before.
    """
    from cudadoctor.probes.nvml_health import query_health

    with _EARLY_LOCK:
        _EARLY.setdefault("nvml", _Early(_query_nvml))
        _EARLY.setdefault("libcuda", _Early(_query_libcuda))
        if health:
            _EARLY.setdefault("health", _Early(query_health))


def take_early(name: str, timeout: float, on_timeout: T) -> T | None:
    """The result of the early query ``name`` (once; None when none was started)."""
    with _EARLY_LOCK:
        early = _EARLY.pop(name, None)
    return early.result(timeout, on_timeout) if early is not None else None


class RealNative:
    """NVML through :func:`nvml_binding` (the own binding unless ``CUDADOCTOR_NVML=pynvml``); libcuda via ctypes."""

    def __init__(self, timeout: float = NATIVE_TIMEOUT) -> None:
        self.timeout = timeout
        self._nvml: NvmlResult | None = None
        self._libcuda: LibcudaResult | None = None
        self._lock = threading.Lock()

    def nvml(self) -> NvmlResult:
        with self._lock:
            if self._nvml is None:
                timed_out = NvmlResult(error=f"NVML timed out after {self.timeout:g} s")
                early = take_early("nvml", self.timeout, timed_out)
                self._nvml = early or call_with_timeout(_query_nvml, self.timeout, timed_out)
            return self._nvml

    def libcuda_version(self) -> LibcudaResult:
        with self._lock:
            if self._libcuda is None:
                timed_out = LibcudaResult(error=f"loading libcuda timed out after {self.timeout:g} s")
                early = take_early("libcuda", self.timeout, timed_out)
                self._libcuda = early or call_with_timeout(_query_libcuda, self.timeout, timed_out)
            return self._libcuda


def _text(value: object) -> str:
    # nvidia-ml-py 13 returns str (measured on a real H200); older pynvml releases returned bytes.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def load_nvml_library() -> str | None:
    """Ask the dynamic loader for NVML by its fixed name; None when found, else why not."""
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        return str(exc)
    return None


def open_nvml_library() -> ctypes.CDLL:
    """NVML by its fixed name, the library cudadoctor's own binding calls (raises OSError when absent)."""
    return ctypes.CDLL("libnvidia-ml.so.1")


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


def _query_nvml() -> NvmlResult:
    # Importing the binding costs ~20 ms; a machine without the NVML library cannot use it, so ask
    # the loader first (pynvml loads the same name, so on a GPU machine this costs nothing extra).
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return NvmlResult(error="NVML Shared Library Not Found (libnvidia-ml.so.1)")
    try:
        pynvml = nvml_binding()
    except ImportError:
        return NvmlResult(error=f"nvidia-ml-py is not installed ({BINDING_VAR}=pynvml asks for it)")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return NvmlResult(error=_text(exc))
    except Exception as exc:  # a broken binding must not take the doctor down
        return NvmlResult(error=f"{type(exc).__name__}: {exc}")
    try:
        driver = cuda = None
        with contextlib.suppress(pynvml.NVMLError):
            driver = _text(pynvml.nvmlSystemGetDriverVersion())
        with contextlib.suppress(pynvml.NVMLError):
            cuda = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        devices: list[NvmlDevice] = []
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
        return NvmlResult(driver, cuda, tuple(devices), None, tuple(errors))
    except Exception as exc:
        return NvmlResult(error=f"{type(exc).__name__}: {exc}")
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


def _nvml_device(pynvml: object, index: int) -> NvmlDevice:
    nv = pynvml
    handle = nv.nvmlDeviceGetHandleByIndex(index)  # type: ignore[attr-defined]
    name = _text(nv.nvmlDeviceGetName(handle))  # type: ignore[attr-defined]
    cc = memory = mig = bus = brand = None
    with contextlib.suppress(Exception):
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)  # type: ignore[attr-defined]
        cc = f"{major}.{minor}"
    with contextlib.suppress(Exception):
        memory = int(nv.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024)  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        current, _pending = nv.nvmlDeviceGetMigMode(handle)  # type: ignore[attr-defined]
        mig = "Enabled" if current else "Disabled"
    with contextlib.suppress(Exception):
        bus = _text(nv.nvmlDeviceGetPciInfo(handle).busId)  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        brand = _BRANDS.get(int(nv.nvmlDeviceGetBrand(handle)), "Unknown")  # type: ignore[attr-defined]
    migs = _mig_device_count(nv, handle) if mig == "Enabled" else None
    return NvmlDevice(index, name, cc, memory, mig, bus, brand, migs)


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
        with contextlib.suppress(Exception):
            nv.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)  # type: ignore[attr-defined]
            found += 1
    return found


def _query_libcuda() -> LibcudaResult:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return LibcudaResult(error=str(exc))
    path = _mapped_path("libcuda.so")
    version = ctypes.c_int(0)
    try:
        rc = int(lib.cuDriverGetVersion(ctypes.byref(version)))
    except (AttributeError, OSError) as exc:
        return LibcudaResult(path=path, error=f"cuDriverGetVersion unavailable: {exc}")
    return LibcudaResult(path=path, returncode=rc, version=int(version.value))


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
