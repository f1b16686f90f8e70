"""Tests for cudadoctor.probes.host: os-release, container and WSL signs, the environment kept.

Live-machine cases run under pyfakefs (a fake ``/``); image cases use a fake root under ``/img``.
Real data: the capture machine's os-release and environment (tests/fixtures/h200/capture.txt).
"""

from __future__ import annotations

import os
import platform

import pytest
from packaging.version import Version

from cudadoctor.facts.derive import intel_gpu_discrete
from cudadoctor.probes import host, loader
from tests.conftest import fixture_path, fixture_text, make_ctx


def _capture_env() -> dict[str, str]:
    """The environment block of the capture (``env | grep … | sort``)."""
    text = fixture_text("h200", "capture.txt")
    block = text.split("===== env |", 1)[1].split("\n", 1)[1].split("[rc=", 1)[0]
    return dict(line.split("=", 1) for line in block.splitlines() if "=" in line)


def _add_fixture(fs, name: str, target: str) -> None:
    fs.add_real_file(fixture_path("host", name), target_path=target)


# --- parsers --------------------------------------------------------------------------------------


def test_parse_os_release_from_the_capture():
    values = host.parse_os_release(fixture_text("host", "h200-os-release"))
    assert values["PRETTY_NAME"] == "Ubuntu 24.04.3 LTS"
    assert values["VERSION_ID"] == "24.04"
    assert values["ID_LIKE"] == "debian"
    assert values["LOGO"] == "ubuntu-logo"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("# comment\n\nnot a pair\n", {}),
        (
            'NAME=\'Fedora Linux\'\nPRETTY_NAME="a \\"quoted\\" name"\n',
            {"NAME": "Fedora Linux", "PRETTY_NAME": 'a "quoted" name'},
        ),
    ],
    ids=["empty", "junk", "quotes"],
)
def test_parse_os_release_edge_cases(text, expected):
    assert host.parse_os_release(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0::/process_api/core\n", []),  # the capture machine: cgroup v2 shows only a path
        ("0::/\n", []),
        ("", []),
        (
            "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope\n",
            [("/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope", "kubernetes")],
        ),
        (
            "0::/machine.slice/libpod-3f.scope/container\n",
            [("/machine.slice/libpod-3f.scope/container", "podman")],
        ),
    ],
    ids=["capture-v2", "root", "empty", "kubepods", "libpod"],
)
def test_parse_cgroup(text, expected):
    assert host.parse_cgroup(text) == expected


def test_parse_cgroup_v1_docker_fixture():
    found = host.parse_cgroup(fixture_text("host", "cgroup-v1-docker"))
    assert len(found) == 4
    assert {runtime for _, runtime in found} == {"docker"}


def test_parse_dpkg_version():
    text = (
        "Package: libc-bin\nStatus: install ok installed\nVersion: 2.39-0ubuntu8.4\n\n"
        "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.39-0ubuntu8.4\n\n"
    )
    assert host.parse_dpkg_version(text, "libc6") == "2.39-0ubuntu8.4"
    assert host.parse_dpkg_version(text, "libc6-dev") is None
    assert host.parse_dpkg_version("", "libc6") is None


# --- environment ----------------------------------------------------------------------------------


