"""Tests for cudadoctor.probes.toolkit: toolkit installs, their versions, and the nvcc on PATH."""

from __future__ import annotations

import pytest
from packaging.version import Version
from pyfakefs.fake_filesystem import FakeFilesystem
from pyfakefs.helpers import reset_ids, set_uid

from cudadoctor.facts.model import NvccInfo, Source, SourceKind, ToolkitInstall
from cudadoctor.probes import toolkit
from tests.conftest import FakeRunner, fixture_text, make_ctx

# Read at collection time, before pyfakefs hides the real disk.
NVCC_13_0 = fixture_text("toolkit", "nvcc-13.0.txt")
NVCC_11_8 = fixture_text("toolkit", "nvcc-11.8.txt")
NVCC_10_1 = fixture_text("toolkit", "nvcc-10.1.txt")
VERSION_13_3 = fixture_text("toolkit", "version-13.3.1.json")
VERSION_11_8 = fixture_text("toolkit", "version-11.8.json")
VERSION_12_6_SDK = fixture_text("toolkit", "version-12.6-sdk-only.json")
VERSION_TXT_9_0 = fixture_text("toolkit", "version-9.0.txt")
CUDA_H_13_0 = fixture_text("toolkit", "cuda-13.0.h")

#: PATH and CUDA_HOME of the H200 capture (capture.txt, the env section).
H200_ENV = {
    "CUDA_HOME": "/usr/local/cuda",
    "PATH": "/opt/torch/.venv/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
    "/usr/sbin:/usr/bin:/sbin:/bin:/opt/gcc/bin",
}
NVCC = "/usr/local/cuda/bin/nvcc"


def build_h200_toolkit(fs: FakeFilesystem, root: str = "") -> None:
    """The H200 image's apt toolkit: alternatives links, no version.json, no version.txt."""
    fs.create_symlink(f"{root}/usr/local/cuda", "/etc/alternatives/cuda")
    fs.create_symlink(f"{root}/etc/alternatives/cuda", "/usr/local/cuda-13.0")
    fs.create_symlink(f"{root}/usr/local/cuda-13", "/etc/alternatives/cuda-13")
    fs.create_symlink(f"{root}/etc/alternatives/cuda-13", "/usr/local/cuda-13.0")
    base = f"{root}/usr/local/cuda-13.0"
    fs.create_file(f"{base}/targets/x86_64-linux/include/cuda.h", contents=CUDA_H_13_0)
    fs.create_file(f"{base}/targets/x86_64-linux/lib/libcudart.so.13.0.96")
    fs.create_symlink(f"{base}/include", "targets/x86_64-linux/include")
    fs.create_symlink(f"{base}/lib64", "targets/x86_64-linux/lib")
    fs.create_file(f"{base}/bin/nvcc", st_mode=0o100755)
    fs.create_dir(f"{base}/compat")


# --- parsers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VERSION_13_3, (Version("13.3.29"), "cuda_cudart")),
        (VERSION_11_8, (Version("11.8.89"), "cuda_nvcc")),
        (VERSION_12_6_SDK, (Version("12.6.20241114"), "cuda")),
        ('{"cuda": {"version": "not a version"}}', None),
        ('{"cuda_cudart": {"version": 13}, "cuda": {"version": "13.0.2"}}', (Version("13.0.2"), "cuda")),
        ("[1, 2]", None),
        ("{ this is not json", None),
        ("\x00\x01\x02", None),
        ("", None),
    ],
    ids=[
        "13.3.1",
        "11.8-no-cudart",
        "12.6-sdk-only",
        "bad-version",
        "non-string-cudart",
        "list",
        "junk",
        "binary",
        "empty",
    ],
)
def test_parse_version_json(text: str, expected: tuple[Version, str] | None) -> None:
    assert toolkit.parse_version_json(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VERSION_TXT_9_0, Version("9.0.176")),
        ("CUDA Version 10.2.89", Version("10.2.89")),
        ("CUDA Version", None),
        ("garbage\n", None),
        ("", None),
    ],
    ids=["9.0", "10.2-no-newline", "no-number", "junk", "empty"],
)
def test_parse_version_txt(text: str, expected: Version | None) -> None:
    assert toolkit.parse_version_txt(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CUDA_H_13_0, Version("13.0")),
        ("#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 12080\n", Version("12.8")),
        ("# define CUDA_VERSION 11080 /* 11.8 */", Version("11.8")),
        ("#define CUDA_VERSION_MAJOR 13", None),
        ("#define CUDA_VERSION\n", None),
        ("\x7fELF\x02\x01", None),
        ("", None),
    ],
    ids=["13.0", "12.8", "spaced-hash", "other-macro", "no-value", "binary", "empty"],
)
def test_parse_cuda_h(text: str, expected: Version | None) -> None:
    assert toolkit.parse_cuda_h(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (NVCC_13_0, (Version("13.0"), Version("13.0.88"))),
        (NVCC_11_8, (Version("11.8"), Version("11.8.89"))),
        (NVCC_10_1, (Version("10.1"), Version("10.1.243"))),
        ("nvcc: NVIDIA (R) Cuda compiler driver\n", None),
        ("", None),
    ],
    ids=["13.0", "11.8", "10.1-no-build-line", "truncated", "empty"],
)
def test_parse_nvcc_version(text: str, expected: tuple[Version, Version] | None) -> None:
    assert toolkit.parse_nvcc_version(text) == expected


