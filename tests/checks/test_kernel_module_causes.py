"""CD136's causes read from the firmware and the kernel log (issue #25): Secure Boot refusing an unsigned module, the
open module refusing a GPU without GSP, a legacy GPU, a GPU the installed branch does not support, and a user-space
driver installed without its kernel module; could not judge what was not read.

Machines are fake trees (pyfakefs), laid out by test_kernel_module's ``_machine``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.probes.kmod import parse_kernel_log, parse_secure_boot, probe_nvidia_module
from tests.checks.test_kernel_module import RELEASE, _cd136, _facts, _machine
from tests.conftest import make_ctx

EFI = "/sys/firmware/efi/efivars"
SECURE_BOOT = f"{EFI}/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
MOK_SB_STATE = f"{EFI}/MokSBStateRT-605dab50-e046-4300-abb6-3dd810dd8b23"
ON = b"\x06\x00\x00\x00\x01"
OFF = b"\x06\x00\x00\x00\x00"
DKMS_KO = "updates/dkms/nvidia.ko.zst:\n"
#: the open module's message (src/nvidia/arch/nvalloc/unix/src/osapi.c, open-gpu-kernel-modules 595.45.04) as
#: rsyslog writes it to kern.log, after an earlier boot's lines
GSP_LOG = """Nov 30 08:00:00 box kernel: [    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)
Nov 30 08:00:05 box kernel: [    5.10] NVRM: The NVIDIA GeForce GTX 1080 GPU installed in this system is
Nov 30 08:00:05 box kernel: [    5.10] NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please
Dec  3 10:00:00 box kernel: [    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-075)
Dec  3 10:00:01 box kernel: [    5.20] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1b80)
Dec  3 10:00:01 box kernel: [    5.20] NVRM: installed in this system is not supported by open
Dec  3 10:00:01 box kernel: [    5.20] NVRM: nvidia.ko because it does not include the required GPU
Dec  3 10:00:01 box kernel: [    5.20] NVRM: System Processor (GSP).
Dec  3 10:00:01 box kernel: [    5.20] NVRM: Please see the 'Open Linux Kernel Modules' and 'GSP
Dec  3 10:00:01 box kernel: [    5.21] NVRM: None of the NVIDIA devices were initialized.
"""


@pytest.mark.parametrize(
    ("secure_boot", "mok", "expected"),
    [
        (ON, None, True),
        (OFF, None, False),
        (ON, ON, False),
        (ON, OFF, True),
        (b"\x06\x00", None, None),
        (b"", None, None),
    ],
    ids=["on", "off", "shim-validation-off", "shim-validation-on", "short", "empty"],
)
def test_secure_boot_is_the_variables_value_unless_shim_validation_is_off(
    secure_boot: bytes, mok: bytes | None, expected: bool | None
) -> None:
    assert parse_secure_boot(secure_boot, mok) is expected


def test_the_kernel_log_is_read_from_the_last_boot_with_each_message_joined() -> None:
    notes = parse_kernel_log(GSP_LOG)
    assert [n.kind for n in notes] == ["gsp"]  # the earlier boot's legacy message is not this boot's
    assert notes[0].line == (
        "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1b80) installed in this system is not supported by open "
        "nvidia.ko because it does not include the required GPU System Processor (GSP)."
    )
    dmesg = (
        "[    4.9] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n"
        "[    5.1] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)\n"
        "[    5.1] NVRM: installed in this system is not supported by the\n"
        "[    5.1] NVRM: NVIDIA 550.54.14 driver release.\n"
        "[    5.2] nvidia: module verification failed: signature and/or required key missing - tainting kernel\n"
    )
    found = {n.kind: n.release for n in parse_kernel_log(dmesg)}
    assert found == {"unsupported": "550.54.14", "unsigned": ""}  # the taint line is a load that succeeded
    assert parse_kernel_log("") == () and parse_kernel_log("\x00garbage NVRM: NVRM:\n" * 3) == ()


def test_the_probe_reads_secure_boot_the_signing_key_and_the_kernel_log(fs: Any) -> None:
    _machine(fs, dep=DKMS_KO)
    state = probe_nvidia_module(make_ctx())
    assert state is not None
    assert state.secure_boot is None and state.kernel_log is None and state.signing_key is None  # nothing to read
    fs.create_dir("/sys/firmware")  # booted without UEFI: no /sys/firmware/efi
    assert (s := probe_nvidia_module(make_ctx())) is not None and s.secure_boot is False
    fs.create_file(SECURE_BOOT, contents=ON)
    fs.create_file("/var/lib/shim-signed/mok/MOK.der")
    fs.create_file("/var/log/kern.log", contents=GSP_LOG)
    state = probe_nvidia_module(make_ctx())
    assert state is not None and state.secure_boot is True
    assert state.signing_key == "/var/lib/shim-signed/mok/MOK.der"
    assert state.kernel_log == "/var/log/kern.log" and [n.kind for n in state.kernel_notes] == ["gsp"]


def test_secure_boot_with_a_dkms_module_enrolls_the_dkms_key(fs: Any) -> None:
    _machine(fs, dep=DKMS_KO, libcuda="550.127.05", dkms=True)
    fs.create_file(SECURE_BOOT, contents=ON)
    fs.create_file("/var/lib/shim-signed/mok/MOK.der")
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert finding.message.startswith("Secure Boot keeps the NVIDIA kernel module from loading")
    assert finding.evidence["DKMS signing key"] == "/var/lib/shim-signed/mok/MOK.der"
    assert finding.remediation is not None
    assert finding.remediation.commands == ("sudo mokutil --import /var/lib/shim-signed/mok/MOK.der", "sudo reboot")
    assert "Secure Boot off" in finding.remediation.text


def test_secure_boot_is_not_blamed_for_a_distribution_signed_module_or_where_shim_validation_is_off(fs: Any) -> None:
    _machine(fs, dep="kernel/nvidia-550/nvidia.ko:\n", libcuda="550.127.05")  # Ubuntu's signed precompiled module
    fs.create_file(SECURE_BOOT, contents=ON)
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL and "Secure Boot keeps" not in finding.message
    assert finding.remediation is not None and finding.remediation.commands == ("sudo modprobe nvidia",)
    fs.remove_object("/lib/modules")
    _machine_dep(fs, DKMS_KO)
    fs.create_file(MOK_SB_STATE, contents=ON)  # mokutil --disable-validation: the kernel takes Secure Boot as off
    assert "Secure Boot keeps" not in _cd136(_facts()).message


def _machine_dep(fs: Any, dep: str) -> None:
    fs.create_file(f"/lib/modules/{RELEASE}/modules.dep", contents=dep)


def test_the_kernels_refusal_of_an_unsigned_module_names_secure_boot_without_a_key_command(fs: Any) -> None:
    _machine(fs, dep="kernel/drivers/video/nvidia.ko:\n", libcuda="550.127.05")  # the .run installer's module
    fs.create_file("/var/log/kern.log", contents="kernel: Loading of unsigned module is rejected\n")
    finding = _cd136(_facts())
    assert finding.message.startswith("Secure Boot keeps") and "its log says it refused" in finding.message
    assert finding.remediation is not None and finding.remediation.commands == ()  # no key to enroll was found
    assert "mokutil --import" in finding.remediation.text


def test_unread_firmware_and_log_are_said_not_taken_as_fine(fs: Any) -> None:
    _machine(fs, dep=DKMS_KO, libcuda="550.127.05")
    finding = _cd136(_facts())
    assert finding.evidence["Secure Boot"].startswith("unknown")
    assert finding.evidence["kernel log"].startswith("not readable")


def test_the_open_module_on_a_pascal_gpu_installs_the_proprietary_module(fs: Any) -> None:
    _machine(fs, device="0x1b80", dep=DKMS_KO, libcuda="580.95.05")  # a GTX 1080: in no open-modules list
    fs.create_file("/var/log/kern.log", contents=GSP_LOG)
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert "the open NVIDIA kernel module refused NVIDIA GPU 10de:1b80" in finding.message
    assert "GPU System Processor (GSP)" in finding.evidence["kernel log (/var/log/kern.log)"]
    assert finding.remediation is not None
    assert finding.remediation.commands == ("sudo apt install nvidia-driver-580", "sudo reboot")
    assert "R580 for Maxwell, Pascal and Volta, R470 for Kepler" in finding.remediation.text


def test_the_proprietary_module_of_an_ended_branch_is_named_but_no_package_printed(fs: Any) -> None:
    """Ubuntu turns an ended branch's packages into transitional ones to a newer branch (570 -> 580)."""
    _machine(fs, device="0x1b80", dep=DKMS_KO, libcuda="570.133.07")
    fs.create_file("/var/log/kern.log", contents=GSP_LOG)
    finding = _cd136(_facts())
    assert finding.remediation is not None and finding.remediation.commands == ()
    assert "the open NVIDIA kernel module refused" in finding.message


