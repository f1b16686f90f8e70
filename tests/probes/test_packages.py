"""Tests for cudadoctor.probes.packages: the target interpreter, the dist-info scan, CUDA variants.

File-based cases run under pyfakefs over the real capture (tests/fixtures/h200/tree/opt) and the
synthetic site-packages trees in tests/fixtures/packages/; the one command (``--python``) goes
through FakeRunner. Nothing here spawns a process.
"""

from __future__ import annotations

import json
import sys
import time

import pytest
from packaging.version import Version

from cudadoctor.facts.model import SourceKind
from cudadoctor.probes import interpreter, packages
from cudadoctor.probes.context import ProbeContext
from cudadoctor.rootfs import RootFS
from tests.conftest import FakeRunner, fixture_path, make_ctx

H200_VENV = "/opt/torch/.venv"
H200_SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
PYVENV_CFG = "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n"


def _h200(fs, cfg: str | None = PYVENV_CFG) -> None:
    """The capture machine's venv: real METADATA files and torch/version.py."""
    fs.add_real_directory(fixture_path("h200", "tree", "opt"), target_path="/opt", read_only=False)
    if cfg is not None:
        fs.create_file(f"{H200_VENV}/pyvenv.cfg", contents=cfg)
    fs.create_symlink(f"{H200_VENV}/bin/python3", "/usr/bin/python3.12")


def _synthetic(fs, case: str, target: str) -> None:
    fs.add_real_directory(fixture_path("packages", case, "site-packages"), target_path=target, read_only=False)


def _seeded(site: str, **kwargs) -> ProbeContext:
    ctx = make_ctx(**kwargs)
    ctx._cache["python.site_paths"] = (site,)
    return ctx


def _errors(ctx: ProbeContext) -> list[str]:
    return [f"{e.probe}: {e.message}" for e in ctx.errors]


# --- pure parsers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dirname", "expected"),
    [
        ("nvidia_cudnn_cu13-9.19.0.56.dist-info", ("nvidia-cudnn-cu13", "9.19.0.56")),
        ("torch-2.5.1+cu124.dist-info", ("torch", "2.5.1+cu124")),
        ("NVIDIA_CUDNN_CU12-9.1.0.70.dist-info", ("nvidia-cudnn-cu12", "9.1.0.70")),
        ("torch_geometric-2.8.0.post1.dist-info", ("torch-geometric", "2.8.0.post1")),
        ("zope.interface-7.1.dist-info", ("zope-interface", "7.1")),
        ("Foo_Bar-1.0-py3.8.egg-info", ("foo-bar", "1.0")),
        ("legacy-name-2.0.dist-info", ("legacy-name", "2.0")),
        ("foo.egg-info", ("foo", None)),
        ("torch", None),
        ("nvidia", None),
        ("__editable__.cudadoctor-0.1.pth", None),
        (".dist-info", None),
    ],
    ids=[
        "cu13-underscores",
        "local-tag",
        "odd-case",
        "post",
        "dotted",
        "egg",
        "unescaped",
        "no-version",
        "module",
        "namespace",
        "pth",
        "empty-name",
    ],
)
def test_parse_dist_dirname(dirname, expected):
    assert packages.parse_dist_dirname(dirname) == expected


def test_parse_metadata_stops_at_the_description_and_joins_continuations():
    text = (
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\nRequires-Dist: a\nRequires-Dist: b;\n"
        "  python_version >= '3.9'\nLicense: BSD\n\nVersion: 9.9.9 (in the description)\n"
    )
    fields = packages.parse_metadata(text)
    assert fields["version"] == ["2.5.1"]
    assert fields["requires-dist"] == ["a", "b; python_version >= '3.9'"]


@pytest.mark.parametrize(
    "text", ["", "\n\n", "garbage without colon\n", "\x00\x01\x02"], ids=["empty", "blank", "junk", "binary"]
)
def test_parse_metadata_junk(text):
    assert "version" not in packages.parse_metadata(text)


def test_parse_requires_txt_turns_sections_into_markers():
    text = (
        "packaging\n\n[:sys_platform == \"win32\"]\npywin32\n\n[test]\npytest\n\n[gpu:platform_system == 'Linux']\nx\n"
    )
    assert packages.parse_requires_txt(text) == [
        "packaging",
        'pywin32; (sys_platform == "win32")',
        'pytest; extra == "test"',
        "x; (platform_system == 'Linux') and extra == \"gpu\"",
    ]


def test_parse_pyvenv_cfg():
    cfg = interpreter.parse_pyvenv_cfg(
        "home = /usr/bin\nInclude-System-Site-Packages = TRUE\nversion_info = 3.12.3.final.0\n"
    )
    assert cfg == {
        "home": "/usr/bin",
        "include-system-site-packages": "TRUE",
        "version_info": "3.12.3.final.0",
    }