# --- probes: the H200 image -----------------------------------------------------------------------


def test_h200_apt_toolkit_live(fs: FakeFilesystem, runner: FakeRunner) -> None:
    build_h200_toolkit(fs)
    runner.add([NVCC, "--version"], stdout=NVCC_13_0)
    ctx = make_ctx(env=H200_ENV, runner=runner)

    installs = toolkit.probe_toolkits(ctx)
    nvcc = toolkit.probe_nvcc(ctx)

    assert installs == (
        ToolkitInstall(
            root="/usr/local/cuda",
            version=Version("13.0"),
            source=Source(SourceKind.FILE, "/usr/local/cuda-13.0/include/cuda.h"),
            found_via=("CUDA_HOME", "/usr/local/cuda link", "glob /usr/local/cuda-*", "nvcc on PATH"),
            nvcc_version=Version("13.0.88"),
            real_path="/usr/local/cuda-13.0",
        ),
    )
    assert nvcc == NvccInfo(NVCC, Version("13.0"), Version("13.0.88"), Source(SourceKind.COMMAND, f"{NVCC} --version"))
    assert runner.calls == [(NVCC, "--version")]  # once, though both probes asked
    assert runner.timeouts == [10.0]
    assert ctx.errors == []


def test_h200_image_root_runs_nothing(fs: FakeFilesystem, runner: FakeRunner) -> None:
    build_h200_toolkit(fs, root="/img")
    ctx = make_ctx(root="/img", env=H200_ENV, runner=runner)

    installs = toolkit.probe_toolkits(ctx)
    nvcc = toolkit.probe_nvcc(ctx)

    assert [(i.root, i.real_path, i.version, i.nvcc_version) for i in installs] == [
        ("/usr/local/cuda", "/usr/local/cuda-13.0", Version("13.0"), None)
    ]
    assert installs[0].source == Source(SourceKind.FILE, "/usr/local/cuda-13.0/include/cuda.h")
    assert nvcc == NvccInfo(NVCC, None, None, Source(SourceKind.FILENAME, NVCC))
    assert runner.calls == []
    assert [(e.probe, e.source) for e in ctx.errors] == [("nvcc", NVCC)]


def test_cuda_h_only_under_targets(fs: FakeFilesystem) -> None:
    fs.create_file("/usr/local/cuda-12.8/targets/x86_64-linux/include/cuda.h", contents="#define CUDA_VERSION 12080\n")
    [install] = toolkit.probe_toolkits(make_ctx())
    assert install.version == Version("12.8")
    header = "/usr/local/cuda-12.8/targets/x86_64-linux/include/cuda.h"
    assert install.source == Source(SourceKind.FILE, header)
    assert install.found_via == ("glob /usr/local/cuda-*",)


# --- probes: manifests ----------------------------------------------------------------------------


