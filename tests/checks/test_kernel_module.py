"""CD136: an NVIDIA GPU on the PCI bus with no NVIDIA kernel module loaded (nvidia-smi's "couldn't communicate
with the NVIDIA driver"), and the cause the files show; CD120's use of /sys/module in a container.

Machines are fake trees (pyfakefs) probed as the live machine or as ``--root`` probes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Finding, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.health import HealthInfo
from cudadoctor.facts.model import Facts, GpuInfo
from cudadoctor.facts.source import Source, SourceKind
from cudadoctor.probes.collect import collect_facts
from cudadoctor.probes.kmod import nvidia_module_files, probe_nvidia_module
from tests.conftest import make_ctx

MATRIX = CompatMatrix()
# read compat/ now, from the real disk: the tests run under pyfakefs
_ = (MATRIX.gpu_devices, MATRIX.gpu_archs, MATRIX.driver_branches, MATRIX.cuda_releases)
RELEASE = "6.8.0-49-generic"
UBUNTU = 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nID=ubuntu\n'
ADDR = "0000:01:00.0"
LIB = "/usr/lib/x86_64-linux-gnu"


def _machine(
    fs: Any,
    prefix: str = "",
    *,
    device: str = "0x2204",
    klass: str = "0x030000",
    bound: str | None = None,
    modules: tuple[str, ...] = ("ext4",),
    dep: str | None = "kernel/fs/ext4/ext4.ko.zst: kernel/fs/jbd2/jbd2.ko.zst\n",
    os_release: str = UBUNTU,
    dkms: bool = False,
    libcuda: str | None = None,
    proc_version: bool = False,
) -> None:
    """A machine with one NVIDIA function on the PCI bus, the given modules loaded and the running kernel's
    modules.dep."""
    dev = f"{prefix}/sys/bus/pci/devices/{ADDR}"
    fs.create_file(f"{dev}/vendor", contents="0x10de\n")
    fs.create_file(f"{dev}/device", contents=device + "\n")
    fs.create_file(f"{dev}/class", contents=klass + "\n")
    if bound:
        fs.create_dir(f"{prefix}/sys/bus/pci/drivers/{bound}")
        fs.create_symlink(f"{dev}/driver", f"../../../bus/pci/drivers/{bound}")
    for module in modules:
        fs.create_dir(f"{prefix}/sys/module/{module}")
    fs.create_file(f"{prefix}/proc/sys/kernel/osrelease", contents=RELEASE + "\n")
    if dep is not None:
        fs.create_file(f"{prefix}/lib/modules/{RELEASE}/modules.dep", contents=dep)
    fs.create_file(f"{prefix}/etc/os-release", contents=os_release)
    if dkms:
        fs.create_dir(f"{prefix}/var/lib/dkms/nvidia/550.127.05")
    if libcuda:
        fs.create_file(f"{prefix}{LIB}/libcuda.so.{libcuda}")
        fs.create_symlink(f"{prefix}{LIB}/libcuda.so.1", f"libcuda.so.{libcuda}")
    if proc_version:
        fs.create_file(
            f"{prefix}/proc/driver/nvidia/version",
            contents="NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n",
        )


def _facts(root: str = "/", env: dict[str, str] | None = None) -> Facts:
    return collect_facts(make_ctx(root=root, env=env))


def _cd136(facts: Facts) -> Finding:
    (finding,) = run_checks(facts, MATRIX, select=("CD136",))
    return finding


def test_the_probe_reads_the_pci_gpu_its_driver_and_the_module_files(fs: Any) -> None:
    dep = "updates/dkms/nvidia.ko.zst: kernel/drivers/video/fbdev/core/fb.ko.zst\nupdates/dkms/nvidia-uvm.ko.zst:\n"
    _machine(fs, bound="nouveau", modules=("nouveau", "ext4"), dep=dep, dkms=True)
    fs.create_file("/sys/bus/pci/devices/0000:00:1f.3/vendor", contents="0x8086\n")  # not NVIDIA
    fs.create_file("/sys/bus/pci/devices/0000:00:1f.3/class", contents="0x040300\n")
    state = probe_nvidia_module(make_ctx())
    assert state is not None
    assert [(g.address, g.device, g.driver) for g in state.pci_gpus] == [(ADDR, "2204", "nouveau")]
    assert state.nvidia_loaded is False and state.nouveau_loaded
    assert state.kernel_release == RELEASE
    assert state.nvidia_module_files == ("updates/dkms/nvidia.ko.zst",)
    assert state.dkms_registered


def test_the_probe_answers_none_without_an_nvidia_gpu_and_unknown_without_sysfs_modules(fs: Any) -> None:
    assert probe_nvidia_module(make_ctx()) is None
    fs.create_file(f"/sys/bus/pci/devices/{ADDR}/vendor", contents="0x10de\n")
    fs.create_file(f"/sys/bus/pci/devices/{ADDR}/class", contents="0x068000\n")  # an NVSwitch, not a GPU
    assert probe_nvidia_module(make_ctx()) is None
    fs.create_file("/sys/bus/pci/devices/0000:02:00.0/vendor", contents="0x10de\n")
    fs.create_file("/sys/bus/pci/devices/0000:02:00.0/class", contents="0x030200\n")
    state = probe_nvidia_module(make_ctx())
    assert state is not None and state.nvidia_loaded is None  # no /sys/module to list
    assert state.nvidia_module_files is None  # no /proc/sys/kernel/osrelease


@pytest.mark.parametrize(
    ("dep", "files"),
    [
        ("kernel/nvidia-550/nvidia.ko: \n", ("kernel/nvidia-550/nvidia.ko",)),
        ("extra/drivers/video/nvidia/nvidia.ko.xz:\n", ("extra/drivers/video/nvidia/nvidia.ko.xz",)),
        ("kernel/drivers/video/nvidia.ko:\n", ("kernel/drivers/video/nvidia.ko",)),
        ("updates/dkms/nvidia-drm.ko.zst: updates/dkms/nvidia.ko.zst\n", ()),  # only a dependency of another
        ("kernel/drivers/gpu/drm/nouveau/nouveau.ko.zst:\n", ()),
    ],
)
def test_module_files_are_the_nvidia_module_itself_where_distributions_put_it(dep: str, files: tuple[str, ...]) -> None:
    assert nvidia_module_files(dep) == files


def test_no_module_for_the_running_kernel_with_dkms_registered_rebuilds_it(fs: Any) -> None:
    _machine(fs, dkms=True, libcuda="550.127.05")
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert "no NVIDIA kernel module for the running kernel 6.8.0-49-generic" in finding.message
    assert "NVIDIA GeForce RTX 3090 (0000:01:00.0)" in finding.message
    assert "user-space driver 550.127.05 is installed" in finding.message
    assert finding.evidence[f"/lib/modules/{RELEASE}/modules.dep"] == "lists no nvidia.ko"
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "sudo apt-get install linux-headers-$(uname -r)",
        "sudo dkms autoinstall",
        "sudo modprobe nvidia",
    )


@pytest.mark.parametrize(
    ("pretty", "headers"),
    [
        ("Rocky Linux 9.4 (Blue Onyx)", "sudo dnf install kernel-devel-matched kernel-headers"),
        ("Fedora Linux 40 (Workstation Edition)", "sudo dnf install kernel-devel-matched kernel-headers"),
        ("Red Hat Enterprise Linux 8.9 (Ootpa)", None),  # no kernel-devel-matched package on EL 8
        ("CentOS Linux 7 (Core)", None),  # yum, no dnf
    ],
)
def test_dkms_rebuild_on_an_rpm_distribution_prints_the_headers_line_only_where_it_runs(
    fs: Any, pretty: str, headers: str | None
) -> None:
    _machine(fs, dkms=True, libcuda="550.127.05", os_release=f'PRETTY_NAME="{pretty}"\n')
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL and finding.remediation is not None
    expected = () if headers is None else (headers, "sudo dkms autoinstall", "sudo modprobe nvidia")
    assert finding.remediation.commands == expected
    assert "sudo dkms autoinstall" in finding.remediation.text


def test_no_module_without_dkms_names_the_user_space_version_and_prints_no_guessed_package(fs: Any) -> None:
    _machine(fs, libcuda="550.127.05")
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == ()
    assert "kernel module of driver 550.127.05 for kernel 6.8.0-49-generic" in finding.remediation.text


def test_a_module_source_left_in_usr_src_without_dkms_is_built_with_dkms_install(fs: Any) -> None:
    """The source of the user-space driver's version in /usr/src, DKMS not set up: install dkms and build it."""
    _machine(fs, libcuda="410.78")
    fs.create_file("/usr/src/nvidia-410.78/dkms.conf")
    fs.create_file("/usr/src/nvidia-390.116/dkms.conf")  # another version's leftover source is not chosen
    finding = _cd136(_facts())
    assert finding.evidence["module source"] == "/usr/src/nvidia-390.116, /usr/src/nvidia-410.78"
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "sudo apt-get install dkms linux-headers-$(uname -r)",
        "sudo dkms install -m nvidia -v 410.78",
        "sudo modprobe nvidia",
    )


