"""Tests for cudadoctor.probes.libraries: pip CUDA wheels and the copies of cuDNN, NCCL and TensorRT."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

import pytest
from packaging.version import Version
from pyfakefs.fake_filesystem import FakeFilesystem
from pyfakefs.helpers import reset_ids, set_uid

from cudadoctor.facts.model import CudaWheels, LibraryCopy, Source, SourceKind, WheelComponent
from cudadoctor.probes import libraries
from cudadoctor.probes.context import ProbeContext
from tests.conftest import fixture_path, fixture_text, make_ctx

# Read at collection time, before pyfakefs hides the real disk.
H200_TREE = "h200", "tree"
SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
H200_CUDNN_SYSTEM = fixture_text(*H200_TREE, "usr/include/x86_64-linux-gnu/cudnn_version.h")
H200_CUDNN_PIP = fixture_text(*H200_TREE, SITE.lstrip("/"), "nvidia/cudnn/include/cudnn_version.h")
H200_NCCL_SYSTEM = fixture_text(*H200_TREE, "usr/include/nccl.h")
H200_NCCL_PIP = fixture_text(*H200_TREE, SITE.lstrip("/"), "nvidia/nccl/include/nccl.h")
H200_LIBRARY_PATHS = fixture_text("h200", "LIBRARY_PATHS.txt").split()
TRT_10_14 = fixture_text("libraries", "NvInferVersion-10.14.h")
TRT_10_0_1 = fixture_text("libraries", "NvInferVersion-10.0.1.h")
CUDNN_7 = fixture_text("libraries", "cudnn-7.6.5.h")
CONDA_CUDNN = fixture_text("libraries", "conda-meta-cudnn-9.3.0.75.json")
H200_METADATA_CUDNN = fixture_text(*H200_TREE, SITE.lstrip("/"), "nvidia_cudnn_cu13-9.19.0.56.dist-info/METADATA")

#: site.getsitepackages() of the H200 capture's interpreter; only the first exists.
H200_SITES = (
    SITE,
    "/opt/torch/.venv/local/lib/python3.12/dist-packages",
    "/opt/torch/.venv/lib/python3/dist-packages",
    "/opt/torch/.venv/lib/python3.12/dist-packages",
)
#: the H200 capture's environment (capture.txt, the env section), the parts these probes read
H200_ENV = {
    "CUDA_HOME": "/usr/local/cuda",
    "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64:/usr/local/nvidia/lib",
    "PATH": "/opt/torch/.venv/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
    "/usr/sbin:/usr/bin:/sbin:/bin:/opt/gcc/bin",
}


@pytest.fixture
def sites(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The site-packages directories the packages probe would report; tests fill the list."""
    paths: list[str] = []
    monkeypatch.setattr(libraries, "_site_paths", lambda ctx: tuple(paths))
    return paths


def build_h200(fs: FakeFilesystem, root: str = "") -> None:
    """The H200 image from its real capture: headers, dist-infos, library files, loader config."""
    fs.add_real_directory(fixture_path(*H200_TREE, "opt"), target_path=f"{root}/opt", read_only=False)
    fs.add_real_directory(
        fixture_path(*H200_TREE, "usr", "include"), target_path=f"{root}/usr/include", read_only=False
    )
    fs.add_real_directory(fixture_path("libraries", "h200-etc"), target_path=f"{root}/etc")
    # Ubuntu 24.04 merges /usr; the CUDA toolkit is an apt install behind alternatives links.
    fs.create_symlink(f"{root}/lib", "usr/lib")
    fs.create_symlink(f"{root}/usr/local/cuda", "/etc/alternatives/cuda")
    fs.create_symlink(f"{root}/etc/alternatives/cuda", "/usr/local/cuda-13.0")
    fs.create_symlink(f"{root}/usr/local/cuda-13", "/etc/alternatives/cuda-13")
    fs.create_symlink(f"{root}/etc/alternatives/cuda-13", "/usr/local/cuda-13.0")
    fs.create_file(
        f"{root}/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda.h", contents="#define CUDA_VERSION 13000\n"
    )
    fs.create_symlink(f"{root}/usr/local/cuda-13.0/include", "targets/x86_64-linux/include")
    fs.create_symlink(f"{root}/usr/local/cuda-13.0/lib64", "targets/x86_64-linux/lib")
    add_library_files(fs, H200_LIBRARY_PATHS, root)


