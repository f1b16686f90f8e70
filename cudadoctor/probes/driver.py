"""The NVIDIA driver: kernel module, user-space libcuda, NVML and nvidia-smi, every source kept.

Sources, cheapest first (formats as measured on a real H200, tests/fixtures/h200/capture.txt):

* ``/sys/module/nvidia/version`` and ``/proc/driver/nvidia/version``: the loaded kernel module;
* NVML (``nvmlSystemGetDriverVersion``, ``nvmlSystemGetCudaDriverVersion_v2``);
* ``cuDriverGetVersion`` of the libcuda the dynamic loader picks, and that file's name;
* ``nvidia-smi --query-gpu=…`` last, live only; its parsed output is shared with the GPU probe.

Each answer is kept as a :class:`~cudadoctor.facts.model.DriverReading`: after a driver upgrade without
a reboot the kernel module (580.159.04) and user space (libcuda.so.575.x) disagree, and that
disagreement is the fact a check needs. libcuda files are also listed *by name* (host driver,
cuda-compat copies, toolkit stubs, the WSL2 driver store) with whether the loader's search path
reaches them (a compat or stub libcuda first on the path breaks CUDA: measured on a real H200,
tests/fixtures/h200-deep/deep-s1.json and deep-s2.json).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import field

from packaging.version import Version

from cudadoctor.facts.model import (
    DriverInfo,
    DriverReading,
    DriverVersion,
    KernelModule,
    LibcudaFile,
    LibcudaResolution,
    Source,
    SourceKind,
)
from cudadoctor.probes.context import DRIVER_FILES, ProbeContext
from cudadoctor.probes.loader import search_dirs, soname_version
from cudadoctor.probes.native import LibcudaResult, NvmlResult, decode_cuda_version
from cudadoctor.record import mutable_record, record

__all__ = [
    "PROC_VERSION",
    "SMI_QUERY_ARGV",
    "SYS_VERSION",
    "DriverFiles",
    "SmiGpu",
    "SmiQuery",
    "driver_files",
    "find_libcuda_files",
    "libcuda_kind",
    "parse_driver_version",
    "parse_nvidia_smi_query",
    "parse_proc_driver_version",
    "parse_sys_module_version",
    "probe_driver",
    "query_nvidia_smi",
]

PROC_VERSION = "/proc/driver/nvidia/version"
SYS_VERSION = "/sys/module/nvidia/version"

#: The one nvidia-smi command cudadoctor runs. ``--format=csv,noheader,nounits`` drops the header
#: and the " MiB" unit (https://docs.nvidia.com/deploy/nvidia-smi/index.html). No UUID is asked for.
SMI_QUERY_ARGV: tuple[str, ...] = (
    "nvidia-smi",
    "--query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,mig.mode.current",
    "--format=csv,noheader,nounits",
)
SMI_TIMEOUT = 10.0

#: CUresult CUDA_ERROR_STUB_LIBRARY: the toolkit's link-time stub answered
#: (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html; measured on a real H200,
#: tests/fixtures/h200-deep/deep-s2.json).
CUDA_ERROR_STUB_LIBRARY = 34

_DRIVER_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
_ARCH = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_WSL_LIB = "/usr/lib/wsl/lib"
_MOUNTED_DRIVER_DIRS = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")


# --- parsers --------------------------------------------------------------------------------------


def parse_driver_version(text: str) -> DriverVersion | None:
    """``"580.159.04"`` -> DriverVersion (prints as written); None unless two or three numbers."""
    text = text.strip()
    if not _DRIVER_VERSION.match(text):
        return None
    try:
        return DriverVersion(text)
    except ValueError:  # InvalidVersion (\d admits other scripts' digits), or a number past int()'s digit limit
        return None


def parse_sys_module_version(text: str) -> DriverVersion | None:
    """The kernel module's version from ``/sys/module/nvidia/version``.

    Parse, e.g. (captured, one line)::

        580.159.04
    """
    lines = text.strip().splitlines()
    return parse_driver_version(lines[0]) if len(lines) == 1 else None


def parse_proc_driver_version(text: str) -> KernelModule | None:
    """Version, flavour and architecture of the kernel module from ``/proc/driver/nvidia/version``.

    Parse, e.g. (captured; open module, note the double and trailing spaces)::

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)
        GCC version:  gcc version 15.3.0 (GCC)

    or the proprietary module::

        NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022

    Rule (the project's, checked on the variants in tests/fixtures/driver/): on line 1 the first token
    matching ``^\\d+\\.\\d+(\\.\\d+)?$`` is the version; "Open Kernel
    Module" means the open module; the architecture is the token after "for" (open) or after "UNIX"
    (proprietary). ``Kernel Module\\s+(\\d+)`` regexes seen in public code fail on the open line, hence
    the token scan.
    """
    stripped = text.lstrip()
    if not stripped:
        return None
    line = stripped.splitlines()[0]
    if not line.startswith("NVRM version:") or "Kernel Module" not in line:
        return None
    tokens = line.split()
    version = next((v for v in map(parse_driver_version, tokens) if v is not None), None)
    if version is None:
        return None
    flavour = "open" if "Open Kernel Module" in line else "proprietary"
    anchor = "for" if flavour == "open" else "UNIX"
    arch = None
    if anchor in tokens:
        after = tokens.index(anchor) + 1
        if after < len(tokens) and _ARCH.match(tokens[after]) and tokens[after] not in ("Open", "Kernel"):
            arch = tokens[after]
    return KernelModule(version=version, flavour=flavour, arch=arch, source=Source(SourceKind.FILE, PROC_VERSION))


@record
class SmiGpu:
    """One row of the nvidia-smi query."""

    index: int
    name: str
    pci_bus_id: str | None
    driver_version: DriverVersion | None
    compute_capability: str | None  #: ``"9.0"``
    memory_mib: int | None
    mig_mode: str | None  #: ``Enabled`` / ``Disabled``; None for "[N/A]" (no MIG on this GPU)


def _smi_value(text: str) -> str | None:
    # nvidia-smi prints "[N/A]", "[Not Supported]", "[Insufficient Permissions]" for missing values.
    text = text.strip()
    return None if not text or text.startswith("[") else text


#: A number nvidia-smi prints: ASCII digits only (``str.isdigit`` accepts "²", which ``int`` refuses),
#: and short enough for ``int`` (which refuses more than 4300 digits).
_SMI_INT = re.compile(r"[0-9]{1,18}")


def parse_nvidia_smi_query(text: str) -> tuple[SmiGpu, ...] | None:
    """The rows of :data:`SMI_QUERY_ARGV`'s output; None when no line is a well-formed row.

    Parse, e.g. (the H200's answer, capture.txt, in this query's column order)::

        0, NVIDIA H200, 00000000:00:06.0, 580.159.04, 9.0, 143771, Disabled
    """
    gpus: list[SmiGpu] = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 7 or not _SMI_INT.fullmatch(fields[0]) or not fields[1]:
            continue
        index, name, bus, driver, cc, memory, mig = fields
        cc_value = _smi_value(cc)
        memory_value = _smi_value(memory)
        gpus.append(
            SmiGpu(
                index=int(index),
                name=name,
                pci_bus_id=_smi_value(bus),
                driver_version=parse_driver_version(driver),
                compute_capability=cc_value if cc_value and re.fullmatch(r"[0-9]+\.[0-9]+", cc_value) else None,
                memory_mib=int(memory_value) if memory_value and _SMI_INT.fullmatch(memory_value) else None,
                mig_mode=_smi_value(mig),
            )
        )
    return tuple(gpus) or None


def nvml_answered_fully(nvml: NvmlResult) -> bool:
    """True when NVML gave the driver version and at least one device (nvidia-smi not needed)."""
    return nvml.error is None and bool(nvml.driver_version) and bool(nvml.devices)


# --- nvidia-smi, shared with the GPU probe --------------------------------------------------------


@record
class SmiQuery:
    """What the one nvidia-smi query gave: its rows, or why there are none."""

    argv: tuple[str, ...]
    gpus: tuple[SmiGpu, ...] = ()
    error: str | None = None  #: one line: "Failed to initialize NVML: …", "not found", "timed out …"
    ran: bool = False  #: the command started and exited (so nvidia-smi is installed)

    @property
    def source(self) -> Source:
        return Source(SourceKind.COMMAND, " ".join(self.argv))


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return None


def query_nvidia_smi(ctx: ProbeContext) -> SmiQuery | None:
    """Run :data:`SMI_QUERY_ARGV` once per context; None when not examining this machine.

    Nothing in an image root is ever executed, and the host's nvidia-smi would describe the
    host, not the image. Errors are returned, not recorded: :func:`probe_driver` records them.
    """
    if not ctx.live:
        return None

    def compute() -> SmiQuery:
        result = ctx.runner.run(SMI_QUERY_ARGV, timeout=SMI_TIMEOUT)
        if result.error is not None:
            return SmiQuery(SMI_QUERY_ARGV, error=result.error)
        if result.returncode != 0:
            # e.g. "Failed to initialize NVML: Driver/library version mismatch" (rc 18) or
            # "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver…".
            line = _first_line(result.stdout) or _first_line(result.stderr)
            message = line or f"exited with status {result.returncode}"
            return SmiQuery(SMI_QUERY_ARGV, error=message, ran=True)
        gpus = parse_nvidia_smi_query(result.stdout)
        if gpus is None:
            line = _first_line(result.stdout) or _first_line(result.stderr)
            what = f": {line!r}" if line else " (empty)"
            return SmiQuery(SMI_QUERY_ARGV, error=f"unrecognised output{what}", ran=True)
        return SmiQuery(SMI_QUERY_ARGV, gpus=gpus, ran=True)

    return ctx.once("nvidia-smi.query", compute)


# --- libcuda files by name ------------------------------------------------------------------------


def libcuda_kind(path: str) -> str:
    """``wsl`` / ``stub`` / ``compat`` / ``driver`` from where a libcuda file lies."""
    if path.startswith("/usr/lib/wsl/"):
        return "wsl"
    parts = path.split("/")[:-1]
    if "stubs" in parts:
        return "stub"
    if "compat" in parts:
        return "compat"
    return "driver"


def _name_version(path: str) -> DriverVersion | None:
    # libcuda.so.580.95.05 names the driver; libcuda.so.1 (the SONAME) and WSL2's libcuda.so.1.1
    # do not. Driver versions have a three-digit major (177.80 … 580.x), so a suffix starting
    # with the SONAME major "1" is never one.
    suffix = soname_version(path)
    if suffix is None or suffix.split(".")[0] == "1":
        return None
    return parse_driver_version(suffix)


def _libcuda_dirs(ctx: ProbeContext) -> list[tuple[str, bool]]:
    """(directory, on the loader's search path), search path first so its paths win."""
    dirs: list[tuple[str, bool]] = [(d, True) for d in search_dirs(ctx)]
    cuda_roots = ctx.fs.glob("/usr/local", "cuda*")
    # cuda-compat installs into /usr/local/cuda-X.Y/compat
    # (https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html); it is only on
    # the search path when LD_LIBRARY_PATH or ld.so.conf names it.
    dirs += [(posixpath.join(root, "compat"), False) for root in cuda_roots]
    dirs.append((_WSL_LIB, False))
    # Where GKE-style hosts mount their driver (measured on a real H200, tests/fixtures/h200/capture.txt): found
    # even when LD_LIBRARY_PATH no longer names it, so "on disk but not on the search path" shows.
    dirs += [(d, False) for d in _MOUNTED_DRIVER_DIRS]
    # The toolkit's link-time stubs (capture: targets/x86_64-linux/lib/stubs/libcuda.so).
    for root in cuda_roots:
        dirs.append((posixpath.join(root, "lib64", "stubs"), False))
        for target in ctx.fs.glob(posixpath.join(root, "targets"), "*"):
            dirs.append((posixpath.join(target, "lib", "stubs"), False))
    return dirs


def find_libcuda_files(ctx: ProbeContext) -> tuple[LibcudaFile, ...]:
    """Every real ``libcuda.so*`` file, listed once, in search-path order, then the other places.

    Links (``libcuda.so`` -> ``libcuda.so.1`` -> ``libcuda.so.580.95.05``) are followed and the
    file they reach is listed under its real path; a file counts as on the search path when any
    name reaching it sits in a directory the loader searches.
    """
    found: dict[str, LibcudaFile] = {}
    for directory, searched in _libcuda_dirs(ctx):
        for path in ctx.fs.glob(directory, "libcuda.so*"):
            try:
                if not ctx.fs.is_file(path):
                    continue  # a dangling link, or a directory
                real = ctx.fs.resolve(path)
            except OSError:
                continue
            known = found.get(real)
            if known is not None:
                if searched and not known.on_search_path:
                    found[real] = LibcudaFile(known.path, known.version, known.kind, True, known.source)
                continue
            found[real] = LibcudaFile(
                path=real,
                version=_name_version(real),
                kind=libcuda_kind(real),
                on_search_path=searched,
                source=Source(SourceKind.FILENAME, real),
            )
    return tuple(found.values())


# --- the probe ------------------------------------------------------------------------------------


def _read(ctx: ProbeContext, path: str, problems: list[tuple[str, str | None]]) -> str | None:
    try:
        return ctx.fs.read_text(path, limit=64 * 1024)
    except FileNotFoundError:
        return None  # absent: no module loaded, or WSL2, or an image; not an error by itself
    except OSError as exc:
        problems.append((f"cannot read: {exc.strerror or exc}", path))
        return None


def _garbled(text: str) -> str:
    line = _first_line(text)
    return f"unrecognised contents: {line[:80]!r}" if line else "empty file"


@mutable_record
class _Sources:
    """What the driver's sources said so far, and what failed (one probe run)."""

    problems: list[tuple[str, str | None]] = field(default_factory=list)
    readings: list[DriverReading] = field(default_factory=list)
    sys_version: DriverVersion | None = None
    kernel: KernelModule | None = None
    nvml: DriverReading | None = None
    libcuda_cuda_api: Version | None = None
    loaded: str | None = None
    smi: SmiQuery | None = None


def _read_module_files(ctx: ProbeContext, found: _Sources) -> None:
    """The kernel module's version from sysfs and procfs."""
    text = _read(ctx, SYS_VERSION, found.problems)
    if text is not None:
        found.sys_version = parse_sys_module_version(text)
        if found.sys_version is None:
            found.problems.append((_garbled(text), SYS_VERSION))
        else:
            found.readings.append(DriverReading(Source(SourceKind.FILE, SYS_VERSION), version=found.sys_version))
    text = _read(ctx, PROC_VERSION, found.problems)
    if text is not None:
        found.kernel = kernel = parse_proc_driver_version(text)
        if kernel is None:
            found.problems.append((_garbled(text), PROC_VERSION))
        else:
            detail = f"{kernel.flavour} kernel module" + (f" for {kernel.arch}" if kernel.arch else "")
            found.readings.append(DriverReading(kernel.source, version=kernel.version, detail=detail))


def _read_nvml(nvml: NvmlResult, found: _Sources) -> None:
    if nvml.error is not None:
        found.problems.append((f"NVML: {nvml.error}", "nvml"))
        return
    found.nvml = reading = DriverReading(
        Source(SourceKind.API, "nvml"),
        version=parse_driver_version(nvml.driver_version or ""),
        cuda_api=_cuda_api(nvml.cuda_driver_version),
    )
    found.readings.append(reading)
    if reading.version is None:
        found.problems.append((f"NVML: unrecognised driver version {nvml.driver_version!r}", "nvml"))
    if reading.cuda_api is None:
        # NVML asks libcuda for this; with a stub libcuda first on the search path it has no
        # answer while the driver version still reads fine (measured on a real H200,
        # tests/fixtures/h200-deep/deep-s2.json).
        found.problems.append(("NVML: no CUDA driver version (nvmlSystemGetCudaDriverVersion_v2)", "nvml"))


def _read_libcuda(lib: LibcudaResult, found: _Sources) -> None:
    """``cuDriverGetVersion`` through the libcuda the loader picks, and that file's own version."""
    found.loaded = lib.path
    api = Source(SourceKind.API, "cuDriverGetVersion")
    if lib.error is not None:
        found.problems.append((f"libcuda: {lib.error}", "cuDriverGetVersion"))
    elif lib.returncode == CUDA_ERROR_STUB_LIBRARY:
        where = lib.path or "libcuda.so.1"
        found.readings.append(DriverReading(api, detail=f"{where}: stub library (CUDA_ERROR_STUB_LIBRARY, rc 34)"))
        message = (
            "cuDriverGetVersion returned 34 (CUDA_ERROR_STUB_LIBRARY): "
            f"the loader picked the toolkit's stub libcuda {where}"
        )
        found.problems.append((message, "cuDriverGetVersion"))
    else:
        found.libcuda_cuda_api = _cuda_api(lib.version) if lib.returncode == 0 else None
        found.readings.append(DriverReading(api, cuda_api=found.libcuda_cuda_api, detail=lib.path))
        if lib.returncode != 0:
            found.problems.append((f"cuDriverGetVersion returned {lib.returncode}", "cuDriverGetVersion"))
        elif found.libcuda_cuda_api is None:
            found.problems.append((f"cuDriverGetVersion answered {lib.version}", "cuDriverGetVersion"))
    # The loaded file's own name is a driver version when it is the versioned file.
    name_version = _name_version(lib.path) if lib.path else None
    if lib.path and name_version is not None:
        detail = "the libcuda cuDriverGetVersion loaded"
        found.readings.append(DriverReading(Source(SourceKind.FILENAME, lib.path), version=name_version, detail=detail))


def _read_native(ctx: ProbeContext, found: _Sources) -> None:
    """NVML, libcuda and, when NVML did not answer fully, nvidia-smi (live only)."""
    nvml = ctx.native.nvml()
    _read_nvml(nvml, found)
    _read_libcuda(ctx.native.libcuda_version(), found)
    # nvidia-smi reads the same NVML library cudadoctor just asked, so when NVML answered it
    # adds nothing but ~100 ms (measured on the H200). It is the fallback, run only when NVML
    # gave no driver version or no devices.
    found.smi = smi = query_nvidia_smi(ctx) if nvml_answered_fully(nvml) is False else None
    if smi is not None:
        if smi.error is not None:
            found.problems.append((f"nvidia-smi: {smi.error}", " ".join(smi.argv)))
        elif smi.gpus:
            found.readings.append(DriverReading(smi.source, version=smi.gpus[0].driver_version))


def _agreed_version(found: _Sources) -> DriverVersion | None:
    """The kernel module first, then sysfs, NVML and nvidia-smi."""
    smi_version = found.smi.gpus[0].driver_version if found.smi is not None and found.smi.gpus else None
    candidates = (
        found.kernel.version if found.kernel else None,
        found.sys_version,
        found.nvml.version if found.nvml else None,
        smi_version,
    )
    return next((v for v in candidates if v is not None), None)


def probe_driver(ctx: ProbeContext) -> DriverInfo | None:
    """The driver as every source saw it; None when there is no trace of an NVIDIA driver at all.

    A trace is a kernel module, a libcuda file other than a toolkit stub, a native answer, or an
    nvidia-smi that ran. Each source that fails adds one :class:`~cudadoctor.facts.model.ProbeError`;
    when nothing is found they are folded into one "no NVIDIA driver found" error.

    :return: :class:`~cudadoctor.facts.model.DriverInfo`, or None.
    """
    found = _Sources()
    _read_module_files(ctx, found)
    # Native calls and commands describe the machine cudadoctor runs on; with --root they would
    # attribute the host's driver to the image.
    if ctx.live:
        _read_native(ctx, found)
    files = ctx.once(DRIVER_FILES, lambda: driver_files(ctx))
    libcuda_files = files.libcuda_files
    smi_ran = found.smi is not None and found.smi.ran
    if not found.readings and all(f.kind == "stub" for f in libcuda_files) and not smi_ran:
        if found.problems:
            reasons = "; ".join(message for message, _ in found.problems)
            ctx.fail("driver", f"no NVIDIA driver found ({reasons})")
        return None
    for message, failed_at in found.problems:
        ctx.fail("driver", message, failed_at)
    nvml_api = found.nvml.cuda_api if found.nvml else None
    return DriverInfo(
        version=_agreed_version(found),
        cuda_api=nvml_api or found.libcuda_cuda_api,
        kernel_module=found.kernel,
        readings=tuple(found.readings),
        libcuda_files=libcuda_files,
        loaded_libcuda=found.loaded,
        wsl=files.wsl,
        resolved_libcuda=files.resolved_libcuda,
        wsl_libraries=files.wsl_libraries,
    )


@record
class DriverFiles:
    """What the driver probe reads from files alone: kept in the file probes' memo with their facts, so a run
    on an unchanged machine lists no library directory for libcuda (~15 ms on an H200, measured)."""

    libcuda_files: tuple[LibcudaFile, ...]
    wsl: bool
    resolved_libcuda: tuple[LibcudaResolution, ...]
    wsl_libraries: tuple[str, ...]


def driver_files(ctx: ProbeContext) -> DriverFiles:
    """The driver's file facts: its libcuda files, whether this is WSL2, and which libcuda ld.so loads."""
    return DriverFiles(
        libcuda_files=find_libcuda_files(ctx),
        wsl=ctx.fs.exists(_WSL_LIB) or ctx.fs.exists("/dev/dxg"),
        resolved_libcuda=resolve_libcuda(ctx),
        wsl_libraries=_wsl_libraries(ctx),
    )


def resolve_libcuda(ctx: ProbeContext) -> tuple[LibcudaResolution, ...]:
    """``libcuda.so.1`` and ``libcuda.so`` as ld.so would find them, each when found.

    Both names matter: cudart and binaries linked with ``-lcuda`` ask for ``libcuda.so.1`` (the
    driver's SONAME), while numba, warp and others ``dlopen("libcuda.so")``, the name the toolkit's
    ``lib64/stubs`` holds (https://docs.nvidia.com/cuda/cuda-installation-guide-linux/).
    """
    from cudadoctor.probes.linkage import resolve_plain  # the loader's search: imported only when it runs

    resolved: list[LibcudaResolution] = []
    for soname in ("libcuda.so.1", "libcuda.so"):
        hit = resolve_plain(ctx, soname)
        if hit is None:
            continue
        try:
            real = ctx.fs.resolve(hit[0])
        except OSError:
            real = hit[0]
        resolved.append(LibcudaResolution(soname, hit[0], real, hit[1]))
    return tuple(resolved)


def _wsl_libraries(ctx: ProbeContext) -> tuple[str, ...]:
    """The file names in /usr/lib/wsl/lib (a few dozen on a real WSL2 system; bounded against odd trees)."""
    return tuple(posixpath.basename(p) for p in ctx.fs.glob(_WSL_LIB, "*")[:1000])


def _cuda_api(value: int | None) -> Version | None:
    decoded = decode_cuda_version(value) if value is not None else None
    return Version(decoded) if decoded else None