def test_nouveau_holding_the_gpu_is_blacklisted_with_the_distributions_initramfs_tool(fs: Any) -> None:
    _machine(fs, bound="nouveau", modules=("nouveau",), dep="kernel/nvidia-550/nvidia.ko:\n")
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert "nouveau driver holds the GPU" in finding.message
    assert finding.evidence["nouveau"] == "loaded (/sys/module/nouveau), bound to the GPU"
    assert finding.remediation is not None
    assert finding.remediation.commands[1:] == ("sudo update-initramfs -u", "sudo reboot")
    assert "blacklist nouveau" in finding.remediation.commands[0]


def test_nouveau_on_rhel_uses_dracut_and_an_unknown_distribution_gets_text_only(fs: Any) -> None:
    _machine(fs, modules=("nouveau",), dep="extra/nvidia.ko.xz:\n", os_release='PRETTY_NAME="Rocky Linux 9.4"\n')
    finding = _cd136(_facts())
    assert finding.remediation is not None and "sudo dracut --force" in finding.remediation.commands
    fs.remove_object("/etc/os-release")
    fs.create_file("/etc/os-release", contents='PRETTY_NAME="Gentoo Linux"\n')
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert finding.remediation.commands == ()


def test_a_module_that_is_installed_but_not_loaded_is_loaded_by_modprobe(fs: Any) -> None:
    _machine(fs, dep="updates/dkms/nvidia.ko.zst:\n", libcuda="550.127.05")
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert "although the module for the running kernel is installed" in finding.message
    assert finding.remediation is not None and finding.remediation.commands == ("sudo modprobe nvidia",)
    assert "Key was rejected by service" in finding.remediation.text


