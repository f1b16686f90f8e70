"""CD105, CD201, CD301-303, CD403, CD501, CD703, CD902 and CD401's missing pins, on the real H200's facts."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import (
    DriverVersion,
    GpuInfo,
    InstalledPackage,
    KernelModule,
    LibcudaFile,
    NvccInfo,
    Source,
    SourceKind,
)
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env

MD = Source(SourceKind.METADATA, "/site/x.dist-info/METADATA")


def _pkg(name: str, version: str, **kw) -> InstalledPackage:
    return InstalledPackage(name, Version(version), "/site", MD, **kw)


@pytest.mark.parametrize("code", ["CD105", "CD201", "CD301", "CD302", "CD303", "CD403", "CD703", "CD902"])
def test_healthy_h200_is_clean(h200, code):
    assert run_check(code, h200).status is Status.OK


def test_cd201_nvcc_major_differs_from_torch(h200):
    toolkit = replace(h200.toolkits[0], version=Version("12.4.1"), nvcc_version=Version("12.4.131"))
    nvcc = NvccInfo(
        "/usr/local/cuda/bin/nvcc", Version("12.4"), Version("12.4.131"), Source(SourceKind.COMMAND, "nvcc")
    )
    finding = run_check("CD201", replace(h200, toolkits=(toolkit,), nvcc=nvcc))
    assert finding.status is Status.FAIL  # CUDA_HOME is set: extensions get built with it
    assert "nvcc CUDA 12.4" in finding.message and "torch was built with CUDA 13.0" in finding.message
    minor = replace(nvcc, release=Version("13.1"), version=Version("13.1.80"))
    assert run_check("CD201", replace(h200, nvcc=minor)).status is Status.OK


def test_cd301_cu12_and_cu13_of_one_library(h200):
    packages = {**h200.packages, "nvidia-cudnn-cu12": _pkg("nvidia-cudnn-cu12", "9.1.0.70")}
    finding = run_check("CD301", replace(h200, packages=packages))
    assert finding.status is Status.WARN
    assert "nvidia-cudnn-cu12 9.1.0.70 and nvidia-cudnn-cu13 9.19.0.56" in finding.message
    runtime12 = {**h200.packages, "nvidia-cuda-runtime-cu12": _pkg("nvidia-cuda-runtime-cu12", "12.4.127")}
    assert (
        "nvidia-cuda-runtime-cu12 12.4.127 and nvidia-cuda-runtime 13.0.96"
        in run_check("CD301", replace(h200, packages=runtime12)).message
    )


def test_cd302_system_cudnn_on_ld_library_path_shadows_the_pin(h200):
    facts = with_env(h200, LD_LIBRARY_PATH="/usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64")
    system = next(c for c in facts.cudnn if c.origin == "system")
    moved = replace(system, lib_paths=("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0",))
    facts = replace(facts, cudnn=tuple(moved if c is system else c for c in facts.cudnn))
    finding = run_check("CD302", facts)
    assert finding.status is Status.WARN
    assert (
        "cuDNN 9.14.0 in /usr/lib/x86_64-linux-gnu (on LD_LIBRARY_PATH) is loaded before the cuDNN 9.19.0.56"
        in finding.message
    )
    # In the ld cache only (not LD_LIBRARY_PATH): torch's RUNPATH wins, nothing to report.
    assert run_check("CD302", replace(facts, host=h200.host)).status is Status.OK


def test_cd303_cupy_without_its_cuda_major(h200):
    packages = {**h200.packages, "cupy-cuda12x": _pkg("cupy-cuda12x", "13.3.0")}
    finding = run_check("CD303", replace(h200, packages=packages))
    assert finding.status is Status.FAIL
    assert "cupy-cuda12x 13.3.0 needs CUDA 12 libraries, but this environment provides CUDA 13" in finding.message
    assert finding.remediation.commands == ("python -m pip install 'cupy-cuda12x[ctk]'",)


def _cupy_on(h200, name: str, version: str, toolkit: str):
    """The H200 with only a CUDA ``toolkit`` (no CUDA runtime wheels) and the CuPy package ``name``."""
    kept = {n: p for n, p in h200.packages.items() if not n.startswith(("nvidia-cuda-runtime", "cupy"))}
    facts = replace(
        h200,
        packages={**kept, name: _pkg(name, version)},
        toolkits=(replace(h200.toolkits[0], version=Version(toolkit)),),
        cuda_wheels=None,
    )
    return run_check("CD303", facts)


def test_cd303_per_minor_cupy_before_cuda_11_needs_its_exact_minor(h200):
    # cupy-cuda102's PyPI description: a wheel for CUDA 10.2 (compat/ecosystem.toml); 10.x sonames carry the minor.
    finding = _cupy_on(h200, "cupy-cuda102", "12.3.0", "10.1.243")
    assert finding.status is Status.FAIL
    assert "cupy-cuda102 12.3.0 is for CUDA 10.2" in finding.message and "provides CUDA 10.1" in finding.message
    assert _cupy_on(h200, "cupy-cuda102", "12.3.0", "10.2.89").status is Status.OK


def test_cd303_per_minor_cupy_of_cuda_11_warns_and_names_the_per_major_package(h200):
    finding = _cupy_on(h200, "cupy-cuda111", "12.3.0", "11.8.0")
    assert finding.status is Status.WARN
    assert "cupy-cuda111 12.3.0 is for CUDA 11.1" in finding.message
    assert finding.remediation.commands == (
        "python -m pip uninstall -y cupy-cuda111",
        "python -m pip install cupy-cuda11x",
    )
    assert _cupy_on(h200, "cupy-cuda111", "12.3.0", "11.1.1").status is Status.OK


def test_cd303_cupy_cuda11x_range_is_11_2_to_11_8(h200):
    assert _cupy_on(h200, "cupy-cuda11x", "13.6.0", "11.8.0").status is Status.OK
    finding = _cupy_on(h200, "cupy-cuda11x", "13.6.0", "11.0.3")
    assert finding.status is Status.WARN and "is for CUDA 11.2 to 11.8" in finding.message
    # a different major stays the major check's error
    assert _cupy_on(h200, "cupy-cuda102", "12.3.0", "11.8.0").status is Status.FAIL


def test_cd303_unknown_per_minor_cupy_is_not_judged(h200):
    finding = _cupy_on(h200, "cupy-cuda999", "1.0.0", "12.8.0")
    assert finding.status is Status.UNKNOWN and "cupy-cuda999" in finding.reason


def test_cd403_plugin_and_jaxlib_mismatch(h200):
    plugin = replace(h200.packages["jax-cuda13-plugin"], version=Version("0.11.1"))
    finding = run_check("CD403", replace(h200, packages={**h200.packages, "jax-cuda13-plugin": plugin}))
    assert finding.status is Status.FAIL
    assert "jax-cuda13-plugin 0.11.1 does not match jaxlib 0.11.2" in finding.message
    assert finding.remediation.commands == ("python -m pip install -U 'jax[cuda13]'",)


def test_cd403_cudnn_below_the_plugins_minimum(h200):
    cudnn = replace(h200.packages["nvidia-cudnn-cu13"], version=Version("9.10.0.1"))
    finding = run_check("CD403", replace(h200, packages={**h200.packages, "nvidia-cudnn-cu13": cudnn}))
    assert "nvidia-cudnn-cu13 9.10.0.1 is below 9.12.0.46, the minimum of jax-cuda13-plugin" in finding.message


def _bundled_jax(h200, jaxlib: str, *cudnn: str):
    from cudadoctor.facts.model import LibraryCopy

    packages = {n: p for n, p in h200.packages.items() if not n.startswith("jax")}
    packages["jaxlib"] = _pkg("jaxlib", jaxlib)
    copies = tuple(
        LibraryCopy("cudnn", Version(v), "conda", f"/env{i}/lib/libcudnn.so.8", MD) for i, v in enumerate(cudnn)
    )
    return replace(h200, packages=packages, cudnn=copies)


def test_cd403_bundled_jaxlib_needs_its_cudnn(h200):
    # jax#16901: jaxlib 0.4.14+cuda11.cudnn86 with conda's cuDNN 8.5.0
    finding = run_check("CD403", _bundled_jax(h200, "0.4.14+cuda11.cudnn86", "8.5.0"))
    assert finding.status is Status.FAIL
    assert "jaxlib 0.4.14+cuda11.cudnn86 was built against cuDNN 8.6" in finding.message
    assert run_check("CD403", _bundled_jax(h200, "0.4.14+cuda11.cudnn86", "8.5.0", "8.9.2")).status is Status.OK
    assert run_check("CD403", _bundled_jax(h200, "0.3.25+cuda11.cudnn805", "8.0.5")).status is Status.OK
    # no cudnnXY in the tag: not judged; no cuDNN 8 copy at all: CD304's
    assert run_check("CD403", _bundled_jax(h200, "0.1.65+cuda112", "8.0.5")).status is Status.UNKNOWN
    assert run_check("CD403", _bundled_jax(h200, "0.4.14+cuda11.cudnn86")).status is Status.NOT_APPLICABLE


def test_cd501_vllm_below_its_floor(h200):
    packages = {**h200.packages, "vllm": _pkg("vllm", "0.33.0")}
    facts = replace(h200, packages=packages, gpus=(GpuInfo(0, "Tesla V100-SXM2-16GB", "7.0", MD),))
    finding = run_check("CD501", facts)
    assert finding.status is Status.FAIL
    assert finding.message.startswith("vLLM 0.33.0 needs compute capability 7.5 or higher; GPU 0 Tesla V100")
    assert run_check("CD501", replace(facts, gpus=h200.gpus)).status is Status.OK
    unknown = {**h200.packages, "vllm": _pkg("vllm", "0.4.0")}
    assert run_check("CD501", replace(facts, packages=unknown)).status is Status.UNKNOWN


def test_cd703_image_env_contradicts_installed(h200):
    assert run_check("CD703", h200).status is Status.OK  # NV_CUDNN_VERSION 9.14.0.64 vs apt 9.14.0: agrees
    finding = run_check("CD703", with_env(h200, NCCL_VERSION="2.21.5-1"))
    assert finding.status is Status.WARN
    assert "NCCL_VERSION says 2.21.5-1, installed: 2.28.3" in finding.message


#: Real nvidia/cuda images: CUDA_VERSION (the toolkit release) and the cuda_cudart version in their
#: version.json (NVIDIA's "CUDA Toolkit Major Component Versions" table of each release's notes).
REAL_IMAGES = [("11.8.0", "11.8.89"), ("12.1.1", "12.1.105"), ("12.4.1", "12.4.127"), ("12.6.3", "12.6.77"),
               ("12.8.1", "12.8.90")]  # fmt: skip


def _toolkit_from_version_json(h200, cudart: str):
    major_minor = ".".join(cudart.split(".")[:2])
    source = Source(SourceKind.FILE, f"/usr/local/cuda-{major_minor}/version.json#cuda_cudart")
    return replace(h200.toolkits[0], version=Version(cudart), source=source)


@pytest.mark.parametrize(("cuda_version", "cudart"), REAL_IMAGES, ids=[i[0] for i in REAL_IMAGES])
def test_cd703_release_numbering_is_not_drift(h200, cuda_version, cudart):
    toolkit = _toolkit_from_version_json(h200, cudart)
    facts = with_env(replace(h200, toolkits=(toolkit,)), CUDA_VERSION=cuda_version)
    assert run_check("CD703", facts).status is Status.OK


def test_cd703_another_release_is_drift(h200):
    # an image that says 12.4.1 while the toolkit's cudart is 12.6.77 (upgraded in a derived image)
    facts = with_env(replace(h200, toolkits=(_toolkit_from_version_json(h200, "12.6.77"),)), CUDA_VERSION="12.4.1")
    finding = run_check("CD703", facts)
    assert finding.status is Status.WARN and "CUDA_VERSION says 12.4.1" in finding.message
    # a version.txt / cuda.h version is the release's own numbering: compared in full
    header = replace(h200.toolkits[0], version=Version("11.0.221"), source=Source(SourceKind.FILE, "/c/version.txt"))
    stale = with_env(replace(h200, toolkits=(header,)), CUDA_VERSION="11.0.194")
    assert run_check("CD703", stale).status is Status.WARN


def test_cd105_forward_compat_on_geforce(h200):
    compat = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
    driver = replace(
        h200.driver,
        kernel_module=KernelModule(DriverVersion("550.54.15"), "open", "x86_64", Source(SourceKind.FILE, "/proc")),
        libcuda_files=(LibcudaFile(compat, DriverVersion("580.95.05"), "compat", True),),
        loaded_libcuda=compat,
    )
    geforce = (GpuInfo(0, "NVIDIA GeForce RTX 4090", "8.9", MD),)
    finding = run_check("CD105", replace(h200, driver=driver, gpus=geforce))
    assert finding.status is Status.FAIL and "cuInit fails with 804" in finding.message
    assert run_check("CD105", replace(h200, driver=driver)).status is Status.OK  # H200: data center
    # a GPU the data does not place, or an RTX that may not be an NGC Server Ready SKU: not judged, never OK
    for name in ("NVIDIA Future GPU 9000", "NVIDIA RTX A4000"):
        finding = run_check("CD105", replace(h200, driver=driver, gpus=(GpuInfo(0, name, "8.6", MD),)))
        assert finding.status is Status.UNKNOWN, name


def test_cd902_data_age(h200, monkeypatch):
    assert run_check("CD902", h200).status is Status.OK

    class _Later(datetime.date):
        @classmethod
        def today(cls):
            return datetime.date(2027, 12, 1)

    monkeypatch.setattr(datetime, "date", _Later)
    finding = run_check("CD902", h200)
    assert finding.status is Status.WARN
    assert finding.remediation.commands == ("cudadoctor update",)


def test_cd401_pinned_wheel_not_installed(h200):
    packages = {n: p for n, p in h200.packages.items() if n != "nvidia-nccl-cu13"}
    finding = run_check("CD401", replace(h200, packages=packages))
    assert finding.status is Status.FAIL
    assert (
        "torch 2.11.0 requires nvidia-nccl-cu13==2.28.9" in finding.message and "it is not installed" in finding.message
    )


def test_no_false_alarm_for_unscanned_dependencies(h200):
    # torch also requires sympy, filelock ...: never scanned, never reported missing.
    assert "sympy" not in run_check("CD401", h200).message


def test_cd404_python_without_wheels(h200):
    assert run_check("CD404", h200).status is Status.OK  # torch 2.11.0 has cp312 wheels
    python = replace(h200.python, version=Version("3.9.18"))
    finding = run_check("CD404", replace(h200, python=python))
    assert finding.status is Status.WARN
    assert finding.message.startswith("Python 3.9: torch 2.11.0 has wheels for Python 3.10, 3.11, 3.12, 3.13, 3.14")


def _requested(facts, *requirements: str):
    from cudadoctor.checks import ALL_CHECKS
    from cudadoctor.checks.engine import check_values
    from cudadoctor.checks.engine import run_check as engine_run
    from cudadoctor.data import CompatMatrix

    values = check_values(facts, CompatMatrix(), requirements=requirements)
    return engine_run(ALL_CHECKS["CD404"], values, live=facts.mode == "live")


def test_cd404_requested_release_when_the_install_failed(h200):
    # pytorch#110436: Python 3.12, `pip install torch==2.1.0` found nothing; torch 2.1.0 has cp38-cp311 only
    python = replace(h200.python, version=Version("3.12.0"))
    facts = replace(h200, python=python, packages={k: v for k, v in h200.packages.items() if k != "torch"})
    finding = _requested(facts, "torch==2.1.0")
    assert finding.status is Status.WARN
    assert "the requested torch==2.1.0 (2.1.0) has wheels for Python 3.8, 3.9, 3.10, 3.11" in finding.message
    assert finding.evidence["requested"] == "torch==2.1.0"
    assert finding.remediation.commands == ("python -m pip install 'torch>=2.2.0'",)  # first with cp312 wheels
    # a range one release of which has wheels is fine; a release the data does not hold cannot be judged
    assert _requested(facts, "torch>=2.1").status is Status.OK
    assert _requested(facts, "torch==0.4.1").status is Status.UNKNOWN  # not on PyPI, no row in compat/torch.toml
    # an installed torch is judged as installed, never by the assertion
    assert _requested(replace(h200, python=python), "torch==2.1.0").status is Status.OK


def test_cd404_judges_the_wheels_of_the_host_platform(h200):
    # pytorch#92826: torch 1.13.1 had cp311 wheels for manylinux x86_64 but not for Windows (PyPI file names)
    python = replace(h200.python, version=Version("3.11.1"))
    facts = replace(h200, python=python, packages={k: v for k, v in h200.packages.items() if k != "torch"})
    assert _requested(facts, "torch==1.13.1").status is Status.OK
    windows = replace(facts, host=replace(h200.host, os="Windows"))
    finding = _requested(windows, "torch==1.13.1")
    assert finding.status is Status.WARN
    assert "torch==1.13.1 (1.13.1) has wheels for Python 3.7, 3.8, 3.9, 3.10 on windows" in finding.message
    assert finding.remediation.commands == ("python -m pip install 'torch>=2.0.0'",)
    # PyPI had no Windows wheel of torch 1.6.0 (download.pytorch.org had): not judged as "no wheels"
    assert _requested(windows, "torch==1.6.0").status is Status.UNKNOWN


def test_cd404_requested_tensorflow(h200):
    # tensorflow#62777: Python 3.12 and TensorFlow 2.15 (cp39-cp311 wheels only)
    python = replace(h200.python, version=Version("3.12.1"))
    facts = replace(h200, python=python, packages={k: v for k, v in h200.packages.items() if k != "torch"})
    finding = _requested(facts, "tensorflow==2.15.0")
    assert finding.status is Status.WARN
    assert "the requested tensorflow==2.15.0 (2.15.0) has wheels for Python 3.9, 3.10, 3.11" in finding.message
    assert finding.remediation.commands == ("python -m pip install 'tensorflow>=2.16.1'",)
    assert _requested(facts, "tensorflow==2.16.1").status is Status.OK
    assert _requested(facts, "tensorflow==1.15.0").status is Status.UNKNOWN  # before the data
    assert _requested(facts, "tensorflow==2.11.0").status is Status.WARN  # cp37-cp310 wheels only


def test_cd902_names_a_corrupt_update_cache(h200, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "cudadoctor").mkdir()
    (tmp_path / "cudadoctor" / "index-releases.json").write_text("{not json")
    finding = run_check("CD902", h200)
    assert finding.status is Status.WARN
    assert finding.message.startswith("the package-index cache cannot be used (")
    assert finding.remediation.commands == ("cudadoctor update",)


def test_cd303_per_minor_cupy_from_11_2_runs_on_a_newer_minor(h200):
    """Minor-version compatibility: from CUDA 11.2 the libraries keep their sonames, so cupy-cuda112 with only an
    11.4 toolkit is fine (no false alarm); with only 11.1 (older than it was built for) it is not."""
    assert _cupy_on(h200, "cupy-cuda112", "10.6.0", "11.4.4").status is Status.OK
    assert _cupy_on(h200, "cupy-cuda114", "10.6.0", "11.2.2").status is Status.WARN