def test_the_open_module_of_a_branch_past_the_legacy_cut_goes_back_to_the_last_proprietary_branch(fs: Any) -> None:
    _machine(fs, device="0x1b80", dep=DKMS_KO, libcuda="595.45.04")
    fs.create_file("/var/log/kern.log", contents=GSP_LOG)
    finding = _cd136(_facts())
    assert finding.remediation is not None
    assert finding.remediation.commands[0] == "sudo apt install nvidia-driver-580"


def test_a_legacy_gpu_names_the_legacy_branch_from_the_kernel_log(fs: Any) -> None:
    _machine(fs, device="0x1287", dep=DKMS_KO, libcuda="535.183.01")  # a Kepler GT 730
    fs.create_file(
        "/var/log/dmesg",
        contents="[    5.1] NVRM: The NVIDIA GeForce GT 730 GPU installed in this system is\n"
        "[    5.1] NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please\n"
        "[    5.1] NVRM:  visit http://www.nvidia.com/object/unix.html for more\n",
    )
    finding = _cd136(_facts())
    assert "supported through the NVIDIA 470.xx legacy drivers" in finding.message
    assert "535.183.01" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == ()  # Ubuntu's nvidia-driver-470 is now a transitional package to 535
    assert "Install the R470 legacy driver" in finding.remediation.text