def test_version_json_prefers_cudart(fs: FakeFilesystem) -> None:
    fs.create_file("/usr/local/cuda-13.3/version.json", contents=VERSION_13_3)
    fs.create_file("/usr/local/cuda-13.3/include/cuda.h", contents="#define CUDA_VERSION 13030\n")
    fs.create_symlink("/usr/local/cuda", "cuda-13.3")  # runfile/RHEL style: one plain link
    ctx = make_ctx()

    [install] = toolkit.probe_toolkits(ctx)

    assert install.root == "/usr/local/cuda"
    assert install.real_path == "/usr/local/cuda-13.3"
    assert install.version == Version("13.3.29")
    assert install.source == Source(SourceKind.FILE, "/usr/local/cuda-13.3/version.json#cuda_cudart")
    assert install.found_via == ("/usr/local/cuda link", "glob /usr/local/cuda-*")
    assert ctx.errors == []


def test_version_json_11_8_uses_nvcc_component(fs: FakeFilesystem) -> None:
    fs.create_file("/usr/local/cuda-11.8/version.json", contents=VERSION_11_8)
    [install] = toolkit.probe_toolkits(make_ctx())
    assert install.version == Version("11.8.89")
    assert install.source == Source(SourceKind.FILE, "/usr/local/cuda-11.8/version.json#cuda_nvcc")


def test_version_txt(fs: FakeFilesystem) -> None:
    fs.create_file("/usr/local/cuda-9.0/version.txt", contents=VERSION_TXT_9_0)
    [install] = toolkit.probe_toolkits(make_ctx())
    assert install.version == Version("9.0.176")
    assert install.source == Source(SourceKind.FILE, "/usr/local/cuda-9.0/version.txt")


def test_garbled_version_json_falls_back_to_cuda_h(fs: FakeFilesystem) -> None:
    fs.create_file("/usr/local/cuda-12.4/version.json", contents="\x00\x89PNG garbage {")
    fs.create_file("/usr/local/cuda-12.4/include/cuda.h", contents="#define CUDA_VERSION 12040\n")
    ctx = make_ctx()

    [install] = toolkit.probe_toolkits(ctx)

    assert install.version == Version("12.4")
    assert [(e.probe, e.source) for e in ctx.errors] == [("toolkit", "/usr/local/cuda-12.4/version.json")]


def test_unreadable_version_json_falls_back(fs: FakeFilesystem) -> None:
    fs.create_file("/usr/local/cuda-12.4/version.json", contents=VERSION_13_3, st_mode=0o100000)
    fs.create_file("/usr/local/cuda-12.4/version.txt", contents="CUDA Version 12.4.1\n")
    set_uid(1000)  # pyfakefs enforces permissions only for a non-root user
    try:
        ctx = make_ctx()
        [install] = toolkit.probe_toolkits(ctx)
    finally:
        reset_ids()
    assert install.version == Version("12.4.1")
    assert len(ctx.errors) == 1
    assert ctx.errors[0].message.startswith("cannot read")
    assert ctx.errors[0].source == "/usr/local/cuda-12.4/version.json"


def test_directory_name_is_never_a_version(fs: FakeFilesystem) -> None:
    fs.create_dir("/usr/local/cuda-12.1/bin")
    ctx = make_ctx()

    [install] = toolkit.probe_toolkits(ctx)

    assert install.version is None
    assert install.source is None
    assert [e.source for e in ctx.errors] == ["/usr/local/cuda-12.1"]


# --- probes: where installs are found -------------------------------------------------------------


def test_cuda_home_pointing_elsewhere(fs: FakeFilesystem) -> None:
    build_h200_toolkit(fs)
    fs.create_file("/opt/nvidia/cuda-12.6/version.json", contents=VERSION_12_6_SDK)
    ctx = make_ctx(env={"CUDA_HOME": "/opt/nvidia/cuda-12.6/", "CUDA_PATH": "/usr/local/cuda"})

    installs = toolkit.probe_toolkits(ctx)

    assert [(i.root, i.version, i.found_via) for i in installs] == [
        ("/opt/nvidia/cuda-12.6", Version("12.6.20241114"), ("CUDA_HOME",)),
        ("/usr/local/cuda", Version("13.0"), ("CUDA_PATH", "/usr/local/cuda link", "glob /usr/local/cuda-*")),
    ]
    assert installs[0].source == Source(SourceKind.FILE, "/opt/nvidia/cuda-12.6/version.json#cuda")


def test_cuda_home_missing_directory(fs: FakeFilesystem) -> None:
    ctx = make_ctx(env={"CUDA_HOME": "/usr/local/cuda-12.9"})
    assert toolkit.probe_toolkits(ctx) == ()
    assert [(e.probe, e.message) for e in ctx.errors] == [
        ("toolkit", "CUDA_HOME=/usr/local/cuda-12.9: no such directory")
    ]


