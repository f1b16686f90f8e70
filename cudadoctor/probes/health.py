"""The health probe: NVML's hardware answers plus what the host says about the GPUs.

Runs only on the machine itself (an image root has no hardware) and only when NVML is asked
(``check --no-health`` skips it). Everything is read without root: NVML's health queries answer
for an unprivileged user exactly as for root, measured on an H200 as uid 65534; the one exception
is the kernel log under ``kernel.dmesg_restrict=1``, which is then recorded as unreadable, with why.
"""

from __future__ import annotations

import errno
import os
import resource
import time

from cudadoctor.facts.health import GpuHealth, HealthInfo, HostHealth, XidEvent
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.health_parse import parse_gpu, parse_kmsg
from cudadoctor.probes.kmod import nvidia_pci
from cudadoctor.probes.nvml_health import NO_NVML

__all__ = ["host_health", "probe_health", "read_kernel_log"]

#: Modules whose presence the NCCL checks need (names as /proc/modules writes them).
_MODULES = ("nvidia_peermem", "nv_peer_mem", "ib_core", "mlx5_ib", "nvidia_fs")
#: Kernel log bytes read at most; the default ring buffer is 128 KiB to several MiB.
_KMSG_LIMIT = 8 << 20
_KMSG_SECONDS = 0.5


def probe_health(ctx: ProbeContext) -> HealthInfo | None:
    """NVML's answers and the host's, or None when health was not examined (image root, ``--no-health``)."""
    if not ctx.live:
        return None
    record = ctx.health_source.query()
    init = record.get("init")
    if "skipped" in record or (isinstance(init, dict) and init.get("c") == NO_NVML):
        return None  # health is examined where NVML is present; without it the CD10x driver checks speak
    host = host_health(ctx)
    if isinstance(init, dict) and "e" in init:
        return HealthInfo(nvml_error=str(init["e"]), host=host)
    count = record.get("count")
    devices = record.get("devices")
    gpus: tuple[GpuHealth, ...] = tuple(parse_gpu(d) for d in devices) if isinstance(devices, list) else ()
    driver = record.get("driver_version")
    return HealthInfo(
        nvml_error=str(count["e"]) if isinstance(count, dict) and "e" in count else None,
        nvml_count=count.get("v") if isinstance(count, dict) else None,
        driver_version=driver.get("v") if isinstance(driver, dict) else None,
        gpus=gpus,
        host=host,
        query_ms=record.get("elapsed_ms"),
    )


def host_health(ctx: ProbeContext) -> HostHealth:
    gpus, nvswitches = nvidia_pci(ctx)
    log_error, first, xids = read_kernel_log(ctx)
    return HostHealth(
        pci_functions=tuple(g.address for g in gpus),
        pci_drivers=tuple(g.driver for g in gpus),
        kernel_log_error=log_error,
        kernel_log_first_s=first,
        xids=xids,
        uptime_s=_uptime(ctx),
        shm_bytes=_shm(ctx),
        memlock_bytes=_memlock(),
        modules=_modules(ctx),
        ib_ports=_ib_ports(ctx),
        nvswitches=nvswitches,
        # Only NVSwitch systems run the fabric manager; dpkg's database is megabytes, so read it only there.
        fabric_manager_version=_fabric_manager(ctx) if nvswitches else None,
    )


def _read(ctx: ProbeContext, path: str) -> str:
    try:
        return ctx.fs.read_text(path, 4096).strip()
    except OSError:
        return ""


def read_kernel_log(ctx: ProbeContext) -> tuple[str | None, float | None, tuple[XidEvent, ...]]:
    """(why unreadable or None, first record's time, Xid events) from /dev/kmsg, without blocking.

    /dev/kmsg returns one record per read and EAGAIN at the end when opened O_NONBLOCK; EPIPE means
    the record was overwritten while reading, and the next read continues
    (https://www.kernel.org/doc/Documentation/ABI/testing/dev-kmsg).
    """
    path = ctx.fs.host_path("/dev/kmsg")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        restrict = _read(ctx, "/proc/sys/kernel/dmesg_restrict")
        why = f"/dev/kmsg: {exc.strerror or exc}"
        if restrict == "1":
            why += " (kernel.dmesg_restrict=1)"
        return why, None, ()
    chunks: list[bytes] = []
    total = 0
    deadline = time.monotonic() + _KMSG_SECONDS
    try:
        while total < _KMSG_LIMIT and time.monotonic() < deadline:
            try:
                data = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue
                return f"/dev/kmsg: {exc.strerror or exc}", None, ()
            if not data:
                break
            chunks.append(data)
            total += len(data)
    finally:
        os.close(fd)
    first, xids = parse_kmsg(b"".join(chunks).decode("utf-8", "replace"))
    return None, first, xids


def _uptime(ctx: ProbeContext) -> float | None:
    try:
        return float(_read(ctx, "/proc/uptime").split()[0])
    except (IndexError, ValueError):
        return None


def _shm(ctx: ProbeContext) -> int | None:
    try:
        shm = os.statvfs(ctx.fs.host_path("/dev/shm"))  # noqa: S108 - its size is the fact
        return int(shm.f_blocks * shm.f_frsize)
    except OSError:
        return None


def _memlock() -> int | None:
    # The limit of this process: what a job started from the same shell or unit inherits.
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (OSError, ValueError):
        return None
    return -1 if soft == resource.RLIM_INFINITY else int(soft)


def _modules(ctx: ProbeContext) -> tuple[str, ...]:
    names = {line.split(" ", 1)[0] for line in _read_all(ctx, "/proc/modules").splitlines()}
    return tuple(m for m in _MODULES if m in names)


def _read_all(ctx: ProbeContext, path: str) -> str:
    try:
        return ctx.fs.read_text(path)
    except OSError:
        return ""


def _ib_ports(ctx: ProbeContext) -> dict[str, str]:
    ports: dict[str, str] = {}
    for hca in ctx.fs.glob("/sys/class/infiniband", "*"):
        for port in ctx.fs.glob(f"{hca}/ports", "*"):
            ports[f"{os.path.basename(hca)}/{os.path.basename(port)}"] = _read(ctx, f"{port}/state")
    return ports


def _fabric_manager(ctx: ProbeContext) -> str | None:
    """The installed nvidia-fabricmanager package's version (dpkg's database; rpm's is not read)."""
    package = None
    try:
        status = ctx.fs.read_text("/var/lib/dpkg/status", 64 << 20)
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("Package: "):
            package = line[9:].strip()
        elif line.startswith("Version: ") and package and package.startswith("nvidia-fabricmanager"):
            return line[9:].strip().split("-", 1)[0]
    return None