def test_a_blackwell_gpu_on_r550_is_too_new_from_compat_data_alone(fs: Any) -> None:
    _machine(fs, device="0x2b85", dep=DKMS_KO, libcuda="550.127.05")  # an RTX 5090, no kernel log
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert finding.message.startswith("the installed NVIDIA driver (R550) does not support NVIDIA GeForce RTX 5090")
    assert "R570 or newer" in finding.evidence["driver branch"]
    assert finding.remediation is not None
    command = finding.remediation.commands[0]
    assert command.startswith("sudo apt install nvidia-driver-") and command.endswith("-open")
    assert int(command.split("-")[-2]) >= 570


def test_a_supported_gpu_on_its_branch_is_not_called_unsupported(fs: Any) -> None:
    _machine(fs, device="0x2b85", dep=DKMS_KO, libcuda="580.95.05")
    assert "does not support" not in _cd136(_facts()).message


def test_user_space_without_any_kernels_module_says_the_kernel_package_is_missing(fs: Any) -> None:
    _machine(fs, libcuda="550.127.05")
    fs.create_file("/lib/modules/6.8.0-45-generic/modules.dep", contents="kernel/fs/ext4/ext4.ko.zst:\n")
    finding = _cd136(_facts())
    assert finding.evidence["other kernels with an nvidia module"] == "none (/lib/modules/*/modules.dep)"
    assert finding.remediation is not None and "without its kernel module" in finding.remediation.text


def test_a_module_built_only_for_an_older_kernel_is_a_kernel_update(fs: Any) -> None:
    _machine(fs, libcuda="550.127.05")
    fs.create_file("/lib/modules/6.8.0-45-generic/modules.dep", contents=DKMS_KO)
    finding = _cd136(_facts())
    assert finding.evidence["other kernels with an nvidia module"] == "6.8.0-45-generic (/lib/modules)"
    assert finding.remediation is not None and "6.8.0-45-generic" in finding.remediation.text


def test_secure_boot_is_not_blamed_where_modules_dep_could_not_be_read(fs: Any) -> None:
    """Secure Boot on, but no module file known: nothing says an unsigned module is what the kernel refused."""
    _machine(fs, dep=None, libcuda="550.127.05")
    fs.create_file(SECURE_BOOT, contents=ON)
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL and "Secure Boot keeps" not in finding.message
    assert "unsigned" not in finding.message


def _module(license_: str | None) -> bytes:
    """A minimal ELF64 relocatable file with a .shstrtab and, unless None, a .modinfo holding ``license=``."""
    import struct

    names = b"\x00.shstrtab\x00.modinfo\x00"
    modinfo = b"version=580.95.05\x00" + (f"license={license_}\x00".encode() if license_ else b"") + b"srcversion=X\x00"
    data_at = 64
    names_at, modinfo_at = data_at, data_at + len(names)
    shoff = modinfo_at + len(modinfo)
    header = (
        b"\x7fELF\x02\x01\x01"
        + b"\x00" * 9
        + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 1)
    )
    null = b"\x00" * 64
    strtab = struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)
    info = struct.pack("<IIQQQQIIQQ", 11, 1, 2, 0, modinfo_at, len(modinfo), 0, 0, 1, 0)
    return header + names + modinfo + null + strtab + info