def test_parse_torch_version_py_from_the_capture():
    with open(
        fixture_path(
            "h200",
            "tree",
            "opt",
            "torch",
            ".venv",
            "lib",
            "python3.12",
            "site-packages",
            "torch",
            "version.py",
        ),
        encoding="utf-8",
    ) as handle:
        build = packages.parse_torch_version_py(handle.read(), "/x/torch/version.py")
    assert build is not None
    assert build.version == Version("2.11.0+cu130")
    assert (build.cuda, build.hip, build.debug) == ("13.0", None, False)
    assert build.git_version == "70d99e998b4955e0049d13a98d77ae1b14db1f45"
    assert build.source.kind is SourceKind.FILE and build.source.where == "/x/torch/version.py"


@pytest.mark.parametrize(
    ("text", "cuda", "hip", "version"),
    [
        (
            "__version__ = '2.1.2+cu121'\ndebug = False\ncuda = '12.1'\ngit_version = 'abc'\nhip = None\n",
            "12.1",
            None,
            "2.1.2+cu121",
        ),
        (
            '__version__ = "2.4.1+rocm6.1"\ncuda: Optional[str] = None\nhip: Optional[str] = "6.1.40091-a8dbc0c19"\n',
            None,
            "6.1.40091-a8dbc0c19",
            "2.4.1+rocm6.1",
        ),
        ("__version__ = 'not a version'\ncuda = '11.8'\n", "11.8", None, None),
    ],
    ids=["old-unannotated", "rocm-double-quotes", "invalid-version"],
)
def test_parse_torch_version_py_variants(text, cuda, hip, version):
    build = packages.parse_torch_version_py(text)
    assert build is not None
    assert (build.cuda, build.hip) == (cuda, hip)
    assert build.version == (Version(version) if version else None)


@pytest.mark.parametrize("text", ["", "import os\n", "cudaX = '12.1'\n"], ids=["empty", "unrelated", "near-name"])
def test_parse_torch_version_py_junk(text):
    assert packages.parse_torch_version_py(text) is None


@pytest.mark.parametrize(
    ("local", "expected"),
    [
        ("cu130", ("cu130", "13.0")),
        ("cu118", ("cu118", "11.8")),
        ("cu126", ("cu126", "12.6")),
        ("cu92", ("cu92", "9.2")),
        ("rocm6.2", ("rocm6.2", None)),
        ("rocm6.2.4", ("rocm6.2.4", None)),
        ("cpu", ("cpu", None)),
        ("cpu.cxx11.abi", ("cpu", None)),
        ("xpu", ("xpu", None)),
        ("cuda12.cudnn89", ("cuda12", "12")),
        ("cuda112", ("cuda112", "11.2")),  # jaxlib 0.1.65+cuda112 (jax#6517): CUDA 11.2, not "CUDA 112"
        ("git1234", None),
        ("", None),
        (None, None),
    ],
    ids=[
        "cu130",
        "cu118",
        "cu126",
        "cu92",
        "rocm",
        "rocm3",
        "cpu",
        "cpu-abi",
        "xpu",
        "jaxlib-old",
        "jaxlib-older",
        "other",
        "empty",
        "none",
    ],
)
def test_cuda_variant_from_local(local, expected):
    assert packages.cuda_variant_from_local(local) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cupy-cuda12x", ("cuda12x", "12")),
        ("cupy-cuda13x", ("cuda13x", "13")),
        ("cupy-cuda117", ("cuda117", "11.7")),
        ("cupy-rocm-5-0", ("rocm5.0", None)),
        ("jax-cuda13-plugin", ("cuda13", "13")),
        ("jax-cuda12-pjrt", ("cuda12", "12")),
        ("jax-rocm60-plugin", ("rocm6.0", None)),
        ("jax-rocm7-plugin", ("rocm7", None)),
        ("tensorrt-cu12", ("cu12", "12")),
        ("tensorrt-cu12-libs", ("cu12", "12")),
        ("nvidia-cudnn-cu13", ("cu13", "13")),
        ("mxnet-cu112", ("cu112", "11.2")),
        ("nvidia-cublas", None),
        ("torch", None),
        ("onnxruntime-gpu", None),
    ],
)
def test_cuda_variant_from_name(name, expected):
    assert packages.cuda_variant_from_name(name) == expected


@pytest.mark.parametrize(
    ("name", "interesting"),
    [
        ("torch", True),
        ("nvidia-nccl-cu13", True),
        ("nvidia-ml-py", True),
        ("tensorrt-llm", True),
        ("tensorflow-io-gcs-filesystem", True),
        ("cupy-cuda12x", True),
        ("jax-cuda13-pjrt", True),
        ("mlx", True),
        ("numpy", False),
        ("torchmetrics", False),
        ("jaxtyping", False),
        ("cuda-toolkit", True),
    ],
)
def test_is_interesting(name, interesting):
    assert packages.is_interesting(name) is interesting