def test_opt_cuda(fs: FakeFilesystem) -> None:
    fs.create_file("/opt/cuda/version.json", contents=VERSION_13_3)  # Arch Linux's package
    [install] = toolkit.probe_toolkits(make_ctx())
    assert (install.root, install.found_via) == ("/opt/cuda", ("/opt/cuda",))


def test_conda_layout(fs: FakeFilesystem, runner: FakeRunner) -> None:
    prefix = "/opt/conda/envs/ml"
    fs.create_file(f"{prefix}/bin/nvcc", st_mode=0o100755)
    fs.create_file(f"{prefix}/targets/x86_64-linux/include/cuda.h", contents="#define CUDA_VERSION 12080\n")
    runner.add([f"{prefix}/bin/nvcc", "--version"], stdout=NVCC_13_0.replace("13.0, V13.0.88", "12.8, V12.8.93"))
    ctx = make_ctx(env={"CONDA_PREFIX": prefix, "PATH": f"{prefix}/bin:/usr/bin"}, runner=runner)

    [install] = toolkit.probe_toolkits(ctx)

    assert install.root == prefix
    assert install.found_via == ("CONDA_PREFIX", "nvcc on PATH")
    assert install.version == Version("12.8")
    assert install.nvcc_version == Version("12.8.93")
    assert runner.calls == [(f"{prefix}/bin/nvcc", "--version")]


def test_conda_prefix_without_cuda_is_no_toolkit(fs: FakeFilesystem) -> None:
    fs.create_dir("/opt/conda/envs/web/lib/python3.12/site-packages")
    ctx = make_ctx(env={"CONDA_PREFIX": "/opt/conda/envs/web"})
    assert toolkit.probe_toolkits(ctx) == ()
    assert ctx.errors == []


def test_aarch64_conda_uses_sbsa_target(fs: FakeFilesystem) -> None:
    fs.create_file("/conda/targets/sbsa-linux/include/cuda.h", contents="#define CUDA_VERSION 12060\n")
    [install] = toolkit.probe_toolkits(make_ctx(env={"CONDA_PREFIX": "/conda"}, machine="aarch64"))
    assert (install.root, install.version) == ("/conda", Version("12.6"))


def test_nvcc_on_path_outside_known_places(fs: FakeFilesystem, runner: FakeRunner) -> None:
    root = "/opt/nvidia/hpc_sdk/Linux_x86_64/25.1/cuda/12.6"
    fs.create_file(f"{root}/version.json", contents=VERSION_12_6_SDK)
    fs.create_file(f"{root}/bin/nvcc", st_mode=0o100755)
    runner.add([f"{root}/bin/nvcc", "--version"], stdout=NVCC_11_8)
    ctx = make_ctx(env={"PATH": f"{root}/bin"}, runner=runner)

    [install] = toolkit.probe_toolkits(ctx)

    assert (install.root, install.found_via) == (root, ("nvcc on PATH",))
    assert install.nvcc_version == Version("11.8.89")


def test_distro_nvcc_does_not_make_usr_a_toolkit(fs: FakeFilesystem, runner: FakeRunner) -> None:
    fs.create_file("/usr/bin/nvcc", st_mode=0o100755)
    fs.create_file("/usr/include/cuda.h", contents="#define CUDA_VERSION 12000\n")
    runner.add(["/usr/bin/nvcc", "--version"], stdout=NVCC_11_8)
    ctx = make_ctx(env={"PATH": "/usr/bin"}, runner=runner)
    assert toolkit.probe_toolkits(ctx) == ()
    assert toolkit.probe_nvcc(ctx) is not None


def test_link_loop_in_image_root(fs: FakeFilesystem) -> None:
    fs.create_symlink("/img/usr/local/cuda", "/usr/local/cuda-12")
    fs.create_symlink("/img/usr/local/cuda-12", "/usr/local/cuda")
    fs.create_file("/img/usr/local/cuda-13.0/include/cuda.h", contents=CUDA_H_13_0)
    ctx = make_ctx(root="/img")

    installs = toolkit.probe_toolkits(ctx)

    assert [i.root for i in installs] == ["/usr/local/cuda-13.0"]
    assert {e.source for e in ctx.errors} == {"/usr/local/cuda", "/usr/local/cuda-12"}


