"""CD302 (loader view), CD304, CD306 and CD420 on the real H200 snapshot, changed one fact at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.checks.loader import wheel_for
from cudadoctor.facts.model import (
    InstalledPackage,
    LinkedFile,
    LoaderView,
    NeededLibrary,
    Source,
    SourceKind,
    TorchBuild,
)
from cudadoctor.testing import run_check

SITE = "/opt/venv/lib/python3.12/site-packages"


def wheel_file(name: str, dist: str, version: str, via: str) -> LinkedFile:
    return LinkedFile(f"{SITE}/nvidia/{name}", via, Version(version), dist)


def nvjitlink_view(loaded_version: str, via: str = "LD_LIBRARY_PATH") -> LoaderView:
    loaded = LinkedFile(f"/usr/local/cuda-12.2/lib64/libnvJitLink.so.{loaded_version}", via, Version(loaded_version))
    wheel = wheel_file("nvjitlink/lib/libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.4.127", "RUNPATH")
    need = NeededLibrary("nvidia-cusparse-cu12", f"{SITE}/nvidia/cusparse/lib/libcusparse.so.12",
                         "libnvJitLink.so.12", loaded, (wheel,))  # fmt: skip
    return LoaderView(preloaded=(loaded,) if via == "LD_PRELOAD" else (), needs=(need,), cache="test")


# --- CD302 -------------------------------------------------------------------------------------------


def test_cd302_older_toolkit_nvjitlink_on_ld_library_path_is_an_error(h200):
    finding = run_check("CD302", replace(h200, loader=nvjitlink_view("12.2.140")))
    assert finding.status is Status.FAIL
    assert (
        "12.2.140" in finding.message and "12.4.127" in finding.message and "nvidia-nvjitlink-cu12" in finding.message
    )
    assert finding.remediation is not None and "/usr/local/cuda-12.2/lib64" in finding.remediation.commands[0]


def test_cd302_a_newer_copy_is_not_a_problem(h200):
    assert run_check("CD302", replace(h200, loader=nvjitlink_view("12.6.77"))).status is Status.OK


def test_cd302_the_wheel_itself_loading_is_fine(h200):
    wheel = wheel_file("nvjitlink/lib/libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.4.127", "RUNPATH")
    need = NeededLibrary("nvidia-cusparse-cu12", "x", "libnvJitLink.so.12", wheel, ())
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is Status.OK


# --- CD304 -------------------------------------------------------------------------------------------


def missing_view(soname: str, others: tuple[str, ...] = ()) -> LoaderView:
    cudart = NeededLibrary("onnxruntime-gpu", "p.so", "libcudart.so.12", LinkedFile("/x/libcudart.so.12", "default"))
    need = NeededLibrary("onnxruntime-gpu", f"{SITE}/onnxruntime/capi/libonnxruntime_providers_cuda.so", soname,
                         None, (), others)  # fmt: skip
    return LoaderView(needs=(cudart, need), cache="/etc/ld.so.cache (12 entries)")


def test_cd304_cudnn_of_another_major_only(h200):
    finding = run_check(
        "CD304", replace(h200, loader=missing_view("libcudnn.so.9", (f"{SITE}/nvidia/cudnn/lib/libcudnn.so.8",)))
    )
    assert finding.status is Status.FAIL
    assert (
        "libcudnn.so.9" in finding.message and "libcudnn.so.8" in finding.message and "another major" in finding.message
    )
    assert finding.remediation is not None
    assert "python -m pip install 'nvidia-cudnn-cu12==9.*'" in finding.remediation.commands


def test_cd304_a_copy_outside_the_search_path_is_named(h200):
    finding = run_check(
        "CD304", replace(h200, loader=missing_view("libcudnn.so.9", ("/opt/cudnn9/lib/libcudnn.so.9",)))
    )
    assert finding.remediation is not None
    assert "export LD_LIBRARY_PATH=/opt/cudnn9/lib:$LD_LIBRARY_PATH" in finding.remediation.commands


def test_cd304_everything_resolves(h200):
    ok = NeededLibrary("torch", "t.so", "libcudnn.so.9", LinkedFile("/x/libcudnn.so.9", "RUNPATH"))
    assert run_check("CD304", replace(h200, loader=LoaderView(needs=(ok,)))).status is Status.OK


def test_cd304_not_applicable_without_needs(h200):
    assert run_check("CD304", replace(h200, loader=None)).status is Status.NOT_APPLICABLE


@pytest.mark.parametrize(
    ("soname", "major", "wheel"),
    [
        ("libcublas.so.11", 11, "nvidia-cublas-cu11"),
        ("libcublasLt.so.13", 13, "nvidia-cublas"),
        ("libcudnn.so.9", 13, "nvidia-cudnn-cu13==9.*"),
        ("libcufft.so.11", 12, "nvidia-cufft-cu12==11.*"),
        ("libnccl.so.2", 12, "nvidia-nccl-cu12"),
        ("libmyelin.so.1", 12, None),
    ],
)
def test_wheel_for(soname, major, wheel):
    assert wheel_for(soname, major) == wheel


# --- CD306 -------------------------------------------------------------------------------------------


def test_cd306_preloaded_older_nccl_is_an_error(h200):
    finding = run_check("CD306", replace(h200, loader=nvjitlink_view("12.2.140", via="LD_PRELOAD")))
    assert finding.status is Status.FAIL and "LD_PRELOAD" in finding.message
    assert finding.remediation is not None and finding.remediation.commands


def test_cd306_preloaded_newer_copy_is_a_warning(h200):
    finding = run_check("CD306", replace(h200, loader=nvjitlink_view("12.6.77", via="LD_PRELOAD")))
    assert finding.status is Status.WARN


def test_cd306_nothing_preloaded(h200):
    assert run_check("CD306", replace(h200, loader=nvjitlink_view("12.2.140"))).status is Status.OK


# --- CD420 -------------------------------------------------------------------------------------------


def package(name: str, version: str, **kw: object) -> InstalledPackage:
    return InstalledPackage(name, Version(version), SITE, Source(SourceKind.METADATA, f"{SITE}/{name}"), **kw)  # type: ignore[arg-type]


def torch(version: str, cuda: str, abi: bool | None) -> InstalledPackage:
    build = TorchBuild(Version(version), cuda, None, False, None, Source(SourceKind.FILE, "v.py"), abi)
    return package("torch", version, cuda_variant=f"cu{cuda.replace('.', '')}", cuda_build=cuda, torch_build=build)


def with_packages(facts, *pkgs):
    return replace(
        facts, packages={**{k: v for k, v in facts.packages.items() if k != "torch"}, **{p.name: p for p in pkgs}}
    )


def test_cd420_cxx11abi_true_wheel_on_pre_cxx11_torch(h200):
    facts = with_packages(
        h200, torch("2.2.0+cu118", "11.8", False), package("flash-attn", "2.5.5+cu118torch2.2cxx11abiTRUE")
    )
    finding = run_check("CD420", facts)
    assert finding.status is Status.FAIL and "cxx11abiTRUE" in finding.message
    assert finding.remediation is not None and "FLASH_ATTENTION_FORCE_BUILD=TRUE" in finding.remediation.commands[0]


def test_cd420_source_build_of_the_installed_version_is_forced(h200):
    # `pip install flash-attn==2.5.5` with flash-attn 2.5.5+cu118torch2.2cxx11abiTRUE installed: pip answers
    # "Requirement already satisfied" and builds nothing; the command must force the rebuild of that one package
    facts = with_packages(
        h200, torch("2.2.0+cu118", "11.8", False), package("flash-attn", "2.5.5+cu118torch2.2cxx11abiTRUE")
    )
    finding = run_check("CD420", facts)
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "FLASH_ATTENTION_FORCE_BUILD=TRUE python -m pip install --force-reinstall --no-deps --no-build-isolation "
        "--no-cache-dir flash-attn==2.5.5",
    )


def test_cd420_matching_wheel(h200):
    facts = with_packages(
        h200, torch("2.2.0+cu118", "11.8", False), package("flash-attn", "2.5.5+cu118torch2.2cxx11abiFALSE")
    )
    assert run_check("CD420", facts).status is Status.OK


def test_cd420_wrong_torch_minor_and_cuda_major(h200):
    facts = with_packages(
        h200, torch("2.4.0+cu124", "12.4", False), package("flash-attn", "2.5.5+cu118torch2.2cxx11abiFALSE")
    )
    finding = run_check("CD420", facts)
    assert finding.status is Status.FAIL and "torch 2.2" in finding.message and "CUDA 11" in finding.message


def test_cd420_wheel_built_against_a_torch_nightly(h200):
    facts = with_packages(h200, torch("2.3.0", "12.1", False), package("flash-attn", "2.5.7"))
    finding = run_check("CD420", facts)
    assert finding.status is Status.FAIL and "2.3.0.dev20240207" in finding.message


def test_cd420_abi_unknown_cannot_judge(h200):
    facts = with_packages(
        h200, torch("2.2.0+cu118", "11.8", None), package("flash-attn", "2.5.5+cu118torch2.2cxx11abiFALSE")
    )
    assert run_check("CD420", facts).status is Status.UNKNOWN


def test_cd420_without_flash_attn(h200):
    facts = replace(h200, packages={k: v for k, v in h200.packages.items() if k != "flash-attn"})
    assert run_check("CD420", facts).status is Status.NOT_APPLICABLE


# --- CD421 -------------------------------------------------------------------------------------------


def test_cd421_xformers_0_0_33_pypi_wheel_is_cuda_13_on_a_cuda_12_torch(h200):
    # xformers 0.0.33's PyPI wheel: cpp_lib.json says torch 2.9.0+cu130, CUDA 1300 (compat/ecosystem.toml);
    # PyPI's torch 2.9.0 is a CUDA 12.8 build.
    facts = with_packages(h200, torch("2.9.0", "12.8", True), package("xformers", "0.0.33"))
    finding = run_check("CD421", facts)
    assert finding.status is Status.FAIL
    assert "xformers 0.0.33 was built with CUDA 13.0, but torch 2.9.0 is a CUDA 12 build" in finding.message
    assert "xformers-0.0.33-cp39-abi3-manylinux_2_28_x86_64.whl" in finding.evidence["xformers"]
    # 0.0.33.post1 pins torch 2.9.0 and its wheel is a CUDA 12.8 build
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install xformers==0.0.33.post1",)
    fixed = with_packages(h200, torch("2.9.0", "12.8", True), package("xformers", "0.0.33.post1"))
    assert run_check("CD421", fixed).status is Status.OK


def test_cd421_local_cuda_tag_wins_over_the_pypi_wheel(h200):
    tagged = package("xformers", "0.0.28.post1+cu118", cuda_variant="cu118", cuda_build="11.8")
    finding = run_check("CD421", with_packages(h200, torch("2.4.1+cu121", "12.1", False), tagged))
    assert finding.status is Status.FAIL and "CUDA 11.8" in finding.message
    same = with_packages(h200, torch("2.4.1+cu118", "11.8", False), tagged)
    assert run_check("CD421", same).status is Status.OK


def test_cd421_same_major_other_minor_is_fine(h200):
    # xformers 0.0.17's PyPI wheel is a CUDA 11.8 build; PyPI's torch 2.0.0 is CUDA 11.7: one runtime soname
    facts = with_packages(h200, torch("2.0.0", "11.7", False), package("xformers", "0.0.17"))
    assert run_check("CD421", facts).status is Status.OK


def test_cd421_out_of_data_is_not_judged(h200):
    for version in ("0.0.99", "0.0.13", "0.0.30+abc123.d20250101"):
        facts = with_packages(h200, torch("2.7.0", "12.6", True), package("xformers", version))
        assert run_check("CD421", facts).status is Status.UNKNOWN, version
    cpu = replace(torch("2.7.0+cpu", "12.6", True), cuda_variant="cpu", cuda_build=None, torch_build=None)
    facts = with_packages(h200, cpu, package("xformers", "0.0.30"))
    assert run_check("CD421", facts).status is Status.NOT_APPLICABLE


# --- issue #27: what the scan could not read is never "fine" -----------------------------------------


def test_cd304_objects_not_read_make_nothing_to_resolve_could_not_judge(h200):
    """A view with no need but an object not read was "not applicable (no installed package needs a CUDA
    library)": the object not read may need one."""
    view = LoaderView(cache="test", unread=(f"{SITE}/torch/lib/libtorch_cuda.so: not read: truncated",), unread_total=1)
    finding = run_check("CD304", replace(h200, loader=view))
    assert finding.status is Status.UNKNOWN
    assert "libtorch_cuda.so" in finding.reason and "1 not read" in finding.reason