@pytest.mark.parametrize(
    "name",
    ["NVIDIA_CUDNN_CU12", "torch", "Foo.Bar__baz", "zope.interface", "cupy-cuda12x", "A-_.-B", "Jinja2"],
)
def test_canonical_name_matches_packaging(name):
    from packaging.utils import canonicalize_name

    assert packages.canonical_name(name) == canonicalize_name(name)


# --- choosing the interpreter ---------------------------------------------------------------------


def test_virtual_env_with_pyvenv_cfg(fs):
    _h200(fs)
    ctx = make_ctx(env={"VIRTUAL_ENV": H200_VENV})
    env = interpreter.target_python(ctx)
    assert env.kind == "venv"
    assert env.chosen_by == "VIRTUAL_ENV"
    assert env.executable == f"{H200_VENV}/bin/python3"
    assert env.version == Version("3.12.3")
    assert env.prefix == H200_VENV
    assert env.site_paths == (H200_SITE,)
    assert env.source.where == f"{H200_VENV}/pyvenv.cfg"
    assert interpreter.site_paths(ctx) == (H200_SITE,)
    assert interpreter.probe_python(ctx) is env
    assert ctx.runner.calls == []


def test_virtual_env_without_pyvenv_cfg_uses_the_lib_dirs(fs):
    _h200(fs, cfg=None)
    env = interpreter.target_python(make_ctx(env={"VIRTUAL_ENV": H200_VENV}))
    assert (env.kind, env.version, env.site_paths) == ("venv", Version("3.12"), (H200_SITE,))
    assert env.source.kind is SourceKind.ENV


def test_uv_venv_version_info_and_system_site_packages(fs):
    _h200(fs, cfg="home = /usr/bin\ninclude-system-site-packages = true\nversion_info = 3.12.3\nuv = 0.9.0\n")
    fs.create_dir("/usr/local/lib/python3.12/dist-packages")
    fs.create_dir("/usr/lib/python3/dist-packages")
    env = interpreter.target_python(make_ctx(env={"VIRTUAL_ENV": H200_VENV}))
    assert env.version == Version("3.12.3")
    assert env.site_paths == (
        H200_SITE,
        "/usr/local/lib/python3.12/dist-packages",
        "/usr/lib/python3/dist-packages",
    )


def test_conda_prefix(fs):
    fs.create_file("/opt/conda/envs/ml/conda-meta/python-3.11.5-h955ad1f_0.json", contents="{}")
    fs.create_file("/opt/conda/envs/ml/conda-meta/python-dateutil-2.9.0-pyhd8ed1ab_0.json", contents="{}")
    fs.create_file("/opt/conda/envs/ml/bin/python3")
    fs.create_dir("/opt/conda/envs/ml/lib/python3.11/site-packages")
    env = interpreter.target_python(make_ctx(env={"CONDA_PREFIX": "/opt/conda/envs/ml"}))
    assert (env.kind, env.chosen_by, env.version) == ("conda", "CONDA_PREFIX", Version("3.11.5"))
    assert env.executable == "/opt/conda/envs/ml/bin/python3"
    assert env.site_paths == ("/opt/conda/envs/ml/lib/python3.11/site-packages",)


def test_stale_virtual_env_is_recorded_and_skipped(fs):
    fs.create_file("/opt/conda/conda-meta/python-3.10.14-h955ad1f_0.json")
    fs.create_dir("/opt/conda/lib/python3.10/site-packages")
    ctx = make_ctx(env={"VIRTUAL_ENV": "/gone/.venv", "CONDA_PREFIX": "/opt/conda"})
    env = interpreter.target_python(ctx)
    assert (env.chosen_by, env.kind, env.site_paths) == (
        "CONDA_PREFIX",
        "conda",
        ("/opt/conda/lib/python3.10/site-packages",),
    )
    assert _errors(ctx) == ["python: VIRTUAL_ENV names a directory that does not exist: /gone/.venv"]


def test_virtual_env_wins_over_conda_prefix(fs):
    _h200(fs)
    fs.create_dir("/opt/conda/conda-meta")
    env = interpreter.target_python(make_ctx(env={"VIRTUAL_ENV": H200_VENV, "CONDA_PREFIX": "/opt/conda"}))
    assert env.chosen_by == "VIRTUAL_ENV"