def test_collect_env_from_the_capture():
    env = _capture_env()
    env["HF_TOKEN"] = "hf_not_a_real_token"  # noqa: S105 - must not be collected
    env["NVIDIA_DISABLE_REQUIRES"] = "true"
    env["NCCL_DEBUG"] = "INFO"
    env["CUDNN_LOGINFO_DBG"] = "1"
    collected = {var.name: var for var in host.collect_env(env)}
    assert collected["CUDA_VERSION"].claims == "cuda 13.0.2"
    assert collected["NV_CUDNN_VERSION"].claims == "cudnn 9.14.0.64"
    assert collected["NV_CUDNN_VERSION"].value == "9.14.0.64-1"
    assert collected["NCCL_VERSION"].claims == "nccl 2.28.3"
    assert collected["NV_LIBNCCL_PACKAGE_VERSION"].value == "2.28.3-1"
    assert collected["NV_CUDA_LIB_VERSION"].claims is None
    assert collected["NVIDIA_REQUIRE_CUDA"].value.startswith("cuda>=13.0 brand=unknown,driver>=535")
    assert collected["LD_LIBRARY_PATH"].value == "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"
    assert collected["LIBRARY_PATH"].value == "/usr/local/cuda/lib64/stubs"
    assert collected["TORCH_CUDA_ARCH_LIST"].value == "9.0a"
    assert collected["NVIDIA_VISIBLE_DEVICES"].value == "0"
    assert collected["NVIDIA_DISABLE_REQUIRES"].value == "true"
    assert {"NCCL_DEBUG", "CUDNN_LOGINFO_DBG", "CUDA_HOME", "PATH"} <= set(collected)
    for dropped in (
        "HF_TOKEN",
        "NV_CUDNN_PACKAGE",
        "OCL_ICD_FILENAMES",
        "CUDAHOSTCXX",
        "NVIDIA_PRODUCT_NAME",
    ):
        assert dropped not in collected
    names = [var.name for var in host.collect_env(env)]
    assert names.index("NVIDIA_VISIBLE_DEVICES") < names.index("CUDA_VERSION") < names.index("PATH")
    assert names[-1] == "NVIDIA_DISABLE_REQUIRES"
    assert len(names) == len(set(names))


@pytest.mark.parametrize(("value", "claims"), [("12.4.1", "cuda 12.4.1"), ("", None), ("latest", None)])
def test_cuda_version_claims(value, claims):
    (var,) = host.collect_env({"CUDA_VERSION": value})
    assert var.claims == claims


# --- live machine ---------------------------------------------------------------------------------


def test_live_host_like_the_capture(fs, monkeypatch):
    fs.add_real_file(fixture_path("h200", "capture.txt"))
    _add_fixture(fs, "h200-os-release", "/etc/os-release")
    fs.create_file("/.dockerenv")
    fs.create_file("/proc/1/cgroup", contents="0::/process_api/core\n")
    fs.create_file("/proc/version", contents="Linux version 6.18.44-fc-v657-gpu (nixbld@) #1 SMP\n")
    monkeypatch.setattr(host, "kernel_release", lambda: "6.18.44-fc-v657-gpu")
    monkeypatch.setattr(host, "_live_glibc", lambda: Version("2.39"))
    env = _capture_env()
    ctx = make_ctx(env=env)
    info = host.probe_host(ctx)
    assert (info.os, info.arch, info.distro) == ("Linux", "x86_64", "Ubuntu 24.04.3 LTS")
    assert info.kernel == "6.18.44-fc-v657-gpu"
    assert info.glibc == Version("2.39")
    assert info.container is not None
    assert info.container.in_container is True
    assert info.container.runtime == "docker"
    assert info.container.markers == ("/.dockerenv",)  # the v2 cgroup path is not a signal
    assert info.wsl is False
    assert info.apple_silicon is False
    assert info.loader_paths == loader.search_dirs(ctx)
    assert info.loader_paths[:2] == ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")
    assert any(var.name == "CUDA_VERSION" for var in info.env)


def test_cgroup_v2_path_alone_is_not_a_container(fs):
    fs.create_file("/proc/1/cgroup", contents="0::/process_api/core\n")
    container = host.probe_host(make_ctx()).container
    assert container is not None
    assert (container.in_container, container.runtime, container.markers) == (False, None, ())


def test_cgroup_v1_docker(fs):
    _add_fixture(fs, "cgroup-v1-docker", "/proc/1/cgroup")
    container = host.probe_host(make_ctx()).container
    assert container is not None and container.in_container
    assert container.runtime == "docker"
    assert container.markers == (
        "/proc/1/cgroup: /docker/0f6b2bd1a6e3a1c0a4d8f8a0a2c5e2d1b7b0a3c9e8f7d6c5b4a3928170615243",
    )


def test_kubernetes_wins_over_docker(fs):
    fs.create_file("/.dockerenv")
    container = host.probe_host(make_ctx(env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})).container
    assert container is not None
    assert container.runtime == "kubernetes"
    assert container.markers == ("/.dockerenv", "KUBERNETES_SERVICE_HOST")


def test_podman_and_container_variable(fs):
    fs.create_file("/run/.containerenv")
    container = host.probe_host(make_ctx(env={"container": "podman"})).container
    assert container is not None
    assert container.runtime == "podman"
    assert container.markers == ("/run/.containerenv", "container=podman")


