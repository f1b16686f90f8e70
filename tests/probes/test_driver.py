"""Tests for cudadoctor.probes.driver: parsers over captured and public formats, and the probe on
the captured H200 tree (pyfakefs) with fake native calls and a fake nvidia-smi."""

from __future__ import annotations

import os

import pytest
from packaging.version import Version

from cudadoctor.facts.model import DriverVersion, LibcudaFile, Source, SourceKind
from cudadoctor.probes.driver import (
    SMI_QUERY_ARGV,
    SmiGpu,
    find_libcuda_files,
    libcuda_kind,
    parse_driver_version,
    parse_nvidia_smi_query,
    parse_proc_driver_version,
    parse_sys_module_version,
    probe_driver,
    query_nvidia_smi,
)
from cudadoctor.probes.native import LibcudaResult, NvmlResult
from tests.conftest import FIXTURES, FakeNative, FakeRunner, fixture_text, make_ctx
from tests.h200_fixture import LIBCUDA, NVML, SMI_OUTPUT, SMI_QUERY, build_tree, h200_env, h200_runner

V = Version
SMI_WHERE = " ".join(SMI_QUERY)
HOST_LIBCUDA = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
COMPAT_LIBCUDA = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
STUB_LIBCUDA = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so"
JUNK = ["", "\n\n", "garbage\n", "\x00\x7fELF\x02\x01\x01\ufffd\ufffd\x00", "\ufffd" * 40]
JUNK_IDS = ["empty", "blank-lines", "word", "binary", "replacement-chars"]


def _error_messages(ctx) -> list[str]:
    return [e.message for e in ctx.errors]


# --- parsers --------------------------------------------------------------------------------------


def test_query_argv_is_the_shared_h200_query() -> None:
    assert SMI_QUERY_ARGV == SMI_QUERY


@pytest.mark.parametrize(
    ("fixture", "version", "flavour", "arch"),
    [
        ("proc-version-580.159.04-open-x86_64.txt", "580.159.04", "open", "x86_64"),
        ("proc-version-575.57.08-open-x86_64.txt", "575.57.08", "open", "x86_64"),
        ("proc-version-580.65.06-open-aarch64.txt", "580.65.06", "open", "aarch64"),
        ("proc-version-515.76-proprietary-x86_64.txt", "515.76", "proprietary", "x86_64"),
        ("proc-version-177.80-proprietary-x86_64.txt", "177.80", "proprietary", "x86_64"),
    ],
    ids=["captured-580-open", "575-open", "580-open-aarch64", "515-proprietary", "177-proprietary"],
)
def test_parse_proc_driver_version(fixture: str, version: str, flavour: str, arch: str) -> None:
    module = parse_proc_driver_version(fixture_text("driver", fixture))
    assert module is not None
    assert module.version == V(version)
    assert (module.flavour, module.arch) == (flavour, arch)
    assert module.source == Source(SourceKind.FILE, "/proc/driver/nvidia/version")


def test_captured_proc_version_is_the_h200_tree_file() -> None:
    assert fixture_text("driver", "proc-version-580.159.04-open-x86_64.txt") == fixture_text(
        "h200", "tree", "proc", "driver", "nvidia", "version"
    )


@pytest.mark.parametrize(
    "text",
    [
        *JUNK,
        "GCC version:  gcc version 15.3.0 (GCC)\n",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  banana  Mon Sep 12\n",
        "NVRM version: something else 580.159.04\n",
        "hello 580.159.04 Kernel Module\n",
    ],
    ids=[*JUNK_IDS, "gcc-line-only", "no-version-token", "no-kernel-module", "not-nvrm"],
)
def test_parse_proc_driver_version_rejects_junk(text: str) -> None:
    assert parse_proc_driver_version(text) is None