def test_this_interpreter_uses_sys_path(fs, monkeypatch):
    xy = f"{sys.version_info[0]}.{sys.version_info[1]}"
    site = f"/venv/lib/python{xy}/site-packages"
    for path in ("/venv/bin", site, f"/usr/lib/python{xy}", f"/usr/lib/python{xy}/lib-dynload", "/work/app"):
        fs.create_dir(path)
    monkeypatch.setattr(
        sys,
        "path",
        [
            "/venv/bin",
            f"/usr/lib/python{xy.replace('.', '')}.zip",
            f"/usr/lib/python{xy}",
            f"/usr/lib/python{xy}/lib-dynload",
            site,
            "/work/app",
            "/missing",
            "relative",
            "",
        ],
    )
    monkeypatch.setattr(sys, "argv", ["/venv/bin/cudadoctor"])
    monkeypatch.setattr(sys, "prefix", "/venv")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    monkeypatch.setattr(sys, "executable", "/venv/bin/python")
    env = interpreter.target_python(make_ctx())
    assert env.chosen_by == "this interpreter"
    assert (env.kind, env.executable, env.prefix) == ("venv", "/venv/bin/python", "/venv")
    assert env.version == Version(".".join(map(str, sys.version_info[:3])))
    assert env.site_paths == (site, "/work/app")
    assert env.source.kind is SourceKind.API


@pytest.mark.parametrize(
    "tool_prefix",
    [
        "/root/.local/share/pipx/venvs/cudadoctor",
        "/root/.local/share/uv/tools/cudadoctor",
        "/root/.local/share/pipx/.cache/3f2a9c",
        "/root/.cache/uv/environments-v2/cudadoctor-5b1e",
    ],
    ids=["pipx", "uv-tool", "pipx-run", "uvx"],
)
def test_pipx_or_uv_tool_install_looks_at_the_python_on_path(fs, monkeypatch, tool_prefix):
    fs.create_file(f"{tool_prefix}/bin/python")
    fs.create_symlink("/root/.local/bin/cudadoctor", f"{tool_prefix}/bin/cudadoctor")
    fs.create_file("/usr/bin/python3.12")
    fs.create_symlink("/usr/bin/python3", "python3.12")
    fs.create_dir("/usr/lib/python3.12")
    fs.create_dir("/usr/lib/python3/dist-packages")
    fs.create_dir("/usr/local/lib/python3.12/dist-packages")
    monkeypatch.setattr(sys, "prefix", tool_prefix)
    monkeypatch.setattr(sys, "executable", f"{tool_prefix}/bin/python")
    env = interpreter.target_python(make_ctx(env={"PATH": f"/root/.local/bin:{tool_prefix}/bin:/usr/bin:/bin"}))
    assert env.executable == "/usr/bin/python3"
    assert env.kind == "system"
    assert env.chosen_by.startswith("PATH")
    assert env.version == Version("3.12")
    assert env.prefix == "/usr"
    assert env.site_paths == ("/usr/local/lib/python3.12/dist-packages", "/usr/lib/python3/dist-packages")


def test_pipx_install_with_no_python_on_path_falls_back_to_itself(fs, monkeypatch):
    monkeypatch.setattr(sys, "prefix", "/home/u/.local/pipx/venvs/cudadoctor")
    env = interpreter.target_python(make_ctx(env={"PATH": "/nowhere"}))
    assert env.chosen_by.startswith("this interpreter")


def _sys_path_json(**overrides) -> str:
    data = {
        "version": [3, 10, 12],
        "prefix": "/opt/other",
        "base_prefix": "/usr",
        "path": [
            "/usr/lib/python310.zip",
            "/usr/lib/python3.10",
            "/usr/lib/python3.10/lib-dynload",
            "/opt/other/lib/python3.10/site-packages",
            "/opt/gone",
        ],
        "executable": "/opt/other/bin/python3",
    }
    data.update(overrides)
    return json.dumps(data)


def test_python_option_runs_the_interpreter_once(fs):
    fs.create_dir("/usr/lib/python3.10")
    fs.create_dir("/opt/other/lib/python3.10/site-packages")
    fs.create_dir("/extra")
    runner = FakeRunner()
    argv = ["/opt/other/bin/python3", "-I", "-c", interpreter.SYS_PATH_SCRIPT]
    runner.add(argv, stdout="sitecustomize says hi\n" + _sys_path_json() + "\n")
    ctx = make_ctx(runner=runner, python="/opt/other/bin/python3", env={"PYTHONPATH": "/extra"})
    env = interpreter.target_python(ctx)
    interpreter.target_python(ctx)  # cached: still one call
    assert runner.calls == [tuple(argv)]
    assert runner.timeouts == [10.0]
    assert (env.chosen_by, env.kind, env.version) == ("--python", "venv", Version("3.10.12"))
    assert env.prefix == "/opt/other"
    assert env.site_paths == ("/extra", "/opt/other/lib/python3.10/site-packages")
    assert env.source.kind is SourceKind.COMMAND
    assert ctx.errors == []