def test_a_gpu_missing_from_the_device_table_is_named_by_its_pci_id(fs: Any) -> None:
    _machine(fs, device="0xffff", klass="0x030200", dep="updates/dkms/nvidia.ko.zst:\n")
    assert "NVIDIA GPU 10de:ffff (0000:01:00.0)" in _cd136(_facts()).message


def test_a_loaded_module_is_ok_by_sysfs_or_proc(fs: Any) -> None:
    _machine(fs, modules=("nvidia",))
    assert _cd136(_facts()).status is Status.OK
    fs.remove_object("/sys/module/nvidia")
    assert _cd136(_facts()).status is Status.FAIL
    # /proc/driver/nvidia/version alone (a /sys/module that does not show it) also says the module is loaded
    fs.create_file(
        "/proc/driver/nvidia/version", contents="NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05\n"
    )
    state = probe_nvidia_module(make_ctx())
    assert state is not None and state.nvidia_loaded is True
    assert state.kernel_release is None and state.nvidia_module_files is None  # a loaded module needs no why


def test_no_gpu_on_the_bus_is_not_applicable(fs: Any) -> None:
    fs.create_file("/etc/os-release", contents=UBUNTU)
    fs.create_dir("/sys/module/ext4")
    assert _cd136(_facts()).status is Status.NOT_APPLICABLE


def test_gpus_passed_through_to_a_vm_are_not_flagged(fs: Any) -> None:
    _machine(fs, bound="vfio-pci", modules=("vfio_pci",))
    finding = _cd136(_facts())
    assert finding.status is Status.NOT_APPLICABLE and "vfio-pci" in (finding.reason or "")


def test_unlistable_sys_module_could_not_judge(fs: Any) -> None:
    _machine(fs, modules=())
    assert _cd136(_facts()).status is Status.UNKNOWN