def test_cd304_objects_not_read_beside_resolved_needs_could_not_judge_and_a_missing_one_still_fails(h200):
    named = tuple(f"{SITE}/pkg/lib{i}.so: not read: truncated" for i in range(20))
    view = replace(nvjitlink_view("12.4.127"), unread=named, unread_total=25)
    finding = run_check("CD304", replace(h200, loader=view))
    assert finding.status is Status.UNKNOWN and "25 not read" in finding.reason and "and 22 more" in finding.reason
    assert len(finding.reason) < 600  # bounded: three named, the rest counted
    missing = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcudart.so.12", None, foreign=(
        "/usr/lib/aarch64-linux-gnu/libcudart.so.12 (for AArch64)",))  # fmt: skip
    finding = run_check("CD304", replace(h200, loader=replace(view, needs=(missing,))))
    assert finding.status is Status.FAIL
    assert "built for another CPU" in finding.message and "AArch64" in finding.message
    assert "not read" in finding.evidence


def test_cd302_objects_not_read_could_not_judge(h200):
    view = replace(nvjitlink_view("12.6.77"), unread=(f"{SITE}/x.so: not read: truncated",), unread_total=1)
    assert run_check("CD302", replace(h200, loader=view)).status is Status.UNKNOWN


def test_the_verbose_summary_names_what_was_skipped_and_not_read(h200):
    from cudadoctor.report.summary import _loader_lines

    missing = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcudart.so.12", None, foreign=(
        "/usr/lib/libcudart.so.12 (for AArch64)",))  # fmt: skip
    view = LoaderView(needs=(missing,), cache="test", unread=(f"{SITE}/x.so: not read: truncated",), unread_total=9)
    text = "\n".join(line.text for line in _loader_lines(replace(h200, loader=view)))
    assert "NOT FOUND; skips /usr/lib/libcudart.so.12 (for AArch64)" in text
    assert f"not read (9): {SITE}/x.so: not read: truncated; …" in text
