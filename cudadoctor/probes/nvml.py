"""A small ctypes binding of NVML: only the calls cudadoctor makes, under nvidia-ml-py's names and shapes.

Why: NVIDIA's binding (``pynvml``, one module of ~8,000 lines and hundreds of ctypes classes) costs
10-17 ms of Python to import on an H200 host, in the thread that competes with the checks for the GIL
(issue #13). This module defines a dozen structures and the ~45 functions that
:mod:`cudadoctor.probes.native` and :mod:`cudadoctor.probes.nvml_health` call, with the same names,
argument order and return shapes as nvidia-ml-py (structures with the same field names, process entries as
``nvmlFriendlyObject``), and an :class:`NVMLError` with ``.value`` and the same ``str()``, so the recorded
JSON is identical: ``bench/compare_nvml.py`` found both bindings' records equal on a real H200 (driver
580.159.04), so this is the default; ``CUDADOCTOR_NVML=pynvml`` selects nvidia-ml-py
(see :func:`cudadoctor.probes.native.nvml_binding`).

Signatures and layouts are those of NVIDIA's ``nvml.h`` (the NVML API reference,
https://docs.nvidia.com/deploy/nvml-api/); tests/probes/test_nvml_binding.py checks every structure's size,
offsets and field types against nvidia-ml-py and runs every function against a fake ``libnvidia-ml``.
"""

from __future__ import annotations

import _thread
from ctypes import (
    CDLL,
    POINTER,
    Structure,
    Union,
    byref,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_longlong,
    c_uint,
    c_uint8,
    c_uint32,
    c_ulong,
    c_ulonglong,
    c_ushort,
    create_string_buffer,
)

TYPE_CHECKING = False  # the helper process imports this module: only ctypes (see cudadoctor.probes.nvml_child)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# nvmlReturn_t (nvml.h)
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_UNKNOWN = 999

# Buffer sizes (nvml.h, "Buffer Sizes" / nvmlDeviceGetGspFirmwareVersion)
NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80
NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80
NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96
NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32
NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16
NVML_GSP_FIRMWARE_VERSION_BUF_SIZE = 0x40
NVML_GPU_FABRIC_UUID_LEN = 16
#: nvmlSystemGetProcessName's buffer, the size nvidia-ml-py passes.
PROCESS_NAME_BUFFER_SIZE = 1024

NVML_GPM_METRICS_GET_VERSION = 1
NVML_GPM_SUPPORT_VERSION = 1
#: Length of nvmlGpmMetricsGet_t.metrics: nvml.h's NVML_GPM_METRIC_MAX as nvidia-ml-py 13.615 declares it
#: (98 in the 12.x headers). NVML reads only ``numMetrics`` entries, so a longer array is harmless.
NVML_GPM_METRIC_MAX = 477

#: NVML_VALUE_NOT_AVAILABLE as an unsigned long long: usedGpuMemory under WDDM.
_NOT_AVAILABLE_ULL = 2**64 - 1

# What nvmlErrorString says for these codes. nvidia-ml-py answers them without asking the library, so
# they are fixed here too: str(NVMLError) must be the same with either binding. Other codes ask NVML.
_ERROR_TEXT: dict[int, str] = {
    1: "Uninitialized",
    2: "Invalid Argument",
    3: "Not Supported",
    4: "Insufficient Permissions",
    5: "Already Initialized",
    6: "Not Found",
    7: "Insufficient Size",
    8: "Insufficient External Power",
    9: "Driver Not Loaded",
    10: "Timeout",
    11: "Interrupt Request Issue",
    12: "NVML Shared Library Not Found",
    13: "Function Not Found",
    14: "Corrupted infoROM",
    15: "GPU is lost",
    16: "GPU requires restart",
    17: "The operating system has blocked the request.",
    18: "RM has detected an NVML/RM version mismatch.",
    20: "Insufficient Memory",
    999: "Unknown Error",
}