def test_a_container_without_the_hosts_module_points_at_the_host(fs: Any) -> None:
    _machine(fs, dep=None)
    fs.create_file("/.dockerenv")
    finding = _cd136(_facts())
    assert finding.status is Status.FAIL
    assert "the host's NVIDIA kernel module is not loaded" in finding.message
    assert "/lib/modules" not in " ".join(finding.evidence)  # the container's /lib/modules says nothing of the host's
    assert finding.remediation is not None and "on the host" in finding.remediation.text


def test_cd120_takes_the_module_in_sys_module_as_the_hosts_driver(fs: Any) -> None:
    """A container started without --gpus where /proc/driver/nvidia is masked: /sys/module shows the host's module,
    so CD120 says to start it with its GPUs, and CD136 is OK."""
    _machine(fs, modules=("nvidia",), dep=None)
    fs.create_file("/.dockerenv")
    fs.create_file("/usr/local/cuda-12.4/version.json", contents='{"cuda": {"version": "12.4.1"}}')
    facts = _facts(env={"PATH": "/usr/local/cuda-12.4/bin:/usr/bin"})
    assert _cd136(facts).status is Status.OK
    (cd120,) = run_checks(facts, MATRIX, select=("CD120",))
    assert cd120.status is Status.FAIL, cd120.message
    assert cd120.evidence["kernel module"] == "nvidia loaded (/sys/module/nvidia)"
    assert cd120.remediation is not None and "--gpus all" in " ".join(cd120.remediation.commands)


def test_under_root_a_hosts_tree_is_judged_and_an_image_root_is_not(fs: Any) -> None:
    _machine(fs, "/host", dkms=True, libcuda="550.127.05")
    fs.create_file(f"/host/boot/vmlinuz-{RELEASE}")
    finding = _cd136(_facts("/host"))
    assert finding.status is Status.FAIL, finding.message
    assert "no NVIDIA kernel module for the running kernel" in finding.message
    # an image root has no PCI bus of its own: nothing to judge
    fs.create_file("/img/etc/os-release", contents=UBUNTU)
    fs.create_file("/img/.dockerenv")
    assert _cd136(_facts("/img")).status is Status.NOT_APPLICABLE


def test_never_fires_where_a_gpu_answered(fs: Any) -> None:
    """NVML (or /proc/driver/nvidia/gpus) answering proves the module is loaded, whatever sysfs shows here."""
    _machine(fs, dep="")
    facts = _facts()
    assert _cd136(facts).status is Status.FAIL
    gpu = GpuInfo(0, "NVIDIA GeForce RTX 3090", "8.6", Source(SourceKind.API, "nvmlDeviceGetName"))
    assert _cd136(replace(facts, gpus=(gpu,))).status is Status.OK
    assert _cd136(replace(facts, health=HealthInfo(nvml_count=1))).status is Status.OK
    assert _cd136(replace(facts, health=HealthInfo(nvml_error="Driver Not Loaded"))).status is Status.FAIL


def test_why_names_cd136_for_nvidia_smis_couldnt_communicate(fs: Any) -> None:
    """`cudadoctor why` on nvidia-smi's message names the module that is not loaded, from the real finding."""
    from cudadoctor.why.decide import Verdict, diagnose
    from cudadoctor.why.matching import recognise
    from cudadoctor.why.reading import from_argument

    _machine(fs, dkms=True, libcuda="550.127.05")
    facts = _facts()
    fs.pause()  # every check runs, reading compat/ from the real disk
    findings = run_checks(facts, MATRIX)
    line = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest"
    answer = diagnose(
        recognise(from_argument(line).lines, MATRIX.error_messages),
        findings,
        MATRIX.error_causes,
        deep=False,
        health=False,
    )
    assert answer.verdict == Verdict.CAUSE
    assert answer.cause is not None and answer.cause.code == "CD136"


def test_a_loaded_module_is_seen_without_listing_sys_module(fs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(fs, modules=("nvidia", "nouveau", "ext4"))
    ctx = make_ctx()
    listed: list[str] = []
    listdir = ctx.fs.listdir

    def recorded(path: str) -> list[str]:
        listed.append(path)
        return listdir(path)

    monkeypatch.setattr(ctx.fs, "listdir", recorded)
    state = probe_nvidia_module(ctx)
    assert state is not None and state.nvidia_loaded is True and state.nouveau_loaded is True
    assert state.kernel_release is None and "/sys/module" not in listed  # modules.dep and the listing: not asked