def test_python_option_script_is_valid_python():
    compile(interpreter.SYS_PATH_SCRIPT, "<script>", "exec")


@pytest.mark.parametrize(
    ("stdout", "error", "returncode"),
    [
        ("", "timed out after 10 s", 0),
        ("", None, 1),
        ("not json\n", None, 0),
        ('{"version": "x"}\n', None, 0),
    ],
    ids=["timeout", "exit-1", "no-json", "bad-json"],
)
def test_python_option_failure_falls_back_to_the_layout(fs, stdout, error, returncode):
    _h200(fs)
    runner = FakeRunner()
    runner.add(
        [f"{H200_VENV}/bin/python3", "-I", "-c", interpreter.SYS_PATH_SCRIPT],
        stdout=stdout,
        error=error,
        returncode=returncode,
    )
    ctx = make_ctx(runner=runner, python=f"{H200_VENV}/bin/python3")
    env = interpreter.target_python(ctx)
    assert len(runner.calls) == 1
    assert (env.kind, env.chosen_by, env.site_paths) == ("venv", "--python", (H200_SITE,))
    assert [e.probe for e in ctx.errors] == ["python"]


def test_python_option_in_root_mode_runs_nothing(fs):
    fs.add_real_directory(fixture_path("h200", "tree", "opt"), target_path="/img/opt", read_only=False)
    fs.create_file(f"/img{H200_VENV}/pyvenv.cfg", contents=PYVENV_CFG)
    runner = FakeRunner()
    env = interpreter.target_python(make_ctx(root="/img", runner=runner, python=f"{H200_VENV}/bin/python3"))
    assert runner.calls == []
    assert (env.kind, env.site_paths) == ("venv", (H200_SITE,))


def test_root_mode_takes_the_first_python_on_the_image_path(fs):
    fs.create_file("/img/usr/bin/python3.11")
    fs.create_symlink("/img/usr/bin/python3", "python3.11")
    fs.create_symlink("/img/opt/venv/bin/python3", "/usr/bin/python3")  # absolute: resolved inside /img
    fs.create_file("/img/opt/venv/pyvenv.cfg", contents="home = /usr/bin\nversion = 3.11.2\n")
    fs.create_dir("/img/opt/venv/lib/python3.11/site-packages")
    fs.create_symlink("/img/opt/venv/lib64", "lib")
    ctx = make_ctx(root="/img", env={"PATH": "/opt/venv/bin:/usr/local/bin:/usr/bin"})
    env = interpreter.target_python(ctx)
    assert (env.executable, env.kind, env.chosen_by) == ("/opt/venv/bin/python3", "venv", "PATH")
    assert env.site_paths == ("/opt/venv/lib/python3.11/site-packages",)


def test_root_mode_debian_system_python_default_path(fs):
    fs.create_file("/img/usr/bin/python3.11")
    fs.create_symlink("/img/usr/bin/python3", "python3.11")
    fs.create_dir("/img/usr/lib/python3/dist-packages")
    fs.create_dir("/img/usr/lib/python3.11")
    env = interpreter.target_python(make_ctx(root="/img"))
    assert (env.executable, env.kind, env.version, env.prefix) == (
        "/usr/bin/python3",
        "system",
        Version("3.11"),
        "/usr",
    )
    assert env.site_paths == ("/usr/lib/python3/dist-packages",)


def test_root_mode_python_image_prefix_usr_local(fs):
    fs.create_file("/img/usr/local/bin/python3.12")
    fs.create_symlink("/img/usr/local/bin/python3", "python3.12")
    fs.create_dir("/img/usr/local/lib/python3.12/site-packages")
    env = interpreter.target_python(make_ctx(root="/img", env={"PATH": "/usr/local/bin:/usr/bin"}))
    assert (env.prefix, env.site_paths) == ("/usr/local", ("/usr/local/lib/python3.12/site-packages",))


def test_root_mode_without_python(fs):
    fs.create_dir("/img/usr/bin")
    ctx = make_ctx(root="/img")
    assert interpreter.probe_python(ctx) is None
    assert interpreter.site_paths(ctx) == ()
    assert packages.probe_packages(ctx) == {}
    assert [e.probe for e in ctx.errors] == ["python"]


# --- packages: the capture ------------------------------------------------------------------------