def test_container_variable_alone(fs):
    container = host.probe_host(make_ctx(env={"container": "oci"})).container
    assert container is not None
    assert (container.in_container, container.runtime) == (True, "oci")


@pytest.mark.parametrize("marker", ["proc-version", "dxg", "driver-store"])
def test_wsl(fs, marker):
    if marker == "proc-version":
        _add_fixture(fs, "wsl2-proc-version", "/proc/version")
    elif marker == "dxg":
        fs.create_file("/dev/dxg")
    else:
        fs.create_dir("/usr/lib/wsl/lib")
    assert host.probe_host(make_ctx()).wsl is True


def test_not_wsl(fs):
    fs.create_file("/proc/version", contents="Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) #45-Ubuntu\n")
    assert host.probe_host(make_ctx()).wsl is False


def test_apple_silicon(fs):
    info = host.probe_host(make_ctx(system="Darwin", machine="arm64"))
    assert (info.os, info.arch, info.apple_silicon) == ("Darwin", "arm64", True)
    assert host.probe_host(make_ctx(system="Darwin", machine="x86_64")).apple_silicon is False


def test_os_release_fallback_and_missing(fs):
    assert host.probe_host(make_ctx()).distro is None
    fs.create_file("/usr/lib/os-release", contents='NAME="Rocky Linux"\nVERSION="9.4 (Blue Onyx)"\n')
    assert host.probe_host(make_ctx()).distro == "Rocky Linux 9.4 (Blue Onyx)"


def test_live_glibc_from_confstr(monkeypatch):
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.39", raising=False)
    assert host._live_glibc() == Version("2.39")
    monkeypatch.setattr(os, "confstr", lambda name: None, raising=False)
    assert host._live_glibc() is None

    def unknown(name):
        raise ValueError("unrecognized configuration name")

    monkeypatch.setattr(os, "confstr", unknown, raising=False)
    assert host._live_glibc() is None


def test_live_glibc_of_this_machine():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("not a glibc system")
    assert host._live_glibc() is not None


# --- image root -----------------------------------------------------------------------------------


def test_image_root(fs):
    _add_fixture(fs, "h200-os-release", "/img/etc/os-release")
    fs.create_dir("/img/usr/lib/aarch64-linux-gnu")
    fs.create_file("/img/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1")
    fs.create_symlink("/img/lib", "usr/lib")
    fs.create_symlink("/img/usr/lib/ld-linux-aarch64.so.1", "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1")
    fs.create_dir("/img/usr/lib/wsl/lib")  # an image is not running on WSL
    fs.create_file("/img/.dockerenv")
    fs.create_file(
        "/img/var/lib/dpkg/status",
        contents="Package: libc6\nStatus: install ok installed\nVersion: 2.39-0ubuntu8.4\n\n",
    )
    fs.create_file("/proc/version", contents="Linux version 5.15.167.4-microsoft-standard-WSL2\n")
    ctx = make_ctx(root="/img", machine="x86_64", env={"CUDA_VERSION": "12.8.1", "PATH": "/usr/bin"})
    info = host.probe_host(ctx)
    assert info.arch == "aarch64"
    assert info.distro == "Ubuntu 24.04.3 LTS"
    assert info.kernel is None
    assert info.glibc == Version("2.39")
    assert info.wsl is False
    assert info.container is not None
    assert info.container.in_container is True
    assert info.container.markers == ("image root", "/.dockerenv")
    assert info.container.runtime == "docker"
    assert [var.name for var in info.env] == ["CUDA_VERSION", "PATH"]


def test_image_root_old_glibc_file_name_and_unknown_arch(fs):
    fs.create_file("/img/lib/x86_64-linux-gnu/libc-2.31.so")
    fs.create_symlink("/img/lib/x86_64-linux-gnu/libc.so.6", "libc-2.31.so")
    info = host.probe_host(make_ctx(root="/img", machine="ppc64le"))
    assert info.arch == "ppc64le"  # no loader or multiarch dir: the machine's own
    assert info.glibc is None  # looked up for ppc64le's triplet, then the generic dirs: not found there
    info = host.probe_host(make_ctx(root="/img", machine="x86_64"))
    assert info.glibc == Version("2.31")
    assert info.container is not None and info.container.markers == ("image root",)
    assert info.container.runtime is None