def test_parse_proc_driver_version_uses_line_one_only() -> None:
    # The GCC line carries a version too (15.3.0); it must never become the driver version.
    text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  Release Build\nGCC version: 15.3.0\n"
    assert parse_proc_driver_version(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (fixture_text("h200", "tree", "sys", "module", "nvidia", "version"), V("580.159.04")),
        ("535.104\n", V("535.104")),
        *[(junk, None) for junk in JUNK],
        ("580\n", None),
        ("580.159.04-rc1\n", None),
        ("580.159.04\n575.57.08\n", None),
    ],
    ids=["captured", "two-part", *JUNK_IDS, "major-only", "suffix", "two-lines"],
)
def test_parse_sys_module_version(text: str, expected: Version | None) -> None:
    assert parse_sys_module_version(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("580.159.04", V("580.159.04")),
        (" 515.76 ", V("515.76")),
        ("13.0.88.1", None),
        ("v580", None),
        ("", None),
    ],
    ids=["three-part", "two-part-padded", "four-part", "prefixed", "empty"],
)
def test_parse_driver_version(text: str, expected: Version | None) -> None:
    assert parse_driver_version(text) == expected


def test_parse_nvidia_smi_query_h200() -> None:
    assert parse_nvidia_smi_query(SMI_OUTPUT) == (
        SmiGpu(0, "NVIDIA H200", "00000000:00:06.0", DriverVersion("580.159.04"), "9.0", 143771, "Disabled"),
    )


def test_parse_nvidia_smi_query_mig_and_not_applicable() -> None:
    gpus = parse_nvidia_smi_query(fixture_text("gpus", "nvidia-smi-query-mig.txt"))
    assert gpus is not None
    assert [(g.index, g.name, g.mig_mode, g.memory_mib) for g in gpus] == [
        (0, "NVIDIA A100-SXM4-80GB", "Enabled", 81920),
        (1, "Tesla T4", None, 15360),
    ]


def test_parse_nvidia_smi_query_missing_values_become_none() -> None:
    (gpu,) = parse_nvidia_smi_query("0, NVIDIA H200, [N/A], [Unknown Error], [N/A], [N/A], [Not Supported]\n") or ()
    assert gpu == SmiGpu(0, "NVIDIA H200", None, None, None, None, None)


@pytest.mark.parametrize(
    "text",
    [
        *JUNK,
        fixture_text("driver", "nvidia-smi-query-version-mismatch.txt"),
        "index, name, pci.bus_id, driver_version, compute_cap, memory.total [MiB], mig.mode.current\n",
        "0, NVIDIA H200, 00000000:00:06.0\n",
        'Field "compute_cap" is not a valid field to query.\n',
    ],
    ids=[*JUNK_IDS, "version-mismatch", "header-only", "too-few-columns", "old-driver-field-error"],
)
def test_parse_nvidia_smi_query_rejects_junk(text: str) -> None:
    assert parse_nvidia_smi_query(text) is None


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/usr/local/nvidia/lib64/libcuda.so.580.159.04", "driver"),
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08", "driver"),
        ("/usr/local/cuda-13.0/compat/libcuda.so.580.95.05", "compat"),
        ("/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so", "stub"),
        ("/usr/local/cuda-12.4/lib64/stubs/libcuda.so", "stub"),
        ("/usr/lib/wsl/lib/libcuda.so.1.1", "wsl"),
        ("/usr/lib/wsl/drivers/nv_dispi.inf_amd64_0/libcuda.so.1.1", "wsl"),
        ("/opt/compat-tools/libcuda.so.1", "driver"),
    ],
    ids=[
        "gke-host",
        "debian",
        "cuda-compat",
        "targets-stub",
        "lib64-stub",
        "wsl-lib",
        "wsl-driver-store",
        "compat-in-name",
    ],
)
def test_libcuda_kind(path: str, kind: str) -> None:
    assert libcuda_kind(path) == kind


# --- the probe: healthy H200 ------------------------------------------------------------------------


@pytest.fixture
def h200(fs):
    """The captured H200 tree under pyfakefs."""
    fs.add_real_directory(FIXTURES)
    build_tree("/")
    return fs