def test_h200_capture(fs):
    _h200(fs)
    ctx = make_ctx(env={"VIRTUAL_ENV": H200_VENV})
    found = packages.probe_packages(ctx)
    assert ctx.errors == []
    assert "numba" not in found and "torchmetrics" not in found and "jaxtyping" not in found
    assert {
        "torch",
        "torchvision",
        "torchaudio",
        "triton",
        "jax",
        "jaxlib",
        "jax-cuda13-plugin",
        "jax-cuda13-pjrt",
        "cupy-cuda13x",
        "nvidia-cudnn-cu13",
        "nvidia-nccl-cu13",
        "cuda-toolkit",
        "cuda-bindings",
        "nvidia-ml-py",
        "numba-cuda",
        "onnxruntime",
    } <= set(found)

    torch = found["torch"]
    assert torch.version == Version("2.11.0")
    assert (torch.cuda_variant, torch.cuda_build, torch.cuda_variant_source) == (
        "cu130",
        "13.0",
        "torch/version.py",
    )
    assert torch.location == H200_SITE
    assert torch.source.kind is SourceKind.METADATA
    assert torch.source.where == f"{H200_SITE}/torch-2.11.0.dist-info/METADATA"
    assert torch.torch_build is not None and torch.torch_build.cuda == "13.0"
    assert torch.cuda_requires == (
        "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"
        '==13.0.2; platform_system == "Linux"',
        'nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"',
        'nvidia-cusparselt-cu13==0.8.0; platform_system == "Linux"',
        'nvidia-nccl-cu13==2.28.9; platform_system == "Linux"',
        'nvidia-nvshmem-cu13==3.4.5; platform_system == "Linux"',
    )
    assert torch.requires[0] == "filelock" and len(torch.requires) == 14  # no extras (optree, pyyaml …)
    assert torch.installer is None

    assert (found["cuda-toolkit"].cuda_variant, found["cuda-toolkit"].cuda_build) == ("cu130", "13.0")
    assert found["cuda-toolkit"].requires == ()  # every pin sits behind an extra
    assert (found["cupy-cuda13x"].cuda_variant, found["cupy-cuda13x"].cuda_build) == ("cuda13x", "13")
    assert found["cupy-cuda13x"].cuda_variant_source == "package name"
    assert found["jax-cuda13-plugin"].requires == ("jax-cuda13-pjrt==0.11.2",)
    assert found["jax-cuda13-plugin"].cuda_build == "13"
    assert found["nvidia-cudnn-cu13"].version == Version("9.19.0.56")
    assert (found["nvidia-cudnn-cu13"].cuda_variant, found["nvidia-cudnn-cu13"].cuda_build) == ("cu13", "13")
    assert found["nvidia-cuda-runtime"].cuda_build == "13.0"
    assert found["cuda-bindings"].cuda_build == "13"
    assert found["triton"].cuda_variant is None
    assert found["jax"].requires == (
        "jaxlib<=0.11.2,>=0.11.2",
        "ml_dtypes>=0.5.0",
        "numpy>=2.1",
        "opt_einsum",
        "scipy>=1.15",
    )
    assert list(found) == sorted(found)


def test_markers_are_evaluated_for_the_target_platform(fs):
    _h200(fs)
    ctx = make_ctx(env={"VIRTUAL_ENV": H200_VENV}, system="Darwin", machine="arm64")
    torch = packages.probe_packages(ctx)["torch"]
    assert torch.cuda_requires == ()
    assert 'triton==3.6.0; platform_system == "Linux"' not in torch.requires
    assert torch.cuda_variant == "cu130"  # the build is still what version.py says


# --- packages: synthetic trees --------------------------------------------------------------------


def test_cuda12_torch_wheel(fs):
    _synthetic(fs, "cu124", "/site")
    ctx = _seeded("/site")
    found = packages.probe_packages(ctx)
    assert ctx.errors == []
    torch = found["torch"]
    assert torch.version == Version("2.5.1+cu124")
    assert (torch.cuda_variant, torch.cuda_build, torch.cuda_variant_source) == (
        "cu124",
        "12.4",
        "local version tag",
    )
    assert len(torch.cuda_requires) == 12
    assert all(line.startswith("nvidia-") and "-cu12==" in line for line in torch.cuda_requires)
    assert torch.installer == "pip"
    assert torch.torch_build is not None and torch.torch_build.version == Version("2.5.1+cu124")
    assert 'opt-einsum>=3.3; extra == "opt-einsum"' not in torch.requires
    runtime = found["nvidia-cuda-runtime-cu12"]
    assert (runtime.cuda_variant, runtime.cuda_build, runtime.installer) == ("cu124", "12.4", "uv")
    assert (found["nvidia-cudnn-cu12"].cuda_variant, found["nvidia-cudnn-cu12"].cuda_build) == ("cu12", "12")
    cupy = found["cupy-cuda12x"]
    assert (cupy.cuda_variant, cupy.cuda_build, cupy.cuda_variant_source) == ("cuda12x", "12", "package name")
    vision = found["torchvision"]
    assert (vision.cuda_variant, vision.cuda_build) == ("cu124", "12.4")
    assert vision.cuda_variant_source == "torchvision/version.py"
    assert vision.torch_build is None
    assert "numpy" not in found