def add_library_files(fs: FakeFilesystem, paths: list[str], root: str = "") -> None:
    """Create library files; a name with a longer sibling (libx.so.9 / libx.so.9.14.0) links to it."""
    names = set(paths)
    for path in paths:
        longer = sorted((p for p in names if p.startswith(path + ".")), key=len)
        if longer:
            fs.create_symlink(root + path, posixpath.basename(longer[0]))
        else:
            fs.create_file(root + path)


def dist_info(fs: FakeFilesystem, site: str, name: str, version: str, metadata: str | None = None) -> str:
    """A dist-info directory with the normalised name pip writes and a minimal METADATA."""
    path = f"{site}/{name.replace('-', '_')}-{version}.dist-info"
    if metadata is None:
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nVersion: 0.0.0 in the body\n"
    fs.create_file(f"{path}/METADATA", contents=metadata)
    return path


def errors(ctx: ProbeContext) -> list[tuple[str, str | None]]:
    return [(e.probe, e.source) for e in ctx.errors]


# --- parsers --------------------------------------------------------------------------------------


def test_parse_c_defines() -> None:
    text = (
        "#ifndef X\n#define X\n"
        "#define NCCL_VERSION(X,Y,Z) ((X) * 10000)\n"
        "#  define CUDNN_MAJOR 9 /* major */\n"
        "#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.\n"
        "#define CUDNN_MAJOR 8\n"
    )
    assert libraries.parse_c_defines(text) == {
        "X": "",
        "CUDNN_MAJOR": "9",
        "NV_TENSORRT_MAJOR": "TRT_MAJOR_ENTERPRISE",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (H200_CUDNN_SYSTEM, Version("9.14.0")),
        (H200_CUDNN_PIP, Version("9.19.0")),
        (CUDNN_7, Version("7.6.5")),
        ("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n", None),
        ("#include <cudnn_version.h>\n#define CUDNN_MAJOR X\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0", None),
        ("\x7fELF\x02\x01\x01\x00\xff\xfe", None),
        ("", None),
    ],
    ids=["h200-apt", "h200-pip", "cudnn7-cudnn.h", "no-patchlevel", "non-numeric", "binary", "empty"],
)
def test_parse_cudnn_version_header(text: str, expected: Version | None) -> None:
    assert libraries.parse_cudnn_version_header(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (H200_NCCL_SYSTEM, Version("2.28.3")),
        (H200_NCCL_PIP, Version("2.28.9")),
        ("#define NCCL_VERSION_CODE 22809\n", Version("2.28.9")),
        ("#define NCCL_VERSION_CODE 2708\n", Version("2.7.8")),
        ("#define NCCL_MAJOR 2\n#define NCCL_VERSION_CODE 12\n", None),
        ("garbage", None),
        ("", None),
    ],
    ids=["h200-apt", "h200-pip", "code-2.9+", "code-before-2.9", "bad-code", "junk", "empty"],
)
def test_parse_nccl_header(text: str, expected: Version | None) -> None:
    assert libraries.parse_nccl_header(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TRT_10_14, Version("10.14.1.48")),
        (TRT_10_0_1, Version("10.0.1.6")),
        ("#define NV_TENSORRT_MAJOR 8\n#define NV_TENSORRT_MINOR 6\n#define NV_TENSORRT_PATCH 1\n", Version("8.6.1")),
        (
            "#define NV_TENSORRT_MAJOR TRT_MAJOR_UNDEFINED\n#define NV_TENSORRT_MINOR 2\n#define NV_TENSORRT_PATCH 1\n",
            None,
        ),
        (
            "#define NV_TENSORRT_MAJOR A\n#define A B\n#define B A\n#define NV_TENSORRT_MINOR 2\n"
            "#define NV_TENSORRT_PATCH 1\n",
            None,
        ),
        ("", None),
    ],
    ids=["10.14-indirect", "10.0.1-direct", "8.6-no-build", "undefined-macro", "macro-loop", "empty"],
)
def test_parse_nvinfer_version_header(text: str, expected: Version | None) -> None:
    assert libraries.parse_nvinfer_version_header(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (H200_METADATA_CUDNN, ("nvidia-cudnn-cu13", "9.19.0.56")),
        ("Name: x\n\nVersion: 1.0\n", ("x", None)),
        ("\x00\x01garbage without colons", (None, None)),
        ("", (None, None)),
    ],
    ids=["h200", "version-only-in-body", "junk", "empty"],
)
def test_parse_dist_metadata(text: str, expected: tuple[str | None, str | None]) -> None:
    assert libraries.parse_dist_metadata(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CONDA_CUDNN, ("cudnn", Version("9.3.0.75"))),
        ('{"name": "cudnn"}', None),
        ('{"name": "cudnn", "version": "not-a-version"}', None),
        ("[]", None),
        ("{", None),
    ],
    ids=["cudnn", "no-version", "bad-version", "list", "junk"],
)
def test_parse_conda_meta(text: str, expected: tuple[str, Version] | None) -> None:
    assert libraries.parse_conda_meta(text) == expected