def _h200_ctx(runner: FakeRunner | None = None, **overrides):
    native = FakeNative(nvml_result=overrides.pop("nvml", NVML), libcuda_result=overrides.pop("libcuda", LIBCUDA))
    env = overrides.pop("env", h200_env())
    return make_ctx(env=env, runner=runner or h200_runner(), native=native, **overrides)


def test_healthy_h200(h200) -> None:
    runner = h200_runner()
    ctx = _h200_ctx(runner)
    info = probe_driver(ctx)

    assert info is not None
    assert ctx.errors == []
    assert info.version == V("580.159.04")
    assert info.cuda_api == V("13.0")
    assert info.kernel_module is not None
    assert (info.kernel_module.flavour, info.kernel_module.arch) == ("open", "x86_64")
    assert info.loaded_libcuda == HOST_LIBCUDA
    assert info.wsl is False
    assert [(r.source, r.version, r.cuda_api) for r in info.readings] == [
        (Source(SourceKind.FILE, "/sys/module/nvidia/version"), V("580.159.04"), None),
        (Source(SourceKind.FILE, "/proc/driver/nvidia/version"), V("580.159.04"), None),
        (Source(SourceKind.API, "nvml"), V("580.159.04"), V("13.0")),
        (Source(SourceKind.API, "cuDriverGetVersion"), None, V("13.0")),
        (Source(SourceKind.FILENAME, HOST_LIBCUDA), V("580.159.04"), None),
    ]
    assert info.readings[3].detail == HOST_LIBCUDA
    # NVML answered, so the nvidia-smi fallback (same library, ~100 ms) did not run.
    assert runner.calls == []


def test_nvidia_smi_is_the_fallback_when_nvml_fails(h200) -> None:
    runner = h200_runner()
    ctx = _h200_ctx(runner, nvml=NvmlResult(error="NVML Shared Library Not Found"))
    info = probe_driver(ctx)

    assert info is not None
    assert (Source(SourceKind.COMMAND, SMI_WHERE), V("580.159.04")) in [(r.source, r.version) for r in info.readings]
    # nvidia-smi ran exactly once, with the shared argv and a 10 s timeout.
    assert runner.calls == [SMI_QUERY]
    assert runner.timeouts == [10]


def test_h200_libcuda_files(h200) -> None:
    files = find_libcuda_files(_h200_ctx())

    # Each real file once: libcuda.so and libcuda.so.1 (also /usr/lib's links) lead to the versioned file.
    assert files == (
        LibcudaFile(
            HOST_LIBCUDA, DriverVersion("580.159.04"), "driver", True, Source(SourceKind.FILENAME, HOST_LIBCUDA)
        ),
        LibcudaFile(
            COMPAT_LIBCUDA, DriverVersion("580.95.05"), "compat", False, Source(SourceKind.FILENAME, COMPAT_LIBCUDA)
        ),
        LibcudaFile(STUB_LIBCUDA, None, "stub", False, Source(SourceKind.FILENAME, STUB_LIBCUDA)),
    )