def test_cuda12_torch_on_arm_and_new_python(fs):
    _synthetic(fs, "cu124", "/site")
    ctx = _seeded("/site", machine="aarch64")
    ctx._cache["python.env"] = packages.PythonEnv(
        executable="/usr/bin/python3",
        version=Version("3.13.1"),
        prefix="/usr",
        kind="system",
        site_paths=("/site",),
        source=packages.Source(SourceKind.FILE, "x"),
    )
    torch = packages.probe_packages(ctx)["torch"]
    assert torch.cuda_requires == ()  # platform_machine == "x86_64" is false on aarch64
    assert not any(line.startswith("triton") for line in torch.requires)  # python_version < "3.13"
    assert torch.cuda_variant == "cu124"


def test_python_version_markers_use_the_target_not_this_interpreter(fs):
    _synthetic(fs, "cu124", "/site")
    ctx = _seeded("/site")
    ctx._cache["python.env"] = packages.PythonEnv(
        executable="/usr/bin/python3",
        version=Version("3.12.3"),
        prefix="/usr",
        kind="system",
        site_paths=("/site",),
        source=packages.Source(SourceKind.FILE, "x"),
    )
    torch = packages.probe_packages(ctx)["torch"]
    assert any(line.startswith("triton==3.1.0") for line in torch.requires)
    assert any(line.startswith("setuptools") for line in torch.requires)  # python_version >= "3.12"


def test_rocm_torch(fs):
    _synthetic(fs, "rocm61", "/site")
    ctx = _seeded("/site")
    found = packages.probe_packages(ctx)
    torch = found["torch"]
    assert (torch.cuda_variant, torch.cuda_build) == ("rocm6.1", None)
    assert torch.torch_build is not None
    assert (torch.torch_build.cuda, torch.torch_build.hip) == (None, "6.1.40091-a8dbc0c19")
    assert torch.cuda_requires == ()
    assert "pytorch-triton-rocm" in found


def test_cpu_torch(fs):
    _synthetic(fs, "cpu", "/site")
    torch = packages.probe_packages(_seeded("/site"))["torch"]
    assert (torch.cuda_variant, torch.cuda_build, torch.cuda_variant_source) == (
        "cpu",
        None,
        "local version tag",
    )


def test_macos_torch_and_mlx(fs):
    _synthetic(fs, "macos", "/site")
    ctx = _seeded("/site", system="Darwin", machine="arm64")
    found = packages.probe_packages(ctx)
    torch = found["torch"]
    assert (torch.cuda_variant, torch.cuda_build, torch.cuda_variant_source) == (
        "cpu",
        None,
        "torch/version.py",
    )
    assert torch.cuda_requires == ()
    assert found["mlx"].requires == ('mlx-metal==0.21.0; platform_system == "Darwin"',)
    assert "mlx-metal" in found


def test_requires_dist_pin_rule(fs):
    fs.create_file(
        "/site/torch-2.3.0.dist-info/METADATA",
        contents=(
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.3.0\n"
            'Requires-Dist: nvidia-cuda-nvrtc-cu12==12.1.105; platform_system == "Linux"\n'
            'Requires-Dist: nvidia-cuda-runtime-cu12==12.1.105; platform_system == "Linux"\n'
        ),
    )
    fs.create_file(
        "/site/vllm-0.6.0.dist-info/METADATA",
        contents=("Metadata-Version: 2.1\nName: vllm\nVersion: 0.6.0\nRequires-Dist: cuda-toolkit[cudart]==12.8.1\n"),
    )
    ctx = _seeded("/site")
    found = packages.probe_packages(ctx)
    torch = found["torch"]
    assert (torch.cuda_variant, torch.cuda_build) == ("cu121", "12.1")
    assert torch.cuda_variant_source == "Requires-Dist nvidia-cuda-runtime-cu12==12.1.105"
    assert _errors(ctx) == ["packages: torch/version.py is missing"]
    vllm = found["vllm"]
    assert (vllm.cuda_variant, vllm.cuda_build) == ("cu128", "12.8")
    assert vllm.cuda_variant_source == "Requires-Dist cuda-toolkit==12.8.1"


def test_corrupt_metadata(fs):
    # not UTF-8 and no Version line: the directory name still gives the version
    fs.create_file("/site/torch-2.3.0.dist-info/METADATA", contents=b"\xff\xfe\x00\x81garbage\nName: torch\n")
    # an invalid version: skipped, recorded
    fs.create_file("/site/cupy_cuda12x-13.0.0.dist-info/METADATA", contents="Name: cupy-cuda12x\nVersion: thirteen\n")
    # no version anywhere
    fs.create_file("/site/triton.egg-info/PKG-INFO", contents="Metadata-Version: 1.0\nName: triton\n")
    # METADATA missing
    fs.create_dir("/site/xformers-0.0.28.dist-info")
    ctx = _seeded("/site")
    found = packages.probe_packages(ctx)
    assert set(found) == {"torch"}
    assert found["torch"].version == Version("2.3.0")
    assert found["torch"].source.kind is SourceKind.FILENAME
    assert found["torch"].source.where == "/site/torch-2.3.0.dist-info"
    messages = _errors(ctx)
    assert "packages: cupy-cuda12x: invalid version 'thirteen'" in messages
    assert "packages: triton: no version in its metadata or directory name" in messages
    assert any(m.startswith("packages: cannot read the metadata of xformers") for m in messages)


