"""The driver-API child of ``check --deep``: ``libcuda.so.1`` through ctypes, and no framework.

Run as ``<python> -I driver_api.py`` (see ``__init__.py``). It calls ``cuDriverGetVersion``,
``cuInit(0)``, ``cuDeviceGetCount`` and, per device, ``cuDeviceGetName`` and the compute-capability
attributes, and prints one result line behind :data:`MARKER` on stdout.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

#: Prefix of the one result line on stdout (cudadoctor.probes.runtime.MARKER).
MARKER = "@@cudadoctor-runtime@@"
#: Prefix of the progress lines on stderr (cudadoctor.probes.runtime.STAGE_MARKER).
STAGE = "@@cudadoctor-stage@@"

#: ``CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`` / ``_MINOR`` of ``CUdevice_attribute``:
#: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html
_CC_MAJOR, _CC_MINOR = 75, 76


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


# --- the driver API -------------------------------------------------------------------------------


def error_text(lib: ctypes.CDLL, rc: int) -> tuple[str | None, str | None]:
    """``cuGetErrorName`` and ``cuGetErrorString`` of a CUresult, each None when libcuda has none."""
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(rc, ctypes.byref(name)) != 0:
            name.value = None
        if lib.cuGetErrorString(rc, ctypes.byref(text)) != 0:
            text.value = None
    except (AttributeError, OSError):
        return None, None
    return (
        name.value.decode("utf-8", "replace") if name.value else None,
        text.value.decode("utf-8", "replace") if text.value else None,
    )


def device_nodes() -> list[str]:
    try:
        return sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    except OSError:
        return []


def devices(lib: ctypes.CDLL, count: int) -> list[dict[str, Any]]:
    """Index, name and compute capability of each device; no UUID is asked for."""
    found: list[dict[str, Any]] = []
    for index in range(count):
        device, major, minor = ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1)
        buf = ctypes.create_string_buffer(256)
        if lib.cuDeviceGet(ctypes.byref(device), index) != 0:
            continue
        lib.cuDeviceGetName(buf, 256, device)
        lib.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, device)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, device)
        cc = f"{major.value}.{minor.value}" if major.value >= 0 and minor.value >= 0 else None
        found.append({"index": index, "name": buf.value.decode("utf-8", "replace"), "cc": cc})
    return found


def probe(out: dict[str, Any]) -> None:
    """Fill ``out`` stage by stage; it stops at the first stage that fails."""
    out["device_nodes"] = device_nodes()
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
    out["devices"] = devices(lib, count.value)


def main() -> None:
    out: dict[str, Any] = {"probe": "driver"}
    try:
        probe(out)
    except Exception as exc:
        out["error"] = one_line(exc)
    emit(out)


if __name__ == "__main__":
    main()