class NVMLError(Exception):
    """A call answered an nvmlReturn_t other than NVML_SUCCESS; ``value`` is that code."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _error_text(self.value)


def _error_text(code: int) -> str:
    known = _ERROR_TEXT.get(code)
    if known is not None:
        return known
    try:
        fn = _function("nvmlErrorString")
        fn.restype = c_char_p
        text = fn(c_int(code))
    except NVMLError:
        return f"NVML Error with code {code}"
    message = str(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)
    _ERROR_TEXT[code] = message
    return message


# -- the library ------------------------------------------------------------------------------------------

_LOCK = _thread.allocate_lock()  # threading's Lock, without importing threading (the helper's memory)


def open_nvml_library() -> CDLL:
    """NVML by its fixed name, the library this binding calls (raises OSError when absent). Only this module and
    cudadoctor.probes.nvml_calls load a native library, each by a fixed name (tests/security/test_static.py)."""
    return CDLL("libnvidia-ml.so.1")


#: ``open``: what loads the library: :func:`open_nvml_library`, or a test's fake
_STATE: dict[str, Any] = {"open": open_nvml_library, "lib": None}
_FUNCTIONS: dict[str, Any] = {}


def use_library(opener: Callable[[], CDLL] | None) -> None:
    """Load NVML with ``opener`` from now on (tests: a fake library), None for the real one by its name.

    Forgets a library already loaded; the next :func:`nvmlInit` loads it again.
    """
    with _LOCK:
        _STATE["open"], _STATE["lib"] = opener or open_nvml_library, None
        _FUNCTIONS.clear()


def _load() -> None:
    with _LOCK:
        if _STATE["lib"] is None:
            try:
                _STATE["lib"] = _STATE["open"]()
            except OSError:
                raise NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND) from None


def _function(name: str) -> Any:
    """The library's entry point ``name`` (its return value is an nvmlReturn_t, ctypes' default int)."""
    found = _FUNCTIONS.get(name)
    if found is not None:
        return found
    with _LOCK:
        lib = _STATE["lib"]
        if lib is None:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        try:
            found = getattr(lib, name)
        except AttributeError:
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND) from None
        _FUNCTIONS[name] = found
        return found


def _check(ret: int) -> None:
    if ret != NVML_SUCCESS:
        raise NVMLError(ret)


def _scalar(name: str, ctype: Any, *args: Any) -> Any:
    """Call ``name(*args, &out)`` and return ``out``'s value."""
    out = ctype()
    _check(_function(name)(*args, byref(out)))
    return out.value


def _getter(name: str, ctype: Any) -> Callable[[Any], int]:
    """The binding of a device query ``name(handle, &out)`` whose answer is one integer of ``ctype``."""

    def get(handle: Any) -> int:
        return int(_scalar(name, ctype, handle))

    get.__name__ = get.__qualname__ = name
    return get


def _pair(name: str, ctype: Any, handle: Any) -> list[Any]:
    """Call ``name(handle, &a, &b)`` and return ``[a, b]``."""
    first, second = ctype(), ctype()
    _check(_function(name)(handle, byref(first), byref(second)))
    return [first.value, second.value]


def _string(name: str, size: int, *args: Any) -> str:
    """Call ``name(*args, buffer, size)`` and return the text."""
    buffer = create_string_buffer(size)
    _check(_function(name)(*args, buffer, c_uint(size)))
    return buffer.value.decode("utf-8", "replace")


# -- structures (nvml.h) ----------------------------------------------------------------------------------