def test_no_toolkit(fs: FakeFilesystem, runner: FakeRunner) -> None:
    fs.create_dir("/usr/bin")
    ctx = make_ctx(env={"PATH": "/usr/bin"}, runner=runner)
    assert toolkit.probe_toolkits(ctx) == ()
    assert toolkit.probe_nvcc(ctx) is None
    assert runner.calls == []
    assert ctx.errors == []


# --- probe_nvcc -----------------------------------------------------------------------------------


def test_nvcc_first_on_path_wins(fs: FakeFilesystem, runner: FakeRunner) -> None:
    fs.create_file("/usr/local/cuda-12.8/bin/nvcc", st_mode=0o100755)
    fs.create_file("/usr/local/cuda-13.0/bin/nvcc", st_mode=0o100755)
    fs.create_dir("/usr/local/cuda-12.8/bin/nvcc.d")
    runner.add(["/usr/local/cuda-12.8/bin/nvcc", "--version"], stdout=NVCC_11_8)
    ctx = make_ctx(
        env={"PATH": "relative/bin::/nowhere:/usr/local/cuda-12.8/bin:/usr/local/cuda-13.0/bin"}, runner=runner
    )

    nvcc = toolkit.probe_nvcc(ctx)

    assert nvcc is not None
    assert nvcc.path == "/usr/local/cuda-12.8/bin/nvcc"
    assert runner.calls == [("/usr/local/cuda-12.8/bin/nvcc", "--version")]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"error": "timed out after 10 s"}, "nvcc --version: timed out after 10 s"),
        (
            {"returncode": 1, "stderr": "nvcc fatal : something"},
            "nvcc --version: exited with status 1: nvcc fatal : something",
        ),
        ({"stdout": "Segmentation fault\n"}, "nvcc --version: no 'release X.Y, VX.Y.Z' in its output"),
    ],
    ids=["timeout", "failed", "garbage"],
)
def test_nvcc_failures(fs: FakeFilesystem, runner: FakeRunner, kwargs: dict[str, object], message: str) -> None:
    fs.create_file("/usr/local/cuda-13.0/bin/nvcc", st_mode=0o100755)
    runner.add(["/usr/local/cuda-13.0/bin/nvcc", "--version"], **kwargs)  # type: ignore[arg-type]
    ctx = make_ctx(env={"PATH": "/usr/local/cuda-13.0/bin"}, runner=runner)

    nvcc = toolkit.probe_nvcc(ctx)

    assert nvcc is not None
    assert (nvcc.release, nvcc.version) == (None, None)
    assert [(e.probe, e.message) for e in ctx.errors] == [("nvcc", message)]


def test_only_numbered_cuda_directories_are_globbed(fs: FakeFilesystem) -> None:
    fs.create_dir("/usr/local/cuda-samples/bin")
    fs.create_dir("/usr/local/cuda-keyring")
    ctx = make_ctx()
    assert toolkit.probe_toolkits(ctx) == ()
    assert ctx.errors == []


def test_garbled_cuda_h_reported_once(fs: FakeFilesystem) -> None:
    build_h200_toolkit(fs)
    fs.remove_object("/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda.h")
    fs.create_file("/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda.h", contents="\x00\x01\x02")
    ctx = make_ctx()
    [install] = toolkit.probe_toolkits(ctx)
    assert install.version is None
    assert [e.source for e in ctx.errors] == ["/usr/local/cuda-13.0/include/cuda.h", "/usr/local/cuda-13.0"]


def test_link_loops_inside_a_toolkit(fs: FakeFilesystem) -> None:
    base = "/img/usr/local/cuda-13.0"
    fs.create_symlink(f"{base}/include", "include")
    fs.create_symlink(f"{base}/version.json", "version.json")
    fs.create_symlink(f"{base}/targets/x86_64-linux/include", "../x86_64-linux/include")
    fs.create_symlink("/img/conda/bin/nvcc", "nvcc")
    ctx = make_ctx(root="/img", env={"CONDA_PREFIX": "/conda", "PATH": "/conda/bin"})
    [install] = toolkit.probe_toolkits(ctx)
    assert (install.root, install.version) == ("/usr/local/cuda-13.0", None)
    assert toolkit.probe_nvcc(ctx) is None