# --- the H200 image -------------------------------------------------------------------------------


H200_CU13_COMPONENTS = [
    ("nvidia-cublas", "13.1.0.3"),
    ("nvidia-cuda-cupti", "13.0.85"),
    ("nvidia-cuda-nvrtc", "13.0.88"),
    ("nvidia-cuda-runtime", "13.0.96"),
    ("nvidia-cufft", "12.0.0.61"),
    ("nvidia-cufile", "1.15.1.6"),
    ("nvidia-curand", "10.4.0.35"),
    ("nvidia-cusolver", "12.0.4.66"),
    ("nvidia-cusparse", "12.6.3.3"),
    ("nvidia-nvjitlink", "13.0.88"),
    ("nvidia-nvtx", "13.0.85"),
]


def h200_expected(root_lib: str = "/lib/x86_64-linux-gnu") -> dict[str, object]:
    cudnn_dist = f"{SITE}/nvidia_cudnn_cu13-9.19.0.56.dist-info"
    nccl_dist = f"{SITE}/nvidia_nccl_cu13-2.28.9.dist-info"
    return {
        "cuda_wheels": CudaWheels(
            layout="cu13",
            components=tuple(
                WheelComponent(
                    name,
                    Version(version),
                    f"{SITE}/nvidia/cu13/lib",
                    Source(SourceKind.METADATA, f"{SITE}/{name.replace('-', '_')}-{version}.dist-info/METADATA"),
                )
                for name, version in H200_CU13_COMPONENTS
            ),
            toolkit_meta=Version("13.0.2"),
            runtime_version=Version("13.0.96"),
        ),
        "cudnn": (
            LibraryCopy(
                "cudnn",
                Version("9.19.0.56"),
                "pip",
                cudnn_dist,
                Source(SourceKind.METADATA, f"{cudnn_dist}/METADATA"),
                "nvidia-cudnn-cu13",
                13,
                (f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",),
            ),
            LibraryCopy(
                "cudnn",
                Version("9.14.0"),
                "system",
                "/usr/include/x86_64-linux-gnu/cudnn_version.h",
                Source(SourceKind.FILE, "/usr/include/x86_64-linux-gnu/cudnn_version.h"),
                None,
                None,
                (f"{root_lib}/libcudnn.so.9", f"{root_lib}/libcudnn.so.9.14.0"),
            ),
        ),
        "nccl": (
            LibraryCopy(
                "nccl",
                Version("2.28.9"),
                "pip",
                nccl_dist,
                Source(SourceKind.METADATA, f"{nccl_dist}/METADATA"),
                "nvidia-nccl-cu13",
                13,
                (f"{SITE}/nvidia/nccl/lib/libnccl.so.2",),
            ),
            LibraryCopy(
                "nccl",
                Version("2.28.3"),
                "system",
                "/usr/include/nccl.h",
                Source(SourceKind.FILE, "/usr/include/nccl.h"),
                None,
                None,
                (f"{root_lib}/libnccl.so.2", f"{root_lib}/libnccl.so.2.28.3"),
            ),
        ),
        "tensorrt": (),
    }


PROBES: dict[str, Callable[[ProbeContext], object]] = {
    "cuda_wheels": libraries.probe_cuda_wheels,
    "cudnn": libraries.probe_cudnn,
    "nccl": libraries.probe_nccl,
    "tensorrt": libraries.probe_tensorrt,
}


@pytest.mark.parametrize("root", ["", "/img"], ids=["live", "image-root"])
def test_h200(fs: FakeFilesystem, sites: list[str], root: str) -> None:
    build_h200(fs, root)
    sites.extend(H200_SITES)
    ctx = make_ctx(root=root or "/", env=H200_ENV)

    got = {name: probe(ctx) for name, probe in PROBES.items()}

    assert got == h200_expected()
    assert ctx.errors == []


# --- pip CUDA wheels ------------------------------------------------------------------------------


def test_cuda12_splayed_wheels(fs: FakeFilesystem, sites: list[str]) -> None:
    site = "/venv/lib/python3.11/site-packages"
    sites.append(site)
    for name, version, directory in [
        ("nvidia-cuda-runtime-cu12", "12.4.127", "cuda_runtime"),
        ("nvidia-cublas-cu12", "12.4.5.8", "cublas"),
        ("nvidia-cuda-nvrtc-cu12", "12.4.127", "cuda_nvrtc"),
        ("nvidia-nvjitlink-cu12", "12.4.127", "nvjitlink"),
    ]:
        dist_info(fs, site, name, version)
        fs.create_dir(f"{site}/nvidia/{directory}/lib")
    dist_info(fs, site, "nvidia-cudnn-cu12", "9.1.0.70")  # a library copy, not a component
    dist_info(fs, site, "nvidia-cuda-nvcc-cu12", "12.4.131")  # nvcc has bin/, no lib/

    wheels = libraries.probe_cuda_wheels(make_ctx())

    assert wheels is not None
    assert wheels.layout == "cu12"
    assert wheels.runtime_version == Version("12.4.127")
    assert wheels.toolkit_meta is None
    assert [(c.distribution, c.lib_dir) for c in wheels.components] == [
        ("nvidia-cublas-cu12", f"{site}/nvidia/cublas/lib"),
        ("nvidia-cuda-nvcc-cu12", None),
        ("nvidia-cuda-nvrtc-cu12", f"{site}/nvidia/cuda_nvrtc/lib"),
        ("nvidia-cuda-runtime-cu12", f"{site}/nvidia/cuda_runtime/lib"),
        ("nvidia-nvjitlink-cu12", f"{site}/nvidia/nvjitlink/lib"),
    ]


@pytest.mark.parametrize("name", ["nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu117"])
def test_cuda11_wheels(fs: FakeFilesystem, sites: list[str], name: str) -> None:
    sites.append("/site")
    dist_info(fs, "/site", name, "11.7.99")
    wheels = libraries.probe_cuda_wheels(make_ctx())
    assert wheels is not None
    assert (wheels.layout, wheels.runtime_version) == ("cu11", Version("11.7.99"))


def test_mixed_cu13_and_cu12_runtimes(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "nvidia-cuda-runtime", "13.0.96")
    dist_info(fs, "/site", "nvidia-cuda-runtime-cu12", "12.8.90")
    dist_info(fs, "/site", "cuda-toolkit", "13.0.2")
    fs.create_dir("/site/nvidia/cu13/lib")
    fs.create_dir("/site/nvidia/cuda_runtime/lib")

    wheels = libraries.probe_cuda_wheels(make_ctx())

    assert wheels is not None
    assert wheels.layout == "mixed"
    assert wheels.runtime_version == Version("13.0.96")
    assert wheels.toolkit_meta == Version("13.0.2")


def test_stray_cu12_math_wheel_does_not_make_mixed(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "nvidia-cuda-runtime", "13.0.96")
    dist_info(fs, "/site", "nvidia-cublas-cu12", "12.8.4.1")
    fs.create_dir("/site/nvidia/cu13/lib")
    wheels = libraries.probe_cuda_wheels(make_ctx())
    assert wheels is not None
    assert wheels.layout == "cu13"
    assert len(wheels.components) == 2


def test_cu13_runtime_without_its_directory(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "nvidia-cuda-runtime", "13.0.96")
    wheels = libraries.probe_cuda_wheels(make_ctx())
    assert wheels is not None
    assert (wheels.layout, wheels.components[0].lib_dir) == ("cu13", None)


def test_first_site_wins(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.extend(["/user-site", "/venv-site"])
    dist_info(fs, "/user-site", "nvidia-cuda-runtime-cu12", "12.1.105")
    dist_info(fs, "/venv-site", "nvidia-cuda-runtime-cu12", "12.8.90")
    wheels = libraries.probe_cuda_wheels(make_ctx())
    assert wheels is not None
    assert [str(c.version) for c in wheels.components] == ["12.1.105"]


def test_toolkit_meta_only(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "cuda-toolkit", "13.0.2")
    assert libraries.probe_cuda_wheels(make_ctx()) == CudaWheels("unknown", (), Version("13.0.2"), None)


def test_no_wheels(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "numpy", "2.5.2")
    dist_info(fs, "/site", "nvidia-ml-py", "13.610.43")
    ctx = make_ctx()
    assert libraries.probe_cuda_wheels(ctx) is None
    assert ctx.errors == []


def test_garbled_and_unreadable_metadata(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "nvidia-cuda-runtime", "13.0.96", metadata="\x00\x01\x02 not metadata")
    dist_info(fs, "/site", "nvidia-cublas", "13.1.0.3", metadata="")
    fs.chmod("/site/nvidia_cublas-13.1.0.3.dist-info/METADATA", 0o000)
    fs.create_dir("/site/nvidia_curand-junk.dist-info")  # no METADATA, no version in the name
    set_uid(1000)
    try:
        ctx = make_ctx()
        wheels = libraries.probe_cuda_wheels(ctx)
    finally:
        reset_ids()

    assert wheels is not None
    assert [(c.distribution, c.version, c.source.kind) for c in wheels.components] == [
        ("nvidia-cublas", Version("13.1.0.3"), SourceKind.FILENAME),
        ("nvidia-cuda-runtime", Version("13.0.96"), SourceKind.FILENAME),
    ]
    assert errors(ctx) == [
        ("libraries", "/site/nvidia_cublas-13.1.0.3.dist-info/METADATA"),
        ("libraries", "/site/nvidia_cuda_runtime-13.0.96.dist-info/METADATA"),
        ("libraries", "/site/nvidia_curand-junk.dist-info/METADATA"),
    ]
    assert "cannot read" in ctx.errors[0].message


def test_site_paths_failure_is_one_error(fs: FakeFilesystem, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: ProbeContext) -> tuple[str, ...]:
        raise RuntimeError("interpreter not found")

    monkeypatch.setattr(libraries, "_site_paths", broken)
    fs.create_file("/usr/include/nccl.h", contents=H200_NCCL_SYSTEM)
    ctx = make_ctx()
    assert libraries.probe_cuda_wheels(ctx) is None
    assert [c.version for c in libraries.probe_nccl(ctx)] == [Version("2.28.3")]
    assert [(e.probe, e.message) for e in ctx.errors] == [
        ("libraries", "site-packages directories unknown: RuntimeError: interpreter not found")
    ]


# --- cuDNN ----------------------------------------------------------------------------------------


def test_cudnn_copied_into_toolkit(fs: FakeFilesystem, sites: list[str]) -> None:
    base = "/usr/local/cuda-12.4"
    fs.create_file(f"{base}/include/cudnn_version.h", contents=H200_CUDNN_SYSTEM.replace("14", "2"))
    fs.create_file(f"{base}/lib64/libcudnn.so.9.2.0")
    fs.create_symlink(f"{base}/lib64/libcudnn.so.9", "libcudnn.so.9.2.0")
    fs.create_symlink("/usr/local/cuda", "cuda-12.4")
    fs.create_file("/etc/ld.so.conf.d/cuda.conf", contents="/usr/local/cuda/lib64\n")
    fs.create_file("/etc/ld.so.conf", contents="include /etc/ld.so.conf.d/*.conf\n")
    ctx = make_ctx()

    [copy] = libraries.probe_cudnn(ctx)

    assert copy == LibraryCopy(
        "cudnn",
        Version("9.2.0"),
        "toolkit",
        "/usr/local/cuda/include/cudnn_version.h",
        Source(SourceKind.FILE, "/usr/local/cuda/include/cudnn_version.h"),
        lib_paths=("/usr/local/cuda/lib64/libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9.2.0"),
    )
    assert ctx.errors == []


def test_cudnn_conda(fs: FakeFilesystem, sites: list[str]) -> None:
    prefix = "/opt/conda/envs/ml"
    sites.append(f"{prefix}/lib/python3.12/site-packages")
    fs.create_file(f"{prefix}/conda-meta/cudnn-9.3.0.75-h93bb076_0.json", contents=CONDA_CUDNN)
    fs.create_file(f"{prefix}/conda-meta/cudnn-jit-1.0.0-h0_0.json", contents='{"name": "cudnn-jit"}')
    fs.create_file(
        f"{prefix}/include/cudnn_version.h",
        contents="#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n",
    )
    fs.create_file(f"{prefix}/lib/libcudnn.so.9.3.0")
    fs.create_symlink(f"{prefix}/lib/libcudnn.so.9", "libcudnn.so.9.3.0")
    ctx = make_ctx(env={"CONDA_PREFIX": prefix})

    [copy] = libraries.probe_cudnn(ctx)

    meta = f"{prefix}/conda-meta/cudnn-9.3.0.75-h93bb076_0.json"
    assert copy == LibraryCopy(
        "cudnn",
        Version("9.3.0.75"),
        "conda",
        meta,
        Source(SourceKind.FILE, meta),
        lib_paths=(f"{prefix}/lib/libcudnn.so.9", f"{prefix}/lib/libcudnn.so.9.3.0"),
    )


def test_cudnn7_header(fs: FakeFilesystem, sites: list[str]) -> None:
    fs.create_file("/usr/include/cudnn.h", contents=CUDNN_7)
    fs.create_file("/usr/lib/x86_64-linux-gnu/libcudnn.so.7.6.5")
    fs.create_symlink("/usr/lib/x86_64-linux-gnu/libcudnn.so.7", "libcudnn.so.7.6.5")
    [copy] = libraries.probe_cudnn(make_ctx())
    assert (copy.version, copy.origin, copy.path) == (Version("7.6.5"), "system", "/usr/include/cudnn.h")
    assert len(copy.lib_paths) == 2


def test_cudnn8_header_beside_cudnn_h(fs: FakeFilesystem, sites: list[str]) -> None:
    # cuDNN >= 8: cudnn.h only includes cudnn_version.h, so it is not read (or reported as garbled).
    fs.create_file("/usr/include/cudnn.h", contents='#include "cudnn_version.h"\n')
    fs.create_file(
        "/usr/include/cudnn_version_v8.h",
        contents="#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n",
    )
    ctx = make_ctx()
    assert [c.version for c in libraries.probe_cudnn(ctx)] == [Version("8.9.7")]
    assert ctx.errors == []


def test_cudnn_library_without_header(fs: FakeFilesystem, sites: list[str]) -> None:
    fs.create_file("/usr/lib64/libcudnn.so.8.9.7")
    fs.create_symlink("/usr/lib64/libcudnn.so.8", "libcudnn.so.8.9.7")
    [copy] = libraries.probe_cudnn(make_ctx())
    assert copy == LibraryCopy(
        "cudnn",
        Version("8.9.7"),
        "system",
        "/usr/lib64/libcudnn.so.8",
        Source(SourceKind.FILENAME, "/usr/lib64/libcudnn.so.8.9.7"),
        lib_paths=("/usr/lib64/libcudnn.so.8", "/usr/lib64/libcudnn.so.8.9.7"),
    )


def test_cudnn_soname_only_library(fs: FakeFilesystem, sites: list[str]) -> None:
    fs.create_file("/usr/lib64/libcudnn.so.9")
    [copy] = libraries.probe_cudnn(make_ctx())
    assert (copy.version, copy.origin, copy.lib_paths) == (None, "system", ("/usr/lib64/libcudnn.so.9",))


def test_cu12_and_cu13_cudnn_wheels_in_one_site(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "nvidia-cudnn-cu12", "9.10.2.21")
    dist_info(fs, "/site", "nvidia-cudnn-cu13", "9.10.2.21")
    fs.create_file("/site/nvidia/cudnn/lib/libcudnn.so.9")
    copies = libraries.probe_cudnn(make_ctx())
    assert [(c.distribution, c.cuda_major, c.lib_paths) for c in copies] == [
        ("nvidia-cudnn-cu12", 12, ("/site/nvidia/cudnn/lib/libcudnn.so.9",)),
        ("nvidia-cudnn-cu13", 13, ("/site/nvidia/cudnn/lib/libcudnn.so.9",)),
    ]


def test_ld_library_path_into_a_wheel_is_still_pip(fs: FakeFilesystem, sites: list[str]) -> None:
    build_h200(fs)
    sites.append(SITE)
    ctx = make_ctx(env={**H200_ENV, "LD_LIBRARY_PATH": f"{SITE}/nvidia/cudnn/lib"})
    copies = libraries.probe_cudnn(ctx)
    assert [(c.origin, c.version) for c in copies] == [
        ("pip", Version("9.19.0.56")),
        ("system", Version("9.14.0")),
    ]
    assert copies[0].lib_paths == (f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",)


@pytest.mark.parametrize("root", ["", "/img"], ids=["live", "image-root"])
def test_garbled_unreadable_and_broken_files(fs: FakeFilesystem, sites: list[str], root: str) -> None:
    fs.create_file(f"{root}/usr/include/cudnn_version.h", contents="\x00\x01\x02\xff garbage")
    fs.create_file(f"{root}/usr/include/x86_64-linux-gnu/cudnn_version.h", contents=H200_CUDNN_SYSTEM, st_mode=0o100000)
    fs.create_file(f"{root}/usr/include/aarch64-linux-gnu/cudnn_version.h", contents="")
    lib = f"{root}/usr/lib/x86_64-linux-gnu"
    fs.create_file(f"{lib}/libcudnn.so.9.14.0")
    fs.create_symlink(f"{lib}/libcudnn.so.9", "libcudnn.so.9.14.0")
    fs.create_symlink(f"{lib}/libcudnn.so.8", "/nowhere/libcudnn.so.8.9.7")  # dangling
    fs.create_symlink(f"{lib}/libcudnn.so.7", "libcudnn.so.7.loop")  # a loop
    fs.create_symlink(f"{lib}/libcudnn.so.7.loop", "libcudnn.so.7")
    set_uid(1000)
    try:
        ctx = make_ctx(root=root or "/")
        copies = libraries.probe_cudnn(ctx)
    finally:
        reset_ids()

    assert [(c.version, c.origin, c.path) for c in copies] == [
        (Version("9.14.0"), "system", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9")
    ]
    problems = {(e.source, e.message.split(":")[0]) for e in ctx.errors}
    assert ("/usr/include/cudnn_version.h", "no cudnn version macros in cudnn_version.h") in problems
    assert ("/usr/include/aarch64-linux-gnu/cudnn_version.h", "no cudnn version macros in cudnn_version.h") in problems
    assert ("/usr/include/x86_64-linux-gnu/cudnn_version.h", "cannot read") in problems
    assert ("/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "dangling or looping symbolic link") in problems


# --- NCCL -----------------------------------------------------------------------------------------


def test_nccl_orphaned_wheel_files(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    fs.create_file("/site/nvidia/nccl/include/nccl.h", contents=H200_NCCL_PIP)
    fs.create_file("/site/nvidia/nccl/lib/libnccl.so.2")
    [copy] = libraries.probe_nccl(make_ctx())
    assert copy == LibraryCopy(
        "nccl",
        Version("2.28.9"),
        "pip",
        "/site/nvidia/nccl/include/nccl.h",
        Source(SourceKind.FILE, "/site/nvidia/nccl/include/nccl.h"),
        lib_paths=("/site/nvidia/nccl/lib/libnccl.so.2",),
    )


def test_nccl_two_system_versions(fs: FakeFilesystem, sites: list[str]) -> None:
    fs.create_file("/usr/include/nccl.h", contents=H200_NCCL_SYSTEM)
    fs.create_file("/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3")
    fs.create_file("/usr/local/lib/libnccl.so.2.21.5")
    fs.create_file("/etc/ld.so.conf", contents="/usr/local/lib\n")
    copies = libraries.probe_nccl(make_ctx())
    assert [(c.version, c.path) for c in copies] == [
        (Version("2.28.3"), "/usr/include/nccl.h"),
        (Version("2.21.5"), "/usr/local/lib/libnccl.so.2.21.5"),
    ]


# --- TensorRT -------------------------------------------------------------------------------------


def test_tensorrt_pip_split_wheels(fs: FakeFilesystem, sites: list[str]) -> None:
    site = "/venv/lib/python3.12/site-packages"
    sites.append(site)
    for name in ("tensorrt", "tensorrt-cu12", "tensorrt-cu12-libs", "tensorrt-cu12-bindings"):
        dist_info(fs, site, name, "10.14.1.48")
    dist_info(fs, site, "tensorrt-llm", "1.0.0")
    fs.create_file(f"{site}/tensorrt_libs/libnvinfer.so.10")
    fs.create_file(f"{site}/tensorrt_libs/libnvinfer_plugin.so.10")

    copies = libraries.probe_tensorrt(make_ctx())

    dist = f"{site}/tensorrt_cu12-10.14.1.48.dist-info"
    llm = f"{site}/tensorrt_llm-1.0.0.dist-info"
    assert copies == (
        LibraryCopy(
            "tensorrt",
            Version("10.14.1.48"),
            "pip",
            dist,
            Source(SourceKind.METADATA, f"{dist}/METADATA"),
            "tensorrt-cu12",
            12,
            (f"{site}/tensorrt_libs/libnvinfer.so.10",),
        ),
        LibraryCopy(
            "tensorrt-llm", Version("1.0.0"), "pip", llm, Source(SourceKind.METADATA, f"{llm}/METADATA"), "tensorrt-llm"
        ),
    )


def test_tensorrt_system_header_with_indirection(fs: FakeFilesystem, sites: list[str]) -> None:
    fs.create_file("/usr/include/x86_64-linux-gnu/NvInferVersion.h", contents=TRT_10_14)
    fs.create_file("/usr/include/x86_64-linux-gnu/NvInfer.h", contents='#include "NvInferVersion.h"\n')
    fs.create_file("/usr/lib/x86_64-linux-gnu/libnvinfer.so.10.14.1")
    fs.create_symlink("/usr/lib/x86_64-linux-gnu/libnvinfer.so.10", "libnvinfer.so.10.14.1")
    fs.create_file("/usr/lib/x86_64-linux-gnu/libnvinfer_plugin.so.10.14.1")
    ctx = make_ctx()

    [copy] = libraries.probe_tensorrt(ctx)

    assert copy == LibraryCopy(
        "tensorrt",
        Version("10.14.1.48"),
        "system",
        "/usr/include/x86_64-linux-gnu/NvInferVersion.h",
        Source(SourceKind.FILE, "/usr/include/x86_64-linux-gnu/NvInferVersion.h"),
        lib_paths=("/usr/lib/x86_64-linux-gnu/libnvinfer.so.10", "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10.14.1"),
    )
    assert ctx.errors == []


def test_tensorrt_tarball(fs: FakeFilesystem, sites: list[str]) -> None:
    base = "/usr/local/TensorRT-10.0.1.6"
    fs.create_file(f"{base}/include/NvInferVersion.h", contents=TRT_10_0_1)
    fs.create_file(f"{base}/lib/libnvinfer.so.10.0.1")
    ctx = make_ctx(env={"LD_LIBRARY_PATH": f"{base}/lib"})
    [copy] = libraries.probe_tensorrt(ctx)
    assert (copy.version, copy.origin, copy.lib_paths) == (
        Version("10.0.1.6"),
        "tarball",
        (f"{base}/lib/libnvinfer.so.10.0.1",),
    )


def test_tensorrt_8_wheel_keeps_libraries_in_its_package(fs: FakeFilesystem, sites: list[str]) -> None:
    sites.append("/site")
    dist_info(fs, "/site", "nvidia-tensorrt", "8.4.3.1")
    fs.create_file("/site/tensorrt/libnvinfer.so.8")
    [copy] = libraries.probe_tensorrt(make_ctx())
    assert (copy.version, copy.distribution, copy.lib_paths) == (
        Version("8.4.3.1"),
        "nvidia-tensorrt",
        ("/site/tensorrt/libnvinfer.so.8",),
    )


def test_nothing_installed(fs: FakeFilesystem, sites: list[str]) -> None:
    fs.create_dir("/usr/include")
    ctx = make_ctx()
    assert libraries.probe_cudnn(ctx) == ()
    assert libraries.probe_nccl(ctx) == ()
    assert libraries.probe_tensorrt(ctx) == ()
    assert ctx.errors == []