def test_compat_dir_on_ld_library_path_is_on_search_path(h200) -> None:
    # tests/fixtures/h200-deep/deep-s1.json: a user "fixes" a CUDA error by exporting the compat directory.
    env = h200_env()
    env["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat:" + env["LD_LIBRARY_PATH"]
    files = {f.path: f for f in find_libcuda_files(_h200_ctx(env=env))}

    assert files[COMPAT_LIBCUDA].on_search_path is True
    assert files[COMPAT_LIBCUDA].kind == "compat"
    assert files[HOST_LIBCUDA].on_search_path is True


def test_host_libcuda_off_search_path_without_ld_library_path(h200) -> None:
    env = {k: v for k, v in h200_env().items() if k != "LD_LIBRARY_PATH"}
    files = {f.path: f for f in find_libcuda_files(_h200_ctx(env=env))}

    # ld.so.conf lists only the toolkit's lib dir; /usr/lib (a default dir) still links to the host file.
    assert files[HOST_LIBCUDA].on_search_path is True
    os.remove("/usr/lib/libcuda.so.1")
    os.remove("/usr/lib/libcuda.so")
    files = {f.path: f for f in find_libcuda_files(_h200_ctx(env=env))}
    # Still listed (the mounted host driver is a known place), but the loader cannot reach it.
    assert (files[HOST_LIBCUDA].kind, files[HOST_LIBCUDA].on_search_path) == ("driver", False)


def test_libcuda_files_unversioned_real_file_and_dangling_link(fs) -> None:
    fs.create_file("/usr/lib/x86_64-linux-gnu/libcuda.so.1", contents="ELF")  # a real file under the SONAME
    fs.create_symlink("/usr/lib/x86_64-linux-gnu/libcuda.so", "libcuda.so.1")
    fs.create_symlink("/usr/lib64/libcuda.so.1", "libcuda.so.570.86.15")  # dangling: target missing
    files = find_libcuda_files(make_ctx())

    assert [(f.path, f.version, f.kind, f.on_search_path) for f in files] == [
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", None, "driver", True),
    ]


# --- the probe: disagreement and failures ----------------------------------------------------------


def test_kernel_module_differs_from_user_space(h200) -> None:
    # Driver upgraded to 575.57.08 user space while the 580.159.04 module stays loaded (no reboot).
    new = "/usr/local/nvidia/lib64/libcuda.so.575.57.08"
    h200.create_file(new)
    os.remove("/usr/local/nvidia/lib64/libcuda.so.1")
    os.symlink("libcuda.so.575.57.08", "/usr/local/nvidia/lib64/libcuda.so.1")
    runner = FakeRunner()
    runner.add(SMI_QUERY, fixture_text("driver", "nvidia-smi-query-version-mismatch.txt"), returncode=18)
    ctx = _h200_ctx(
        runner,
        nvml=NvmlResult(error="Driver/library version mismatch"),
        libcuda=LibcudaResult(path=new, returncode=0, version=12090),
    )
    info = probe_driver(ctx)

    assert info is not None
    assert info.version == V("580.159.04")  # the kernel module first
    assert info.cuda_api == V("12.9")  # NVML failed; libcuda answered
    versions = {r.source.kind: r.version for r in info.readings if r.version is not None}
    assert versions[SourceKind.FILE] == V("580.159.04")
    assert versions[SourceKind.FILENAME] == V("575.57.08")
    assert SourceKind.COMMAND not in {r.source.kind for r in info.readings}  # no reading from nvidia-smi
    assert {f.path: f.version for f in info.libcuda_files}[new] == V("575.57.08")
    errors = {(e.message, e.source) for e in ctx.errors}
    assert ("nvidia-smi: Failed to initialize NVML: Driver/library version mismatch", SMI_WHERE) in errors
    assert ("NVML: Driver/library version mismatch", "nvml") in errors
    assert all(e.probe == "driver" for e in ctx.errors)


#: NVML failing is what makes cudadoctor fall back to nvidia-smi.
NVML_DOWN = NvmlResult(error="Driver/library version mismatch")


def test_nvidia_smi_timed_out(h200) -> None:
    runner = FakeRunner()
    runner.add(SMI_QUERY, error="timed out after 10 s")
    ctx = _h200_ctx(runner, nvml=NVML_DOWN)
    info = probe_driver(ctx)

    assert info is not None and info.version == V("580.159.04")
    assert runner.calls == [SMI_QUERY] and runner.timeouts == [10]
    assert [(e.probe, e.message, e.source) for e in ctx.errors] == [
        ("driver", "NVML: Driver/library version mismatch", "nvml"),
        ("driver", "nvidia-smi: timed out after 10 s", SMI_WHERE),
    ]
    assert all(r.source.kind is not SourceKind.COMMAND for r in info.readings)


@pytest.mark.parametrize(
    ("stdout", "returncode", "message"),
    [
        ("", 0, "nvidia-smi: unrecognised output (empty)"),
        ("\x00\x01garbage\n", 0, "nvidia-smi: unrecognised output: '\\x00\\x01garbage'"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            9,
            "nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        ),
        ("", 6, "nvidia-smi: exited with status 6"),
    ],
    ids=["empty", "binary", "no-driver-message", "silent-failure"],
)
def test_nvidia_smi_bad_output(h200, stdout: str, returncode: int, message: str) -> None:
    runner = FakeRunner()
    runner.add(SMI_QUERY, stdout, returncode=returncode)
    ctx = _h200_ctx(runner, nvml=NVML_DOWN)
    info = probe_driver(ctx)

    assert info is not None and info.version == V("580.159.04")
    assert _error_messages(ctx) == ["NVML: Driver/library version mismatch", message]


def test_stub_libcuda(h200) -> None:
    # tests/fixtures/h200-deep/deep-s2.json: the toolkit stub ahead on the search path answers rc 34, version 0.
    ctx = _h200_ctx(libcuda=LibcudaResult(path=STUB_LIBCUDA, returncode=34, version=0))
    info = probe_driver(ctx)

    assert info is not None
    (reading,) = [r for r in info.readings if r.source == Source(SourceKind.API, "cuDriverGetVersion")]
    assert reading.cuda_api is None
    assert reading.detail is not None and "stub" in reading.detail and STUB_LIBCUDA in reading.detail
    assert info.loaded_libcuda == STUB_LIBCUDA
    assert info.cuda_api == V("13.0")  # NVML still answers
    assert [(e.source, "CUDA_ERROR_STUB_LIBRARY" in e.message) for e in ctx.errors] == [("cuDriverGetVersion", True)]


def test_stub_libcuda_first_nvml_without_cuda_version(h200) -> None:
    # Observed on the H200 with the stub first on LD_LIBRARY_PATH: NVML gives the driver version
    # but nvmlSystemGetCudaDriverVersion_v2 fails, and cuDriverGetVersion says rc 34.
    ctx = _h200_ctx(
        nvml=NvmlResult(driver_version="580.159.04", devices=NVML.devices),
        libcuda=LibcudaResult(path="/tmp/stub/libcuda.so.1", returncode=34, version=0),
    )
    info = probe_driver(ctx)

    assert info is not None
    assert (info.version, info.cuda_api) == (V("580.159.04"), None)
    assert [e.message.split(" (")[0] for e in ctx.errors] == [
        "NVML: no CUDA driver version",
        "cuDriverGetVersion returned 34",
    ]


def test_stub_libcuda_without_nvml_leaves_cuda_api_unknown(h200) -> None:
    ctx = _h200_ctx(
        nvml=NvmlResult(error="NVML Shared Library Not Found"),
        libcuda=LibcudaResult(path=STUB_LIBCUDA, returncode=34, version=0),
    )
    info = probe_driver(ctx)
    assert info is not None and info.cuda_api is None and info.version == V("580.159.04")


def test_no_driver_at_all(fs) -> None:
    runner = FakeRunner()
    ctx = make_ctx(runner=runner)
    assert probe_driver(ctx) is None

    assert runner.calls == [SMI_QUERY]
    (error,) = ctx.errors
    assert error.probe == "driver"
    assert error.message.startswith("no NVIDIA driver found (NVML: NVML Shared Library Not Found; libcuda: ")
    assert error.message.endswith("; nvidia-smi: not found)")


def test_only_toolkit_stubs_is_no_driver(fs) -> None:
    # A CUDA devel image without a GPU: the stub is a link-time file, not a driver.
    fs.create_file("/usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libcuda.so")
    assert probe_driver(make_ctx()) is None


def test_garbled_proc_file(h200) -> None:
    os.remove("/proc/driver/nvidia/version")
    h200.create_file("/proc/driver/nvidia/version", contents=b"\x00\xff\xfe binary \x00")
    ctx = _h200_ctx()
    info = probe_driver(ctx)

    assert info is not None
    assert info.kernel_module is None
    assert info.version == V("580.159.04")  # from /sys/module/nvidia/version
    assert [(e.message.startswith("unrecognised contents: "), e.source) for e in ctx.errors] == [
        (True, "/proc/driver/nvidia/version")
    ]


def test_empty_sys_file(h200) -> None:
    os.remove("/sys/module/nvidia/version")
    h200.create_file("/sys/module/nvidia/version")
    ctx = _h200_ctx()
    info = probe_driver(ctx)

    assert info is not None and info.version == V("580.159.04")
    assert [(e.message, e.source) for e in ctx.errors] == [("empty file", "/sys/module/nvidia/version")]


def test_nvml_only_driver_without_proc(fs) -> None:
    # Kernel module files unreadable here (e.g. a sandbox): NVML's answer stands in.
    ctx = make_ctx(native=FakeNative(nvml_result=NvmlResult(driver_version="535.104.05", cuda_driver_version=12020)))
    info = probe_driver(ctx)

    assert info is not None
    assert (info.version, info.cuda_api, info.kernel_module) == (V("535.104.05"), V("12.2"), None)


def test_wsl2(fs) -> None:
    # WSL2: no /proc/driver/nvidia; the Windows driver's libraries are plain files in /usr/lib/wsl/lib.
    for name in ("libcuda.so", "libcuda.so.1", "libcuda.so.1.1"):
        fs.create_file(f"/usr/lib/wsl/lib/{name}")
    fs.create_file("/dev/dxg")
    fs.create_file("/etc/ld.so.conf", contents="include /etc/ld.so.conf.d/*.conf\n")
    fs.create_file("/etc/ld.so.conf.d/ld.wsl.conf", contents="/usr/lib/wsl/lib\n")
    native = FakeNative(
        nvml_result=NvmlResult(driver_version="581.57", cuda_driver_version=13000),
        libcuda_result=LibcudaResult(path="/usr/lib/wsl/lib/libcuda.so.1.1", returncode=0, version=13000),
    )
    runner = FakeRunner()
    runner.add(SMI_QUERY, "0, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 581.57, 8.9, 24564, [N/A]\n")
    ctx = make_ctx(native=native, runner=runner)
    info = probe_driver(ctx)

    assert info is not None
    assert info.wsl is True
    assert info.kernel_module is None
    assert (info.version, info.cuda_api) == (V("581.57"), V("13.0"))
    assert [(f.path, f.version, f.kind, f.on_search_path) for f in info.libcuda_files] == [
        ("/usr/lib/wsl/lib/libcuda.so", None, "wsl", True),
        ("/usr/lib/wsl/lib/libcuda.so.1", None, "wsl", True),
        ("/usr/lib/wsl/lib/libcuda.so.1.1", None, "wsl", True),
    ]
    assert ctx.errors == []


def test_wsl_without_nvidia_is_no_driver(fs) -> None:
    fs.create_file("/dev/dxg")
    assert probe_driver(make_ctx()) is None


def test_image_root_runs_nothing(tmp_path) -> None:
    # --root: an image is read, never executed; native calls would describe the host, not the image.
    build_tree(str(tmp_path))

    class Refuses(FakeNative):
        def nvml(self) -> NvmlResult:
            raise AssertionError("NVML called for an image root")

        def libcuda_version(self) -> LibcudaResult:
            raise AssertionError("libcuda called for an image root")

    runner = FakeRunner()
    ctx = make_ctx(root=str(tmp_path), env=h200_env(), runner=runner, native=Refuses())
    info = probe_driver(ctx)

    assert runner.calls == []
    assert query_nvidia_smi(ctx) is None
    assert info is not None
    assert all(r.source.kind is SourceKind.FILE for r in info.readings)
    assert [(f.path, f.kind, f.on_search_path) for f in info.libcuda_files] == [
        (HOST_LIBCUDA, "driver", True),
        (COMPAT_LIBCUDA, "compat", False),
        (STUB_LIBCUDA, "stub", False),
    ]


def test_nvidia_smi_query_runs_once_per_context(h200) -> None:
    runner = h200_runner()
    ctx = _h200_ctx(runner)
    first = query_nvidia_smi(ctx)
    probe_driver(ctx)
    assert query_nvidia_smi(ctx) is first
    assert runner.calls == [SMI_QUERY]