class _Struct(Structure):
    """A structure whose char arrays read as ``str``, as nvidia-ml-py's structures do."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class struct_c_nvmlDevice_t(Structure):
    """Opaque (``struct nvmlDevice_st``)."""


c_nvmlDevice_t = POINTER(struct_c_nvmlDevice_t)


class struct_c_nvmlGpmSample_t(Structure):
    """Opaque (``struct nvmlGpmSample_st``)."""


c_nvmlGpmSample_t = POINTER(struct_c_nvmlGpmSample_t)


class nvmlPciInfo_t(_Struct):
    _fields_ = [
        ("busIdLegacy", c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE),
        ("domain", c_uint),
        ("bus", c_uint),
        ("device", c_uint),
        ("pciDeviceId", c_uint),
        ("pciSubSystemId", c_uint),
        ("busId", c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE),
    ]


class c_nvmlMemory_t(_Struct):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class c_nvmlUtilization_t(_Struct):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class c_nvmlProcessInfo_v3_t(_Struct):
    """nvmlProcessInfo_t (nvmlProcessInfo_v2_st), what nvmlDeviceGetComputeRunningProcesses_v3 fills."""

    _fields_ = [
        ("pid", c_uint),
        ("usedGpuMemory", c_ulonglong),
        ("gpuInstanceId", c_uint),
        ("computeInstanceId", c_uint),
    ]


class c_nvmlValue_t(Union):
    # In nvmlValueType_t order (DOUBLE, UNSIGNED_INT, UNSIGNED_LONG, ...), as nvidia-ml-py lists them.
    _fields_ = [
        ("dVal", c_double),
        ("uiVal", c_uint),
        ("ulVal", c_ulong),
        ("ullVal", c_ulonglong),
        ("sllVal", c_longlong),
        ("siVal", c_int),
        ("usVal", c_ushort),
    ]


class c_nvmlSample_t(_Struct):
    _fields_ = [("timeStamp", c_ulonglong), ("sampleValue", c_nvmlValue_t)]


class c_nvmlViolationTime_t(_Struct):
    _fields_ = [("referenceTime", c_ulonglong), ("violationTime", c_ulonglong)]


class c_nvmlFieldValue_t(_Struct):
    _fields_ = [
        ("fieldId", c_uint32),
        ("scopeId", c_uint32),
        ("timestamp", c_int64),
        ("latencyUsec", c_int64),
        ("valueType", c_uint),
        ("nvmlReturn", c_uint),
        ("value", c_nvmlValue_t),
    ]


class c_nvmlProcessUtilizationSample_t(_Struct):
    _fields_ = [
        ("pid", c_uint),
        ("timeStamp", c_ulonglong),
        ("smUtil", c_uint),
        ("memUtil", c_uint),
        ("encUtil", c_uint),
        ("decUtil", c_uint),
    ]


class c_nvmlGpuFabricInfo_t(_Struct):
    # nvml.h declares ``state`` an unsigned char (nvmlGpuFabricState_t); nvidia-ml-py reads it as an
    # unsigned int at the same offset, over the padding ctypes zeroes. Kept so both bindings read alike.
    _fields_ = [
        ("clusterUuid", c_uint8 * NVML_GPU_FABRIC_UUID_LEN),
        ("status", c_uint),
        ("cliqueId", c_uint32),
        ("state", c_uint),
    ]


class c_nvmlGpmSupport_t(_Struct):
    _fields_ = [("version", c_uint), ("isSupportedDevice", c_uint)]


class c_metricInfo_t(Structure):
    _fields_ = [("shortName", c_char_p), ("longName", c_char_p), ("unit", c_char_p)]


class c_nvmlGpmMetric_t(_Struct):
    _fields_ = [("metricId", c_uint), ("nvmlReturn", c_uint), ("value", c_double), ("metricInfo", c_metricInfo_t)]


class c_nvmlGpmMetricsGet_t(_Struct):
    _fields_ = [
        ("version", c_uint),
        ("numMetrics", c_uint),
        ("sample1", c_nvmlGpmSample_t),
        ("sample2", c_nvmlGpmSample_t),
        ("metrics", c_nvmlGpmMetric_t * NVML_GPM_METRIC_MAX),
    ]


class nvmlFriendlyObject:
    """One entry of a list NVML filled, as plain attributes (nvidia-ml-py's shape for process lists)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __str__(self) -> str:
        return str(self.__dict__)


def _process(entry: c_nvmlProcessInfo_v3_t) -> nvmlFriendlyObject:
    """A process entry; usedGpuMemory is None where NVML has no figure (NVML_VALUE_NOT_AVAILABLE, WDDM)."""
    values = {name: getattr(entry, name) for name, *_ in entry._fields_}
    if values["usedGpuMemory"] == _NOT_AVAILABLE_ULL:
        values["usedGpuMemory"] = None
    return nvmlFriendlyObject(values)


# -- initialisation and the system ------------------------------------------------------------------------


def nvmlInit() -> None:
    """Load the library and initialise NVML (``nvmlInitWithFlags(0)``, which is ``nvmlInit_v2``)."""
    _load()
    _check(_function("nvmlInitWithFlags")(c_uint(0)))


def nvmlSystemGetDriverVersion() -> str:
    return _string("nvmlSystemGetDriverVersion", NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)


def nvmlSystemGetNVMLVersion() -> str:
    return _string("nvmlSystemGetNVMLVersion", NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE)


def nvmlSystemGetCudaDriverVersion_v2() -> int:
    return int(_scalar("nvmlSystemGetCudaDriverVersion_v2", c_int))


def nvmlSystemGetProcessName(pid: int) -> str:
    return _string("nvmlSystemGetProcessName", PROCESS_NAME_BUFFER_SIZE, c_uint(pid))


def nvmlDeviceGetCount() -> int:
    return int(_scalar("nvmlDeviceGetCount_v2", c_uint))


def nvmlDeviceGetHandleByIndex(index: int) -> Any:
    device = c_nvmlDevice_t()
    _check(_function("nvmlDeviceGetHandleByIndex_v2")(c_uint(index), byref(device)))
    return device


# -- device identity and state ----------------------------------------------------------------------------


def nvmlDeviceGetName(handle: Any) -> str:
    return _string("nvmlDeviceGetName", NVML_DEVICE_NAME_V2_BUFFER_SIZE, handle)


def nvmlDeviceGetCudaComputeCapability(handle: Any) -> tuple[int, int]:
    major, minor = _pair("nvmlDeviceGetCudaComputeCapability", c_int, handle)
    return (major, minor)


def nvmlDeviceGetMemoryInfo(handle: Any) -> c_nvmlMemory_t:
    memory = c_nvmlMemory_t()
    _check(_function("nvmlDeviceGetMemoryInfo")(handle, byref(memory)))
    return memory


def nvmlDeviceGetPciInfo(handle: Any) -> nvmlPciInfo_t:
    info = nvmlPciInfo_t()
    _check(_function("nvmlDeviceGetPciInfo_v3")(handle, byref(info)))
    return info


nvmlDeviceGetBrand = _getter("nvmlDeviceGetBrand", c_uint)


nvmlDeviceGetArchitecture = _getter("nvmlDeviceGetArchitecture", c_uint)


nvmlDeviceGetPersistenceMode = _getter("nvmlDeviceGetPersistenceMode", c_uint)


nvmlDeviceGetDisplayActive = _getter("nvmlDeviceGetDisplayActive", c_uint)


def nvmlDeviceGetMigMode(handle: Any) -> list[int]:
    return _pair("nvmlDeviceGetMigMode", c_uint, handle)


nvmlDeviceGetMaxMigDeviceCount = _getter("nvmlDeviceGetMaxMigDeviceCount", c_uint)


def nvmlDeviceGetMigDeviceHandleByIndex(handle: Any, index: int) -> Any:
    device = c_nvmlDevice_t()
    _check(_function("nvmlDeviceGetMigDeviceHandleByIndex")(handle, c_uint(index), byref(device)))
    return device


def nvmlDeviceGetGspFirmwareVersion(handle: Any) -> bytes:
    """The GSP firmware version, as bytes (nvidia-ml-py does not decode this one)."""
    buffer = create_string_buffer(NVML_GSP_FIRMWARE_VERSION_BUF_SIZE)
    _check(_function("nvmlDeviceGetGspFirmwareVersion")(handle, buffer))
    return buffer.value


def nvmlDeviceGetGspFirmwareMode(handle: Any) -> list[int]:
    return _pair("nvmlDeviceGetGspFirmwareMode", c_uint, handle)


def nvmlDeviceGetUtilizationRates(handle: Any) -> c_nvmlUtilization_t:
    rates = c_nvmlUtilization_t()
    _check(_function("nvmlDeviceGetUtilizationRates")(handle, byref(rates)))
    return rates


nvmlDeviceGetPowerUsage = _getter("nvmlDeviceGetPowerUsage", c_uint)


nvmlDeviceGetEnforcedPowerLimit = _getter("nvmlDeviceGetEnforcedPowerLimit", c_uint)


def nvmlDeviceGetComputeRunningProcesses(handle: Any) -> list[nvmlFriendlyObject]:
    """``nvmlDeviceGetComputeRunningProcesses_v3``: ask the count, then fill a list with room to spare."""
    fn = _function("nvmlDeviceGetComputeRunningProcesses_v3")
    count = c_uint(0)
    ret = fn(handle, byref(count), None)
    if ret == NVML_SUCCESS:
        return []
    if ret != NVML_ERROR_INSUFFICIENT_SIZE:
        raise NVMLError(ret)
    count.value = count.value * 2 + 5  # processes may start between the two calls
    entries = (c_nvmlProcessInfo_v3_t * count.value)()
    _check(fn(handle, byref(count), entries))
    return [_process(entries[i]) for i in range(count.value)]


def nvmlDeviceGetFieldValues(handle: Any, fieldIds: list[Any]) -> Any:
    """One call for many fields; an id is an int, or a ``(fieldId, scopeId)`` pair."""
    values = (c_nvmlFieldValue_t * len(fieldIds))()
    for slot, field_id in enumerate(fieldIds):
        if isinstance(field_id, tuple):
            values[slot].fieldId, values[slot].scopeId = field_id
        else:
            values[slot].fieldId = field_id
    _check(_function("nvmlDeviceGetFieldValues")(handle, c_int32(len(fieldIds)), byref(values)))
    return values


# -- memory health ----------------------------------------------------------------------------------------


def nvmlDeviceGetEccMode(handle: Any) -> list[int]:
    return _pair("nvmlDeviceGetEccMode", c_uint, handle)


def nvmlDeviceGetTotalEccErrors(handle: Any, errorType: int, counterType: int) -> int:
    fn = "nvmlDeviceGetTotalEccErrors"
    return int(_scalar(fn, c_ulonglong, handle, c_uint(errorType), c_uint(counterType)))


def nvmlDeviceGetMemoryErrorCounter(handle: Any, errorType: int, counterType: int, locationType: int) -> int:
    args = (handle, c_uint(errorType), c_uint(counterType), c_uint(locationType))
    return int(_scalar("nvmlDeviceGetMemoryErrorCounter", c_ulonglong, *args))


def nvmlDeviceGetRemappedRows(handle: Any) -> tuple[int, int, int, int]:
    rows = [c_uint() for _ in range(4)]
    _check(_function("nvmlDeviceGetRemappedRows")(handle, *(byref(r) for r in rows)))
    corrected, uncorrected, pending, failure = (r.value for r in rows)
    return (corrected, uncorrected, pending, failure)


nvmlDeviceGetRetiredPagesPendingStatus = _getter("nvmlDeviceGetRetiredPagesPendingStatus", c_uint)


def nvmlDeviceGetRetiredPages(handle: Any, sourceFilter: int) -> list[int]:
    """The addresses of the pages retired for one cause: ask the count, then fill a list with room to spare."""
    fn = _function("nvmlDeviceGetRetiredPages")
    cause, count = c_uint(sourceFilter), c_uint(0)
    ret = fn(handle, cause, byref(count), None)
    if ret not in (NVML_SUCCESS, NVML_ERROR_INSUFFICIENT_SIZE):
        raise NVMLError(ret)
    count.value = count.value * 2 + 5  # pages may retire between the two calls
    pages = (c_ulonglong * count.value)()
    _check(fn(handle, cause, byref(count), pages))
    return [int(page) for page in pages[: count.value]]


# -- clocks, PCIe, NVLink, fabric -------------------------------------------------------------------------


nvmlDeviceGetCurrentClocksEventReasons = _getter("nvmlDeviceGetCurrentClocksEventReasons", c_ulonglong)


nvmlDeviceGetCurrentClocksThrottleReasons = _getter("nvmlDeviceGetCurrentClocksThrottleReasons", c_ulonglong)


def nvmlDeviceGetViolationStatus(handle: Any, perfPolicyType: int) -> c_nvmlViolationTime_t:
    violation = c_nvmlViolationTime_t()
    _check(_function("nvmlDeviceGetViolationStatus")(handle, c_uint(perfPolicyType), byref(violation)))
    return violation


nvmlDeviceGetCurrPcieLinkGeneration = _getter("nvmlDeviceGetCurrPcieLinkGeneration", c_uint)


nvmlDeviceGetMaxPcieLinkGeneration = _getter("nvmlDeviceGetMaxPcieLinkGeneration", c_uint)


nvmlDeviceGetGpuMaxPcieLinkGeneration = _getter("nvmlDeviceGetGpuMaxPcieLinkGeneration", c_uint)


nvmlDeviceGetCurrPcieLinkWidth = _getter("nvmlDeviceGetCurrPcieLinkWidth", c_uint)


nvmlDeviceGetMaxPcieLinkWidth = _getter("nvmlDeviceGetMaxPcieLinkWidth", c_uint)


nvmlDeviceGetPcieReplayCounter = _getter("nvmlDeviceGetPcieReplayCounter", c_uint)


def nvmlDeviceGetNvLinkState(handle: Any, link: int) -> int:
    return int(_scalar("nvmlDeviceGetNvLinkState", c_uint, handle, c_uint(link)))


def nvmlDeviceGetGpuFabricInfo(handle: Any, gpuFabricInfo: Any) -> int:
    """Fills the ``c_nvmlGpuFabricInfo_t`` that ``gpuFabricInfo`` points to (pass ``byref(info)``)."""
    _check(_function("nvmlDeviceGetGpuFabricInfo")(handle, gpuFabricInfo))
    return NVML_SUCCESS


# -- utilization and GPM ----------------------------------------------------------------------------------


def nvmlDeviceGetSamples(handle: Any, sampling_type: int, timeStamp: int) -> tuple[int, list[c_nvmlSample_t]]:
    """The driver's samples newer than ``timeStamp``: ask the count, then fill; ``(valueType, samples)``."""
    fn = _function("nvmlDeviceGetSamples")
    kind, since = c_uint(sampling_type), c_ulonglong(timeStamp)
    value_type, count = c_uint(), c_uint(0)
    _check(fn(handle, kind, since, byref(value_type), byref(count), None))
    samples = (c_nvmlSample_t * count.value)()
    _check(fn(handle, kind, since, byref(value_type), byref(count), samples))
    return (value_type.value, list(samples[: count.value]))


def nvmlDeviceGetProcessUtilization(handle: Any, timeStamp: int) -> list[c_nvmlProcessUtilizationSample_t]:
    """Per-process samples newer than ``timeStamp``: ask the count, then fill.

    Any first answer but NVML_ERROR_INSUFFICIENT_SIZE raises, NVML_SUCCESS included (an ``NVMLError`` whose
    value is 0), exactly as nvidia-ml-py does, so the records of both bindings agree.
    """
    fn = _function("nvmlDeviceGetProcessUtilization")
    count, since = c_uint(0), c_ulonglong(timeStamp)
    ret = fn(handle, None, byref(count), since)
    if ret != NVML_ERROR_INSUFFICIENT_SIZE:
        raise NVMLError(ret)
    samples = (c_nvmlProcessUtilizationSample_t * count.value)()
    _check(fn(handle, samples, byref(count), since))
    return list(samples[: count.value])


def nvmlGpmQueryDeviceSupport(handle: Any) -> c_nvmlGpmSupport_t:
    support = c_nvmlGpmSupport_t()
    support.version = NVML_GPM_SUPPORT_VERSION
    _check(_function("nvmlGpmQueryDeviceSupport")(handle, byref(support)))
    return support


def nvmlGpmSampleAlloc() -> Any:
    sample = c_nvmlGpmSample_t()
    _check(_function("nvmlGpmSampleAlloc")(byref(sample)))
    return sample


def nvmlGpmSampleGet(handle: Any, gpmSample: Any) -> Any:
    _check(_function("nvmlGpmSampleGet")(handle, gpmSample))
    return gpmSample


def nvmlGpmSampleFree(gpmSample: Any) -> None:
    _check(_function("nvmlGpmSampleFree")(gpmSample))


def nvmlGpmMetricsGet(metricsGet: c_nvmlGpmMetricsGet_t) -> c_nvmlGpmMetricsGet_t:
    _check(_function("nvmlGpmMetricsGet")(byref(metricsGet)))
    return metricsGet