def test_odd_case_directory_name(fs):
    fs.create_file(
        "/site/NVIDIA_CUDNN_CU12-9.1.0.70.dist-info/METADATA",
        contents="Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n",
    )
    found = packages.probe_packages(_seeded("/site"))
    assert list(found) == ["nvidia-cudnn-cu12"]
    assert found["nvidia-cudnn-cu12"].cuda_build == "12"


def test_egg_info_with_requires_txt(fs):
    fs.create_file(
        "/site/pynvml-11.5.0-py3.8.egg-info/PKG-INFO",
        contents="Metadata-Version: 1.2\nName: pynvml\nVersion: 11.5.0\n",
    )
    fs.create_file(
        "/site/pynvml-11.5.0-py3.8.egg-info/requires.txt",
        contents='packaging\n\n[:sys_platform == "win32"]\npywin32\n\n[test]\npytest\n',
    )
    fs.create_file(
        "/site/onnxruntime_gpu-1.19.2-py3.11.egg-info",
        contents="Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: 1.19.2\n",
    )
    found = packages.probe_packages(_seeded("/site"))
    assert found["pynvml"].requires == ("packaging",)
    assert found["onnxruntime-gpu"].version == Version("1.19.2")


def test_first_site_directory_wins(fs):
    fs.create_file("/a/torch-2.5.1.dist-info/METADATA", contents="Name: torch\nVersion: 2.5.1\n")
    fs.create_file("/b/torch-2.4.0.dist-info/METADATA", contents="Name: torch\nVersion: 2.4.0\n")
    ctx = make_ctx()
    ctx._cache["python.site_paths"] = ("/a", "/missing", "/b")
    assert packages.distributions(ctx)["torch"].location == "/a"
    assert packages.probe_packages(ctx)["torch"].version == Version("2.5.1")


def test_uninteresting_metadata_is_never_opened(fs):
    _synthetic(fs, "cu124", "/site")
    for i in range(2000):
        fs.create_file(f"/site/pkg_{i:04d}-1.0.dist-info/METADATA", contents=b"Version: \xff not a version\n")
    ctx = _seeded("/site")
    opened: list[str] = []
    real_read_text, real_read_bytes = ctx.fs.read_text, ctx.fs.read_bytes

    def read_text(path, *args, **kwargs):
        opened.append(path)
        return real_read_text(path, *args, **kwargs)

    def read_bytes(path, *args, **kwargs):
        opened.append(path)
        return real_read_bytes(path, *args, **kwargs)

    ctx.fs.read_text = read_text  # type: ignore[method-assign]
    ctx.fs.read_bytes = read_bytes  # type: ignore[method-assign]
    found = packages.probe_packages(ctx)
    assert len(packages.distributions(ctx)) == 2006
    assert "pkg-0000" in packages.distributions(ctx)
    assert not [path for path in opened if "/pkg_" in path]
    assert ctx.errors == []
    assert set(found) == {
        "torch",
        "torchvision",
        "nvidia-cuda-runtime-cu12",
        "nvidia-cudnn-cu12",
        "cupy-cuda12x",
    }


def test_scan_of_a_large_real_site_directory_is_fast(tmp_path):
    """On a real disk (no pyfakefs), 2000 distributions plus torch's stack: well under the budget."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(fixture_path("h200", "tree", "opt", "torch", ".venv", "lib", "python3.12", "site-packages"), site)
    for i in range(2000):
        (site / f"pkg_{i:04d}-1.0.dist-info").mkdir()
    ctx = ProbeContext(fs=RootFS(str(tmp_path)), env={}, runner=FakeRunner())
    ctx._cache["python.site_paths"] = ("/site",)
    start = time.perf_counter()
    found = packages.probe_packages(ctx)
    elapsed = time.perf_counter() - start
    assert "torch" in found
    assert [e for e in ctx.errors if e.probe == "packages"] == []
    assert elapsed < 0.5, elapsed


def test_results_are_cached_per_context(fs):
    _synthetic(fs, "cpu", "/site")
    ctx = _seeded("/site")
    assert packages.probe_packages(ctx) is packages.probe_packages(ctx)
    assert packages.distributions(ctx) is packages.distributions(ctx)
