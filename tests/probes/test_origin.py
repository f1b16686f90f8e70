"""Tests for cudadoctor.probes.origin: a host's own system or a container image, and the managed platform.

Live-machine cases run under pyfakefs (a fake ``/``); roots are fake trees under ``/img``, as ``--root`` reads an
exported image or a mounted host disk.
"""

from __future__ import annotations

import pytest

from cudadoctor.facts.model import RootMarker, Source, SourceKind
from cudadoctor.probes.origin import decide_root_kind, parse_mount_points, probe_platform, probe_root_kind
from tests.conftest import make_ctx

MODULE = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n"
DPKG_KERNEL = "Package: linux-image-6.8.0-45-generic\nStatus: install ok installed\nVersion: 6.8.0-45.45\n"


def _root(fs, files: dict[str, str], env: dict[str, str] | None = None):
    for path, text in files.items():
        fs.create_file("/img" + path, contents=text)
    fs.create_dir("/img/usr")
    return make_ctx(root="/img", env=env)


@pytest.mark.parametrize(
    ("files", "env", "kind", "where"),
    [
        ({"/.dockerenv": ""}, {}, "image", "/.dockerenv"),  # docker export of a container
        ({"/run/.containerenv": ""}, {}, "image", "/run/.containerenv"),  # podman
        ({}, {"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}, "image", "NVIDIA_REQUIRE_CUDA"),  # nvidia/cuda's env file
        ({"/boot/vmlinuz-6.8.0-45-generic": ""}, {}, "host", "/boot/vmlinuz-6.8.0-45-generic"),  # Ubuntu disk
        ({"/lib/modules/6.12.0-55.el10.x86_64/vmlinuz": ""}, {}, "host", "/lib/modules/6.12.0-55.el10.x86_64/vmlinuz"),
        ({"/var/lib/dpkg/status": DPKG_KERNEL}, {}, "host", "/var/lib/dpkg/status"),  # /boot on its own partition
    ],
    ids=["dockerenv", "containerenv", "image-env", "boot-kernel", "rhel-kernel", "dpkg-kernel"],
)
def test_root_kind_from_one_marker(fs, files, env, kind, where):
    found = probe_root_kind(_root(fs, files, env))
    assert found.kind == kind
    assert found.source is not None and found.source.where == where


def test_a_removed_kernel_package_is_no_marker(fs):
    stanza = DPKG_KERNEL.replace("install ok installed", "deinstall ok config-files")
    found = probe_root_kind(_root(fs, {"/var/lib/dpkg/status": stanza}))
    assert (found.kind, found.source, found.markers) == ("unknown", None, ())


def test_contradicting_markers_are_unknown_and_kept(fs):
    """An image with a kernel installed: neither kind is taken; both markers are reported."""
    found = probe_root_kind(_root(fs, {"/.dockerenv": "", "/boot/vmlinuz-6.8.0-45-generic": ""}))
    assert found.kind == "unknown" and found.source is None
    assert {m.kind for m in found.markers} == {"image", "host"}


def test_a_root_never_reads_this_machines_cgroups_or_mounts(fs):
    fs.create_file("/proc/1/cgroup", contents="0::/init.scope\n")
    fs.create_file("/proc/self/mountinfo", contents="1 0 0:1 / /usr/lib/libcuda.so.550.90.07 ro - x x ro\n")
    found = probe_root_kind(_root(fs, {"/.dockerenv": ""}))
    assert found.kind == "image" and found.mounted_driver_files == ()


@pytest.mark.parametrize("cgroup", ["0::/init.scope\n", "12:pids:/init.scope\n1:name=systemd:/init.scope\n"],
                         ids=["v2", "v1"])  # fmt: skip
def test_live_host_from_systemds_init_scope(fs, cgroup):
    fs.create_file("/proc/1/cgroup", contents=cgroup)
    found = probe_root_kind(make_ctx())
    assert found.kind == "host" and found.source == Source(SourceKind.FILE, "/proc/1/cgroup")


def test_live_loaded_module_and_no_container_marker_is_a_host(fs):
    fs.create_file("/proc/driver/nvidia/version", contents=MODULE)
    found = probe_root_kind(make_ctx())
    assert found.kind == "host" and found.source == Source(SourceKind.FILE, "/proc/driver/nvidia/version")


def test_live_container_sees_the_module_too_and_is_an_image(fs):
    """procfs is the host kernel's: in a container the module's file is there, and says nothing of a host."""
    fs.create_file("/proc/driver/nvidia/version", contents=MODULE)
    fs.create_file("/.dockerenv")
    fs.create_file(
        "/proc/self/mountinfo",
        contents="612 590 259:1 /usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07 "
        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07 ro,nosuid,nodev,relatime master:1 - ext4 /dev/root rw\n"
        "613 590 259:1 /etc/hosts /etc/hosts rw - ext4 /dev/root rw\n",
    )
    found = probe_root_kind(make_ctx())
    assert found.kind == "image"
    assert [m.kind for m in found.markers] == ["image"]
    assert found.mounted_driver_files == ("/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07",)


def test_live_kubernetes_pod_is_an_image(fs):
    found = probe_root_kind(make_ctx(env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"}))
    assert found.kind == "image" and found.source == Source(SourceKind.ENV, "KUBERNETES_SERVICE_HOST")


def test_live_without_any_marker_is_unknown(fs):
    assert probe_root_kind(make_ctx()).kind == "unknown"


def test_decide_needs_agreement():
    host = RootMarker("host", Source(SourceKind.FILE, "/boot/vmlinuz"))
    image = RootMarker("image", Source(SourceKind.FILE, "/.dockerenv"))
    assert decide_root_kind((host,)) == ("host", host.source)
    assert decide_root_kind((image, image)) == ("image", image.source)
    assert decide_root_kind((image, host)) == ("unknown", None)
    assert decide_root_kind(()) == ("unknown", None)


def test_parse_mount_points_decodes_escapes():
    text = "36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 - ext3 /dev/root rw\nshort line\n"
    assert parse_mount_points(text) == ("/mnt two",)


# --- managed platforms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "name", "where"),
    [
        ({"COLAB_RELEASE_TAG": "release-colab_20250923-060058_RC00"}, "Google Colab", "COLAB_RELEASE_TAG"),
        ({"COLAB_GPU": "1"}, "Google Colab", "COLAB_GPU"),
        ({"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, "Kaggle", "KAGGLE_KERNEL_RUN_TYPE"),
        ({"SM_TRAINING_ENV": "{}"}, "Amazon SageMaker", "SM_TRAINING_ENV"),
        ({"AIP_MODEL_DIR": "gs://bucket/model/"}, "Vertex AI training", "AIP_MODEL_DIR"),
        ({"DATABRICKS_RUNTIME_VERSION": "15.4"}, "Databricks", "DATABRICKS_RUNTIME_VERSION"),
    ],
    ids=["colab-tag", "colab-gpu", "kaggle", "sagemaker-training", "vertex", "databricks"],
)
def test_platform_from_its_variable(fs, env, name, where):
    found = probe_platform(make_ctx(env=env))
    assert found is not None
    assert (found.name, found.source) == (name, Source(SourceKind.ENV, where))


@pytest.mark.parametrize(
    "path", ["/opt/ml/input/config/resourceconfig.json", "/opt/ml/metadata/resource-metadata.json"]
)
def test_sagemaker_from_its_files(fs, path):
    fs.create_file(path, contents="{}")
    found = probe_platform(make_ctx())
    assert found is not None and found.name == "Amazon SageMaker" and found.source.where == path


def test_no_platform_on_an_ordinary_machine(fs):
    fs.create_dir("/opt/ml")  # a directory of that name alone says nothing
    assert probe_platform(make_ctx(env={"HOME": "/root", "COLAB_GPU": ""})) is None


@pytest.mark.parametrize(
    ("files", "env"),
    [
        ({"/run/systemd/container": "lxc\n"}, {}),
        ({}, {"container": "systemd-nspawn"}),
        ({"/proc/1/cgroup": "0::/lxc/c1\n"}, {}),
    ],
    ids=["lxc-file", "nspawn-env", "lxc-cgroup"],
)
def test_a_system_container_is_no_image(fs, files, env):
    """LXC and nspawn guests install the user-space driver themselves, to match the host's module: removing it is
    no fix, so they never count as an image."""
    for path, text in files.items():
        fs.create_file(path, contents=text)
    found = probe_root_kind(make_ctx(env=env))
    assert "image" not in {m.kind for m in found.markers}


def test_the_container_files_are_read_once_for_the_host_and_the_root_kind(fs):
    from cudadoctor.probes.host import probe_host

    fs.create_file("/.dockerenv")
    fs.create_file("/proc/1/cgroup", contents="0::/\n")
    ctx = make_ctx()
    host = probe_host(ctx)
    assert host.container is not None and host.container.markers == ("/.dockerenv",)
    fs.remove_object("/.dockerenv")  # the root-kind probe answers from the same reading
    found = probe_root_kind(ctx)
    assert found.kind == "image" and found.source == Source(SourceKind.FILE, "/.dockerenv")
    assert probe_root_kind(make_ctx()).kind != "image"  # a new run reads them again