def test_image_root_without_anything(fs):
    fs.create_dir("/img")
    info = host.probe_host(make_ctx(root="/img"))
    assert (info.distro, info.kernel, info.glibc, info.env) == (None, None, None, ())


def test_image_arch_is_ambiguous_with_two_loaders(fs):
    fs.create_file("/img/lib64/ld-linux-x86-64.so.2")
    fs.create_file("/img/lib/ld-linux-aarch64.so.1")
    fs.create_dir("/img/usr/lib/x86_64-linux-gnu")
    assert host.image_arch(make_ctx(root="/img")) == "x86_64"  # the multiarch dirs decide


def test_rocm_version_and_jetson_release_are_parsed():
    assert host.parse_rocm_version("6.4.1-120\n") == Version("6.4.1")
    assert host.parse_rocm_version("garbage") is None
    tegra = "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8\n"
    assert host.parse_l4t_release(tegra) == "R36.4.3"
    assert host.parse_l4t_release("nothing here") is None


def test_amd_jetson_and_intel_signs_are_host_facts(fs):
    fs.create_file("/opt/rocm/.info/version", contents="6.1.3-122\n")
    fs.create_dir("/sys/module/amdgpu")
    fs.create_dir("/sys/module/xe")
    fs.create_file("/etc/nv_tegra_release", contents="# R35 (release), REVISION: 6.0, GCID: 1\n")
    info = host.probe_host(make_ctx())
    assert (info.rocm_version, info.amdgpu_driver) == (Version("6.1.3"), True)
    assert (info.jetson_l4t, info.intel_gpu_driver) == ("R35.6.0", "xe")


def test_a_plain_host_has_no_other_accelerator(fs):
    info = host.probe_host(make_ctx())
    assert (info.rocm_version, info.amdgpu_driver, info.jetson_l4t, info.intel_gpu_driver) == (None, False, None, None)


def _drm_card(fs, card: str, uevent: str) -> None:
    fs.create_file(f"/sys/class/drm/{card}/device/uevent", contents=uevent)


def test_intel_display_devices_are_read_from_the_drm_cards(fs):
    # the keys the kernel's PCI uevent writes; a connector's device is the DRM card, without PCI keys
    _drm_card(fs, "card0", "DRIVER=i915\nPCI_CLASS=30000\nPCI_ID=8086:A7A0\nPCI_SLOT_NAME=0000:00:02.0\n")
    _drm_card(fs, "card0-eDP-1", "MAJOR=226\nMINOR=0\nDEVNAME=dri/card0\n")
    _drm_card(fs, "card1", "DRIVER=xe\nPCI_CLASS=30000\nPCI_ID=8086:e20b\nPCI_SLOT_NAME=0000:03:00.0\n")
    _drm_card(fs, "card2", "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2684\nPCI_SLOT_NAME=0000:41:00.0\n")
    _drm_card(fs, "card3", "DRIVER=snd_hda_intel\nPCI_CLASS=40300\nPCI_ID=8086:7A50\nPCI_SLOT_NAME=0000:00:1f.3\n")
    info = host.probe_host(make_ctx())
    assert info.intel_gpus == ("0000:00:02.0 8086:A7A0", "0000:03:00.0 8086:E20B")
    assert [intel_gpu_discrete(g) for g in info.intel_gpus] == [False, True]
    assert host.parse_drm_uevent("PCI_CLASS=garbage\nPCI_ID=8086:1\nPCI_SLOT_NAME=x\n") is None
    fs.create_file("/img/sys/class/drm/card1/device/uevent", contents="PCI_CLASS=30000\nPCI_ID=8086:56A0\n")
    assert host.probe_host(make_ctx(root="/img")).intel_gpus == ()  # an image root has no running kernel


def test_this_machine_is_what_platform_says() -> None:
    """The context's machine, system and kernel release come from os.uname (the platform module is not imported
    on check's path); they are platform's answers."""
    from cudadoctor.probes.context import ProbeContext, kernel_release

    ctx = ProbeContext()
    assert (ctx.machine, ctx.system, kernel_release()) == (platform.machine(), platform.system(), platform.release())
