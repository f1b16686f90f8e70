"""CD440 (llama-cpp-python built without CUDA) and CD441 (its CUDA major against the driver), on the real H200
capture (driver 580.159.04, CUDA 13.0 toolkit with nvcc) with llama-cpp-python's objects changed one at a time;
the rule reading a build (cudadoctor/rules/llama_cpp.py) and the commands that rebuild it (cudadoctor/fixes)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion, Facts, InstalledPackage, LlamaCppBuild, Source, SourceKind
from cudadoctor.fixes.build import pip
from cudadoctor.fixes.llama_cpp import llama_cpp_index_with, llama_cpp_prebuilt, llama_cpp_source_build
from cudadoctor.fixes.parse import parse
from cudadoctor.fixes.verify import verify
from cudadoctor.rules.llama_cpp import llama_cpp_cuda, llama_cpp_other_backend
from cudadoctor.testing import run_check

SITE = "/opt/venv/lib/python3.12/site-packages"
MATRIX = CompatMatrix(cache_dir=False)


def _build(objects: tuple[str, ...], needs: tuple[str, ...] = (), unread: tuple[str, ...] = ()) -> LlamaCppBuild:
    return LlamaCppBuild(f"{SITE}/llama_cpp", objects, needs, unread, Source(SourceKind.FILE, f"{SITE}/llama_cpp"))


CPU_030 = _build(("llama_cpp/lib/libggml-base.so", "llama_cpp/lib/libggml-cpu.so", "llama_cpp/lib/libllama.so"))
CUDA12_030 = _build(
    (*CPU_030.objects, "llama_cpp/lib/libggml-cuda.so"), ("libcublas.so.12", "libcublasLt.so.12", "libcudart.so.12")
)


def _with(facts: Facts, build: LlamaCppBuild, version: str = "0.3.4") -> Facts:
    pkg = InstalledPackage("llama-cpp-python", Version(version), SITE, Source(SourceKind.METADATA, SITE))
    return replace(facts, llama_cpp=build, packages={**facts.packages, "llama-cpp-python": pkg})


# --- the rule -----------------------------------------------------------------------------------------


def test_a_build_is_cuda_by_its_cuda_needs_or_its_cuda_backend_library():
    assert llama_cpp_cuda(CUDA12_030) == (True, 12)
    assert llama_cpp_cuda(_build(("llama_cpp/libllama.so",), ("libcudart.so.11.0", "libcublas.so.11"))) == (True, 11)
    # a libggml-cuda.so whose runtime is linked statically still is a CUDA build, of a major not known
    assert llama_cpp_cuda(_build(("llama_cpp/lib/libggml-cuda.so",))) == (True, None)


def test_a_build_with_every_object_read_and_no_cuda_need_is_a_cpu_build():
    assert llama_cpp_cuda(CPU_030) == (False, None)
    assert llama_cpp_other_backend(CPU_030) is None


def test_an_unread_object_or_no_object_leaves_the_build_undecided():
    assert llama_cpp_cuda(_build((), ())) == (None, None)
    assert llama_cpp_cuda(replace(CPU_030, unread=("llama_cpp/lib/libggml-cpu.so: not read: truncated",))) == (
        None,
        None,
    )


def test_another_gpu_backend_is_named():
    vulkan = _build((*CPU_030.objects, "llama_cpp/lib/libggml-vulkan.so"))
    assert llama_cpp_cuda(vulkan) == (False, None)
    assert llama_cpp_other_backend(vulkan) == "vulkan"


# --- the commands ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "flag"),
    [("0.1.78", "-DLLAMA_CUBLAS=on"), ("0.2.59", "-DLLAMA_CUBLAS=on"), ("0.2.60", "-DLLAMA_CUDA=on"),
     ("0.2.81", "-DLLAMA_CUDA=on"), ("0.2.82", "-DGGML_CUDA=on"), ("0.3.16", "-DGGML_CUDA=on")],
)  # fmt: skip
def test_the_source_build_takes_the_flag_the_releases_readme_gives(version: str, flag: str):
    command = llama_cpp_source_build(MATRIX, Version(version))
    assert command is not None
    text = pip(command)
    assert (
        text == f"CMAKE_ARGS={flag} python -m pip install --force-reinstall --no-cache-dir llama-cpp-python=={version}"
    )
    installed = {"llama-cpp-python": Version(version)}
    assert verify(parse(text), MATRIX, installed).ok  # type: ignore[arg-type]


def test_no_flag_before_the_first_cublas_release():
    assert llama_cpp_source_build(MATRIX, Version("0.1.48")) is None


def test_the_prebuilt_wheel_is_not_built_for_a_newer_minor_than_the_runtime():
    assert llama_cpp_index_with(MATRIX, Version("0.3.25"), {Version("13.0")}).tag == "cu130"  # type: ignore[union-attr]
    assert llama_cpp_index_with(MATRIX, Version("0.3.25"), {Version("12.2")}).tag == "cu122"  # type: ignore[union-attr]
    assert llama_cpp_index_with(MATRIX, Version("0.3.25"), {Version("12.0")}) is None


def test_the_prebuilt_wheel_comes_from_an_index_that_lists_the_release():
    index = llama_cpp_index_with(MATRIX, Version("0.2.90"), {Version("12.6")})
    assert index is not None and index.tag == "cu124"  # the newest CUDA 12 index listing 0.2.90 (no cu125 then)
    text = pip(llama_cpp_prebuilt(index, Version("0.2.90")))
    assert text.endswith(
        "llama-cpp-python==0.2.90 --extra-index-url https://abetlen.github.io/llama-cpp-python/whl/cu124"
    )
    assert verify(parse(text), MATRIX, {}).ok  # type: ignore[arg-type]
    assert llama_cpp_index_with(MATRIX, Version("0.2.11"), {Version("12.6")}) is None  # before the indexes
    assert llama_cpp_index_with(MATRIX, Version("0.3.4"), {Version("11.8")}) is None  # cu118 starts at 0.3.25


def test_the_verifier_refuses_an_index_without_the_release_and_a_plain_sdist_install():
    wrong = parse(
        "pip install llama-cpp-python==0.3.4 --extra-index-url https://abetlen.github.io/llama-cpp-python/whl/cu125"
    )
    assert any("lists no such release" in p for p in verify(wrong, MATRIX, {}).problems)  # type: ignore[arg-type]
    plain = parse("pip install --force-reinstall llama-cpp-python==0.3.4")
    assert any("without CUDA" in p for p in verify(plain, MATRIX, {}).problems)  # type: ignore[arg-type]
    unknown = parse("CMAKE_ARGS=-DGGML_CUDA=on pip install llama-cpp-python==0.3.99")
    assert any("no such release" in p for p in verify(unknown, MATRIX, {}).problems)  # type: ignore[arg-type]


# --- CD440 ----------------------------------------------------------------------------------------------


def test_cd440_a_cuda_build_is_fine(h200):
    assert run_check("CD440", _with(h200, CUDA12_030)).status is Status.OK


def test_cd440_a_cpu_build_beside_nvcc_fails_with_the_rebuild_of_the_installed_release(h200):
    finding = run_check("CD440", _with(h200, CPU_030, "0.3.4"))
    assert finding.status is Status.FAIL
    assert "built without CUDA" in finding.message and "BLAS = 0" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "CMAKE_ARGS=-DGGML_CUDA=on python -m pip install --force-reinstall --no-cache-dir llama-cpp-python==0.3.4",
    )  # nvcc is CUDA 13.0: no CUDA 13 index lists 0.3.4, so no prebuilt wheel


def test_cd440_the_prebuilt_wheel_of_the_installed_cuda_is_offered_where_its_index_has_the_release(h200):
    finding = run_check("CD440", _with(h200, CPU_030, "0.3.25"))
    assert finding.remediation is not None
    assert finding.remediation.commands[1].endswith(
        "--extra-index-url https://abetlen.github.io/llama-cpp-python/whl/cu130"
    )


def test_cd440_without_a_toolkit_warns_and_says_to_install_one_first(h200):
    facts = replace(_with(h200, CPU_030, "0.2.11"), toolkits=(), nvcc=None, cuda_wheels=None)
    finding = run_check("CD440", facts)
    assert finding.status is Status.WARN
    assert finding.remediation is not None and finding.remediation.text.startswith("Install the CUDA toolkit")
    assert finding.remediation.commands == (
        "CMAKE_ARGS=-DLLAMA_CUBLAS=on python -m pip install --force-reinstall --no-cache-dir llama-cpp-python==0.2.11",
    )


def test_cd440_could_not_judge_an_unread_object(h200):
    build = replace(CPU_030, unread=("llama_cpp/lib/libggml-cpu.so: not read: truncated",))
    finding = run_check("CD440", _with(h200, build))
    assert finding.status is Status.UNKNOWN and "truncated" in (finding.reason or "")


def test_cd440_not_applicable_without_llama_cpp_or_without_nvidia(h200):
    assert run_check("CD440", h200).status is Status.NOT_APPLICABLE
    facts = replace(_with(h200, CPU_030), driver=None, gpus=(), visible=replace(h200.visible, device_nodes=()))
    assert run_check("CD440", facts).status is Status.NOT_APPLICABLE


# --- CD441 ----------------------------------------------------------------------------------------------


def _old_driver(facts: Facts, version: str) -> Facts:
    assert facts.driver is not None
    return replace(facts, driver=replace(facts.driver, version=DriverVersion(version), cuda_api=None))


def test_cd441_a_cuda_12_build_on_a_driver_of_cuda_12_or_newer_is_fine(h200):
    assert run_check("CD441", _with(h200, CUDA12_030)).status is Status.OK


def test_cd441_a_cuda_12_wheel_on_a_cuda_11_driver_fails(h200):
    facts = replace(_old_driver(_with(h200, CUDA12_030, "0.3.4"), "470.256.02"), toolkits=(), nvcc=None)
    finding = run_check("CD441", facts)
    assert finding.status is Status.FAIL
    assert "built for CUDA 12" in finding.message and "insufficient" in finding.message
    assert "525.60.13" in finding.message  # CUDA 12's minor-version compatibility floor (compat/cuda.toml)


def test_cd441_not_applicable_to_a_cpu_build_and_could_not_judge_an_unknown_major(h200):
    assert run_check("CD441", _with(h200, CPU_030)).status is Status.NOT_APPLICABLE
    static = _build(("llama_cpp/lib/libggml-cuda.so",))
    assert run_check("CD441", _with(h200, static)).status is Status.UNKNOWN
