"""The NVIDIA kernel module from files: the GPUs on the PCI bus, whether the module is loaded, and why it may not be.

NVML, nvidia-smi and /proc/driver/nvidia/gpus answer only through a loaded kernel module, so where it is missing the
doctor would otherwise see no GPU. Everything here is a file: sysfs (the PCI functions, their bound driver, the loaded
modules), /proc/sys/kernel/osrelease (the running kernel, as `uname -r`) and the running kernel's modules.dep, which
depmod writes and modprobe reads (depmod(8), modules.dep(5)): a module it does not list cannot be loaded by name.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable

from cudadoctor.facts.model import KernelLogNote, NvidiaModuleState, PciGpu
from cudadoctor.probes.context import ProbeContext

__all__ = [
    "nvidia_module_files",
    "nvidia_pci",
    "parse_kernel_log",
    "parse_modinfo_license",
    "parse_secure_boot",
    "probe_nvidia_module",
]

# PCI class codes (PCI Code and ID Assignment spec; the kernel's include/linux/pci_ids.h):
# 0x0300 VGA controller, 0x0302 3D controller (data-center GPUs), 0x0680 other bridge (NVSwitch).
_GPU_CLASSES = ("0x0300", "0x0302")
_NVSWITCH_CLASS = "0x0680"
_NVIDIA_VENDOR = "0x10de"
#: modules.dep of a distribution kernel is about 0.3 to 1 MiB; a bound keeps a hostile root from costing more.
_MODULES_DEP_LIMIT = 8 << 20
#: a module path in modules.dep: the nvidia module itself (not nvidia-uvm, nvidia-drm …), compressed or not.
_NVIDIA_KO = re.compile(r"^([^:\s]*/)?nvidia\.ko(\.[a-z]{1,4})?:", re.MULTILINE)
#: a driver version as /usr/src/nvidia-<version> spells it
_VERSION = re.compile(r"[0-9]{2,4}(\.[0-9]{1,4}){1,2}")
#: what a kernel release may look like (it becomes part of a path)
_RELEASE = re.compile(r"[A-Za-z0-9._+~-]{1,128}")
#: the other installed kernels looked at for an nvidia module (a host keeps a few; a bound for a hostile root)
_OTHER_KERNELS = 16

# UEFI Secure Boot as the kernel decides it (drivers/firmware/efi/libstub/secureboot.c,
# https://github.com/torvalds/linux/blob/master/drivers/firmware/efi/libstub/secureboot.c): the global variable
# SecureBoot is 1, unless shim's MokSBStateRT is 1 (the user turned shim's validation off with
# `mokutil --disable-validation`), which the kernel honours as Secure Boot off. efivarfs gives each variable as its
# 4 attribute bytes and then its data (https://docs.kernel.org/filesystems/efivarfs.html).
_EFIVARS = "/sys/firmware/efi/efivars"
_SECURE_BOOT = f"{_EFIVARS}/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
_MOK_SB_STATE = f"{_EFIVARS}/MokSBStateRT-605dab50-e046-4300-abb6-3dd810dd8b23"
#: the keys DKMS signs the modules it builds with: Ubuntu's shim-signed key (update-secureboot-policy), then
#: dkms 3's own default (dkms(8), mok_signing_key / mok_certificate; Debian's wiki SecureBoot page,
#: https://wiki.debian.org/SecureBoot#DKMS_and_secure_boot)
_SIGNING_KEYS = ("/var/lib/shim-signed/mok/MOK.der", "/var/lib/dkms/mok.pub")
#: the kernel logs a host keeps as text: rsyslog's on Debian/Ubuntu and on RHEL/Fedora, Ubuntu's boot dmesg copy
_KERNEL_LOGS = ("/var/log/kern.log", "/var/log/messages", "/var/log/dmesg", "/var/log/syslog")
#: the newest part of a log is read (a week of kern.log is a few MiB on a busy host)
_LOG_TAIL = 4 << 20
#: a boot's first kernel line; what came before the last one is an earlier boot's
_BOOT = re.compile(r"\]\s{0,4}Linux version |kernel: Linux version ")
#: what precedes the message on a log line: syslog's date, host and ``kernel:``, dmesg's ``[    5.123456]``
_PREFIX = re.compile(r"^.{0,120}?(?=NVRM:)|^.{0,120}?kernel: (\[[ 0-9.]{1,20}\] ?)?|^\[[ 0-9.]{1,20}\] ?")
# The driver's messages (kernel-open/nvidia and src/nvidia/arch/nvalloc/unix/src/osapi.c rm_is_supported_device of
# https://github.com/NVIDIA/open-gpu-kernel-modules, e.g. tag 595.45.04; the legacy text is the proprietary
# module's, quoted in https://github.com/NixOS/nixos-hardware/issues/1828) and the kernel's refusal of an unsigned
# module under Secure Boot (kernel/module/signing.c, security/lockdown; "module verification failed ... tainting
# kernel" is NOT one: it is printed when an unsigned module is loaded where signatures are not enforced).
_NOTES = (
    ("gsp", re.compile(r"not supported by open nvidia\.ko because it does not include the required GPU System")),
    ("legacy", re.compile(r"supported through the NVIDIA ([0-9]{3})\.xx Legacy drivers")),
    ("unsupported", re.compile(r"not supported by the NVIDIA ([0-9]{3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?) driver release")),
    (
        "unsigned",
        re.compile(
            r"Loading of unsigned module is rejected|unsigned module loading is restricted|"
            r"Loading of module with unavailable key is rejected|PKCS#7 signature not signed with a trusted key"
        ),
    ),
)


def _read(ctx: ProbeContext, path: str, limit: int = 4096) -> str | None:
    try:
        return ctx.fs.read_text(path, limit).strip()
    except OSError:
        return None


def nvidia_pci(ctx: ProbeContext) -> tuple[tuple[PciGpu, ...], int]:
    """(the NVIDIA display and 3D controllers in /sys/bus/pci/devices with the driver each is bound to, the number of
    NVSwitches). This probe and the health probe's host part ask; a server's bus holds hundreds of functions, each
    with a vendor and a class file, so it is read once per run (``ctx.once``), whichever asks first."""
    return ctx.once("kmod.pci", lambda: _scan_pci(ctx))


def _scan_pci(ctx: ProbeContext) -> tuple[tuple[PciGpu, ...], int]:
    gpus: list[PciGpu] = []
    nvswitches = 0
    for path in ctx.fs.glob("/sys/bus/pci/devices", "*"):
        if (_read(ctx, f"{path}/vendor") or "").lower() != _NVIDIA_VENDOR:
            continue
        klass = (_read(ctx, f"{path}/class") or "").lower()[:6]
        nvswitches += klass == _NVSWITCH_CLASS
        if klass not in _GPU_CLASSES:
            continue
        device = (_read(ctx, f"{path}/device") or "").lower().removeprefix("0x").upper()
        try:
            driver = os.path.basename(ctx.fs.readlink(f"{path}/driver"))
        except OSError:
            driver = ""
        vendor, sub = (
            (_read(ctx, f"{path}/{name}") or "").lower().removeprefix("0x").upper()[:4]
            for name in ("subsystem_vendor", "subsystem_device")
        )
        gpus.append(PciGpu(os.path.basename(path), device[:4], driver, f"{vendor} {sub}" if vendor and sub else ""))
    return tuple(gpus), nvswitches


def nvidia_module_files(modules_dep: str) -> tuple[str, ...]:
    """The nvidia module files a modules.dep lists (``updates/dkms/nvidia.ko.zst``, ``kernel/nvidia-550/nvidia.ko``)."""
    return tuple(m.group(0)[:-1] for m in _NVIDIA_KO.finditer(modules_dep))


def probe_nvidia_module(ctx: ProbeContext) -> NvidiaModuleState | None:
    """The NVIDIA GPUs on the PCI bus and the state of the kernel module for them; None when the bus shows none.

    :param ctx: the probe context (the live machine, or a root whose /sys is a host's).
    """
    gpus, _nvswitches = nvidia_pci(ctx)
    if not gpus:
        return None
    if ctx.fs.exists("/proc/driver/nvidia/version") or ctx.fs.is_dir("/sys/module/nvidia"):
        # what follows only explains a module that is not loaded: a healthy run asks two paths, lists no /sys/module
        # (hundreds of entries on a host) and skips modules.dep
        return _loaded(ctx, gpus)
    try:
        modules: set[str] | None = set(ctx.fs.listdir("/sys/module"))
    except OSError:
        modules = None
    release = _read(ctx, "/proc/sys/kernel/osrelease")
    if release is not None and not _RELEASE.fullmatch(release):
        release = None
    files: tuple[str, ...] | None = None
    if release is not None:
        dep = _read(ctx, f"/lib/modules/{release}/modules.dep", _MODULES_DEP_LIMIT)
        files = nvidia_module_files(dep) if dep is not None else None
    log, notes = _kernel_log(ctx)
    flavor = _module_flavor(ctx, f"/lib/modules/{release}/{files[0]}") if release and files else None
    return NvidiaModuleState(
        pci_gpus=gpus,
        nvidia_loaded=None if modules is None else False,
        nouveau_loaded=modules is not None and "nouveau" in modules,
        kernel_release=release,
        nvidia_module_files=files,
        dkms_registered=ctx.fs.is_dir("/var/lib/dkms/nvidia"),
        dkms_sources=_dkms_sources(ctx),
        other_kernels=_other_kernels(ctx, release),
        secure_boot=_secure_boot(ctx),
        signing_key=next((k for k in _SIGNING_KEYS if ctx.fs.is_file(k)), None),
        kernel_log=log,
        kernel_notes=notes,
        module_flavor=flavor,
    )


#: the license each flavour's module declares: the open one MODULE_LICENSE("Dual MIT/GPL")
#: (kernel-open/nvidia/nv.c of https://github.com/NVIDIA/open-gpu-kernel-modules), the proprietary one "NVIDIA"
#: (the kernel's "module license 'NVIDIA' taints kernel" when it loads)
_FLAVORS = {"Dual MIT/GPL": "open", "NVIDIA": "proprietary"}
#: bounds on what a module's ELF section table and .modinfo may take (a module has about a hundred sections)
_MAX_SECTIONS = 4096
_MAX_SECTION = 256 << 10


def _module_flavor(ctx: ProbeContext, path: str) -> str | None:
    """The flavour of an uncompressed module file (a compressed .ko.zst/.ko.xz is not unpacked: None)."""
    if not path.endswith(".ko"):
        return None
    try:
        with ctx.fs.open_ranges(path) as handle:
            found = parse_modinfo_license(handle.read)
    except (OSError, ValueError, struct.error):
        return None
    return _FLAVORS.get(found or "")


def parse_modinfo_license(read: Callable[[int, int], bytes]) -> str | None:
    """The ``license=`` of a kernel module's ``.modinfo`` section (an ELF64 little-endian relocatable file, as
    x86_64 and aarch64 modules are: System V gABI section headers, https://refspecs.linuxfoundation.org/elf/gabi4+/ch4.sheader.html);
    None when it has none or is no such file. ``read(offset, length)`` gives the file's bytes.

    Parse, e.g.: a ``.modinfo`` of ``version=580.95.05\\0license=NVIDIA\\0...`` answers ``NVIDIA``.
    """
    header = read(0, 64)
    if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", header, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 0x3A)
    if shentsize != 64 or not 0 < shnum <= _MAX_SECTIONS or shstrndx >= shnum:
        return None
    table = read(shoff, shnum * 64)
    if len(table) < shnum * 64:
        return None
    # each header: name, type, flags, address, offset, size (the rest unread)
    sections = [struct.unpack_from("<IIQQQQ", table, i * 64) for i in range(shnum)]
    names = _section(read, sections[shstrndx])
    for section in sections:
        if names[section[0] : section[0] + 9] == b".modinfo\x00":
            for entry in _section(read, section).split(b"\x00"):
                if entry.startswith(b"license="):
                    return entry[8:].decode("ascii", errors="replace")
    return None


def _section(read: Callable[[int, int], bytes], section: tuple[int, ...]) -> bytes:
    offset, size = section[4], section[5]
    if size > _MAX_SECTION:
        raise ValueError("section too large for a module's names or .modinfo")
    return read(offset, size)


def _loaded(ctx: ProbeContext, gpus: tuple[PciGpu, ...]) -> NvidiaModuleState:
    """The module is loaded: the GPUs it did not take, and only then what the kernel log and the module's flavour
    (/proc/driver/nvidia/version names an "Open Kernel Module") say about why."""
    unclaimed = tuple(
        g.address
        for g in gpus
        if g.driver in ("", "nouveau") and not ctx.fs.exists(f"/sys/bus/pci/devices/{g.address}/physfn")
    )
    state = NvidiaModuleState(pci_gpus=gpus, nvidia_loaded=True, nouveau_loaded=ctx.fs.is_dir("/sys/module/nouveau"))
    if not unclaimed:
        return state
    log, notes = _kernel_log(ctx)
    version = _read(ctx, "/proc/driver/nvidia/version") or ""
    flavor = ("open" if "Open Kernel Module" in version else "proprietary") if "NVRM version" in version else None
    return NvidiaModuleState(
        pci_gpus=gpus,
        nvidia_loaded=True,
        nouveau_loaded=state.nouveau_loaded,
        kernel_log=log,
        kernel_notes=notes,
        module_flavor=flavor,
        unclaimed=unclaimed,
    )


def _other_kernels(ctx: ProbeContext, release: str | None) -> tuple[str, ...] | None:
    """The installed kernels other than the running one whose modules.dep lists an nvidia module: the module was
    built for them (a kernel update the module was not rebuilt for), where none means it was never installed."""
    try:
        names = ctx.fs.listdir("/lib/modules")
    except OSError:
        return None
    found = []
    for name in [n for n in names if n != release and _RELEASE.fullmatch(n)][:_OTHER_KERNELS]:
        dep = _read(ctx, f"/lib/modules/{name}/modules.dep", _MODULES_DEP_LIMIT)
        if dep is not None and nvidia_module_files(dep):
            found.append(name)
    return tuple(found)


def parse_secure_boot(secure_boot: bytes, mok_sb_state: bytes | None) -> bool | None:
    """Whether the kernel enforces Secure Boot, from efivarfs's SecureBoot and MokSBStateRT files (4 attribute
    bytes, then the value); None when the value is missing.

    Parse, e.g.: ``b"\\x06\\x00\\x00\\x00\\x01"`` (enabled), with MokSBStateRT ``b"\\x06\\x00\\x00\\x00\\x01"``
    (shim's validation disabled: off).
    """
    if len(secure_boot) < 5:
        return None
    if secure_boot[4] != 1:
        return False
    return not (mok_sb_state is not None and len(mok_sb_state) >= 5 and mok_sb_state[4] == 1)


def _secure_boot(ctx: ProbeContext) -> bool | None:
    """Secure Boot from the firmware variables; False on a machine booted without UEFI (no /sys/firmware/efi)."""
    try:
        value = ctx.fs.read_bytes(_SECURE_BOOT, 64)
    except OSError:
        if ctx.fs.is_dir("/sys/firmware") and not ctx.fs.exists("/sys/firmware/efi"):
            return False  # legacy BIOS boot: no Secure Boot
        return None
    try:
        mok: bytes | None = ctx.fs.read_bytes(_MOK_SB_STATE, 64)
    except OSError:
        mok = None
    return parse_secure_boot(value, mok)


def _kernel_log(ctx: ProbeContext) -> tuple[str | None, tuple[KernelLogNote, ...]]:
    """The first readable kernel log and what its newest boot says about the nvidia module."""
    for path in _KERNEL_LOGS:
        try:
            text = ctx.fs.read_tail(path, _LOG_TAIL)
        except OSError:
            continue
        return path, parse_kernel_log(text)
    return None, ()


def parse_kernel_log(text: str) -> tuple[KernelLogNote, ...]:
    """The newest message of each kind about the nvidia module in the last boot of a kernel log (syslog or dmesg
    lines); the driver writes one message over several ``NVRM:`` lines, joined here.

    Parse, e.g.::

        Dec  3 10:00:01 box kernel: [    5.20] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)
        Dec  3 10:00:01 box kernel: [    5.20] NVRM: installed in this system is not supported by open
        Dec  3 10:00:01 box kernel: [    5.20] NVRM: nvidia.ko because it does not include the required GPU
        Dec  3 10:00:01 box kernel: [    5.20] NVRM: System Processor (GSP).
    """
    boots = list(_BOOT.finditer(text))
    if boots:
        text = text[boots[-1].start() :]
    messages: list[str] = []
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw, count=1).strip()
        if line.startswith("NVRM:"):
            words = line.removeprefix("NVRM:").strip()
            if messages and messages[-1].startswith("NVRM:") and not words.startswith("The NVIDIA"):
                messages[-1] += " " + words
            else:
                messages.append("NVRM: " + words)
        elif line:
            messages.append(line)
    newest: dict[str, KernelLogNote] = {}
    for message in messages:
        for kind, pattern in _NOTES:
            if found := pattern.search(message):
                release = found.group(1) if found.groups() else ""
                # the driver's pointer to its README ends the message
                newest[kind] = KernelLogNote(kind, message.split(" Please", 1)[0][:400], release)
    return tuple(newest[kind] for kind, _ in _NOTES if kind in newest)


def _dkms_sources(ctx: ProbeContext) -> tuple[str, ...]:
    """The versions of /usr/src/nvidia-<version>: the source tree a DKMS package of the driver installs, which
    `dkms install -m nvidia -v <version>` builds for the running kernel (dkms(8))."""
    found = [os.path.basename(p).removeprefix("nvidia-") for p in ctx.fs.glob("/usr/src", "nvidia-*")]
    return tuple(sorted(v for v in found if _VERSION.fullmatch(v)))