@pytest.mark.parametrize(
    ("license_", "expected"), [("Dual MIT/GPL", "open"), ("NVIDIA", "proprietary"), (None, None), ("GPL", None)]
)
def test_the_modules_flavour_is_read_from_its_modinfo_license(
    fs: Any, license_: str | None, expected: str | None
) -> None:
    _machine(fs, dep="updates/dkms/nvidia.ko:\n")
    fs.create_file(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko", contents=_module(license_))
    state = probe_nvidia_module(make_ctx())
    assert state is not None and state.module_flavor == expected


def test_a_compressed_or_broken_module_leaves_the_flavour_unknown(fs: Any) -> None:
    from cudadoctor.probes.kmod import parse_modinfo_license

    _machine(fs, dep="updates/dkms/nvidia.ko.zst:\n")
    fs.create_file(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko.zst", contents=_module("NVIDIA"))
    state = probe_nvidia_module(make_ctx())
    assert state is not None and state.module_flavor is None
    good = _module("NVIDIA")
    for broken in (b"", good[:40], good[:100], b"\x7fELF" + b"\xff" * 60, good[:0x28] + b"\xff" * 8 + good[0x30:]):

        def read(offset: int, length: int, data: bytes = broken) -> bytes:
            return data[offset : offset + length]

        assert parse_modinfo_license(read) is None


def test_an_open_module_and_a_gpu_missing_from_its_list_name_the_open_module_without_a_log(fs: Any) -> None:
    _machine(fs, device="0x1b80", dep="updates/dkms/nvidia.ko:\n", libcuda="580.95.05")  # a GTX 1080, no kernel log
    fs.create_file(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko", contents=_module("Dual MIT/GPL"))
    finding = _cd136(_facts())
    assert finding.message.startswith("the open NVIDIA kernel module is installed, and NVIDIA's list")
    assert "10de:1b80 is in no release's list" in finding.evidence["the open modules' GPU list"]
    assert finding.remediation is not None
    assert finding.remediation.commands == ("sudo apt install nvidia-driver-580", "sudo reboot")
    # the proprietary module, or a GPU the open modules list, is not this cause
    fs.remove_object(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko")
    fs.create_file(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko", contents=_module("NVIDIA"))
    assert "open NVIDIA kernel module" not in _cd136(_facts()).message


def test_an_open_module_and_a_listed_gpu_is_not_blamed_on_the_flavour(fs: Any) -> None:
    _machine(fs, device="0x2204", dep="updates/dkms/nvidia.ko:\n", libcuda="580.95.05")  # an RTX 3090
    fs.create_file(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko", contents=_module("Dual MIT/GPL"))
    assert "open NVIDIA kernel module" not in _cd136(_facts()).message


def test_a_gpu_named_only_with_its_subsystem_is_named_from_the_bus(fs: Any) -> None:
    """Tesla T4 is listed for 1EB8 with subsystem 10DE 12A2 only: the probe reads the subsystem to name it."""
    _machine(fs, device="0x1eb8", klass="0x030200", dep=DKMS_KO)
    fs.create_file("/sys/bus/pci/devices/0000:01:00.0/subsystem_vendor", contents="0x10de\n")
    fs.create_file("/sys/bus/pci/devices/0000:01:00.0/subsystem_device", contents="0x12a2\n")
    finding = _cd136(_facts())
    assert "Tesla T4 (0000:01:00.0)" in finding.message
    # the open module and a listed device ID (whatever its subsystem) is not an unlisted GPU
    fs.create_file(f"/lib/modules/{RELEASE}/updates/dkms/nvidia.ko", contents=_module("Dual MIT/GPL"))
    fs.remove_object("/lib/modules/" + RELEASE + "/modules.dep")
    _machine_dep(fs, "updates/dkms/nvidia.ko:\n")
    fs.remove_object("/sys/bus/pci/devices/0000:01:00.0/subsystem_device")
    assert "open NVIDIA kernel module" not in _cd136(_facts()).message
