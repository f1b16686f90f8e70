"""CD422-CD425: torchvision / torchaudio, FlashInfer and CuPy against the torch (and each other) they load beside."""

from __future__ import annotations

from dataclasses import replace

from cudadoctor.catalog import explain
from cudadoctor.checks.findings import Status
from cudadoctor.testing import run_check
from tests.checks.test_loader_checks import package, torch


def only(facts, *pkgs):
    """The facts with exactly these packages installed."""
    return replace(facts, packages={p.name: p for p in pkgs})


def companion(name: str, version: str, *requires: str):
    local = version.partition("+")[2]
    cuda = f"{local[2:-1]}.{local[-1]}" if local.startswith("cu") else None
    return package(name, version, requires=requires, cuda_variant=local or None, cuda_build=cuda)


# --- CD422 ---------------------------------------------------------------------------------------------


def test_cd422_stale_torchvision_after_torch_moved_gets_the_release_for_torch(h200):
    # torch 2.5.1+cu124 from whl/cu124, then something installed torch 2.6.0+cu124: torchvision 0.20.1 stays
    facts = only(h200, torch("2.6.0+cu124", "12.4", False), companion("torchvision", "0.20.1+cu124", "torch==2.5.1"))
    finding = run_check("CD422", facts)
    assert finding.status is Status.FAIL
    assert "torchvision::nms" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torchvision==0.21.0+cu124 --index-url https://download.pytorch.org/whl/cu124",
    )


def test_cd422_matching_companions_are_fine(h200):
    facts = only(
        h200,
        torch("2.5.1+cu124", "12.4", False),
        companion("torchvision", "0.20.1+cu124", "torch==2.5.1"),
        companion("torchaudio", "2.5.1+cu124", "torch==2.5.1"),
    )
    assert run_check("CD422", facts).status is Status.OK


def test_cd422_reads_the_pin_from_data_when_metadata_has_none(h200):
    # a companion whose METADATA was not read for Requires-Dist (conda): compat/companions.toml has torch==2.5.1
    facts = only(h200, torch("2.6.0+cu124", "12.4", False), companion("torchvision", "0.20.1+cu124"))
    finding = run_check("CD422", facts)
    assert finding.status is Status.FAIL
    assert "compat/companions.toml" in finding.evidence["torchvision"]


def test_cd422_torchaudio_without_a_torch_requirement_is_judged_by_its_release(h200):
    # torchaudio 2.11.0 requires no torch; released with torch 2.11.0: on 2.10.0 its symbols are missing
    old = only(h200, torch("2.10.0+cu130", "13.0", True), companion("torchaudio", "2.11.0+cu130"))
    finding = run_check("CD422", old)
    assert finding.status is Status.FAIL
    assert "inferred" in finding.evidence["torchaudio"]
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torchaudio==2.10.0+cu130 --index-url https://download.pytorch.org/whl/cu130",
    )
    newer = only(h200, torch("2.12.0+cu130", "13.0", True), companion("torchaudio", "2.11.0+cu130"))
    assert run_check("CD422", newer).status is Status.OK


def test_cd422_a_range_requirement_is_met_or_not(h200):
    # torchvision 0.29.2 requires torch>=2.14.0 (a stable-ABI build)
    fine = only(h200, torch("2.15.0", "13.2", True), companion("torchvision", "0.29.2", "torch>=2.14.0"))
    assert run_check("CD422", fine).status is Status.OK
    old = only(h200, torch("2.13.0", "13.0", True), companion("torchvision", "0.29.2", "torch>=2.14.0"))
    assert run_check("CD422", old).status is Status.FAIL


def test_cd422_nightly_torch_gets_the_nightly_advice_and_no_command(h200):
    facts = only(
        h200, torch("2.12.0.dev20260417+cu126", "12.6", True), companion("torchvision", "0.26.0", "torch==2.11.0")
    )
    finding = run_check("CD422", facts)
    assert finding.status is Status.FAIL
    assert finding.remediation is not None and finding.remediation.commands == ()
    assert "nightly" in finding.remediation.text


def test_cd422_not_applicable_and_cannot_judge(h200):
    assert run_check("CD422", only(h200, torch("2.5.1+cu124", "12.4", False))).status is Status.NOT_APPLICABLE
    unknown = only(h200, torch("2.5.1+cu124", "12.4", False), companion("torchvision", "9.9.9"))
    finding = run_check("CD422", unknown)
    assert finding.status is Status.UNKNOWN and "9.9.9" in (finding.reason or "")


def test_cd401_leaves_the_companion_pin_to_cd422(h200):
    facts = only(
        h200,
        torch("2.6.0+cu124", "12.4", False),
        companion("torchvision", "0.20.1+cu124", "torch==2.5.1"),
        package("vllm", "0.6.4", requires=("torch==2.5.1",)),
    )
    finding = run_check("CD401", facts)
    assert finding.status is Status.FAIL
    assert "vllm" in finding.message and "torchvision" not in finding.message


# --- CD423 ---------------------------------------------------------------------------------------------


def test_cd423_torchvision_of_another_cuda_major_is_reinstalled_from_torchs_index(h200):
    facts = only(h200, torch("2.5.1+cu121", "12.1", False), companion("torchvision", "0.20.1+cu118", "torch==2.5.1"))
    finding = run_check("CD423", facts)
    assert finding.status is Status.FAIL
    assert "different CUDA major versions" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torchvision==0.20.1+cu121 --index-url https://download.pytorch.org/whl/cu121",
    )
    assert run_check("CD422", facts).status is Status.OK  # the pin torch==2.5.1 is met: only the build differs


def test_cd423_a_minor_difference_is_torchvisions_to_ignore_not_torchaudios(h200):
    vision = only(h200, torch("2.5.1+cu124", "12.4", False), companion("torchvision", "0.20.1+cu121", "torch==2.5.1"))
    assert run_check("CD423", vision).status is Status.OK
    audio = only(h200, torch("2.5.1+cu124", "12.4", False), companion("torchaudio", "2.5.1+cu121", "torch==2.5.1"))
    assert run_check("CD423", audio).status is Status.FAIL
    # torchvision before 0.16 compared the minor too
    old = only(h200, torch("2.0.0+cu117", "11.7", False), companion("torchvision", "0.15.1+cu118", "torch==2.0.0"))
    assert run_check("CD423", old).status is Status.FAIL


def test_cd423_pypi_companion_takes_its_torchs_pypi_build(h200):
    # PyPI's torchvision 0.20.1 is the CUDA 12.4 build of torch 2.5.1's PyPI wheel (inferred): beside cu118, fails
    same = only(h200, torch("2.5.1", "12.4", False), companion("torchvision", "0.20.1", "torch==2.5.1"))
    assert run_check("CD423", same).status is Status.OK
    other = only(h200, torch("2.5.1+cu118", "11.8", False), companion("torchvision", "0.20.1", "torch==2.5.1"))
    finding = run_check("CD423", other)
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torchvision==0.20.1+cu118 --index-url https://download.pytorch.org/whl/cu118",
    )


def test_cd423_not_applicable_for_cpu_torch_and_cpu_companions(h200):
    cpu = package("torch", "2.5.1+cpu", cuda_variant="cpu")
    assert run_check("CD423", only(h200, cpu, companion("torchvision", "0.20.1+cpu"))).status is Status.NOT_APPLICABLE
    facts = only(h200, torch("2.5.1+cu124", "12.4", False), companion("torchvision", "0.20.1+cpu", "torch==2.5.1"))
    assert run_check("CD423", facts).status is Status.OK


# --- CD424 ---------------------------------------------------------------------------------------------


def test_cd424_aot_flashinfer_for_another_torch_is_removed(h200):
    facts = only(h200, torch("2.8.0+cu128", "12.8", True), package("flashinfer", "0.1.6+cu121torch2.3"))
    finding = run_check("CD424", facts)
    assert finding.status is Status.FAIL and "torch 2.3" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip uninstall -y flashinfer",)


def test_cd424_torch_2_4_wheel_loads_into_torch_2_5_but_not_another_cuda_major(h200):
    fine = only(h200, torch("2.5.1+cu124", "12.4", False), package("flashinfer", "0.2.0+cu124torch2.4"))
    assert run_check("CD424", fine).status is Status.OK
    major = only(h200, torch("2.4.0+cu121", "12.1", False), package("flashinfer", "0.1.6+cu118torch2.4"))
    finding = run_check("CD424", major)
    assert finding.status is Status.FAIL and "CUDA 11.8" in finding.message


def test_cd424_cubin_of_another_version_moves_flashinfer_python_unless_pinned(h200):
    parts = (package("flashinfer-python", "0.6.10"), package("flashinfer-cubin", "0.6.8.post1"))
    finding = run_check("CD424", only(h200, *parts))
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install flashinfer-python==0.6.8.post1",)
    pinned = package("vllm", "0.20.0", requires=("flashinfer-python==0.6.10",))
    finding = run_check("CD424", only(h200, *parts, pinned))
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip uninstall -y flashinfer-cubin",)
    same = (package("flashinfer-python", "0.6.10"), package("flashinfer-cubin", "0.6.10"))
    assert run_check("CD424", only(h200, *same)).status is Status.OK


def test_cd424_jit_cache_of_another_cuda_major(h200):
    facts = only(
        h200,
        torch("2.9.0+cu128", "12.8", True),
        package("flashinfer-python", "0.6.11"),
        package("flashinfer-jit-cache", "0.6.11+cu130"),
    )
    finding = run_check("CD424", facts)
    assert finding.status is Status.FAIL and "CUDA 13 build" in finding.message


def test_cd424_not_applicable_without_flashinfer_builds(h200):
    facts = only(h200, torch("2.8.0+cu128", "12.8", True), package("flashinfer-python", "0.3.1"))
    assert run_check("CD424", facts).status is Status.NOT_APPLICABLE


# --- CD425 ---------------------------------------------------------------------------------------------


def test_cd425_two_cupy_packages_keep_the_one_of_torchs_cuda(h200):
    cupys = (
        package("cupy-cuda12x", "13.6.0", cuda_variant="cu12", cuda_build="12"),
        package("cupy-cuda13x", "13.6.0", cuda_variant="cu13", cuda_build="13"),
    )
    finding = run_check("CD425", only(h200, torch("2.11.0+cu130", "13.0", True), *cupys))
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip uninstall -y cupy-cuda12x cupy-cuda13x && python -m pip install cupy-cuda13x==13.6.0",
    )
    alone = run_check("CD425", only(h200, *cupys))
    assert alone.status is Status.FAIL
    assert alone.remediation is not None
    assert alone.remediation.commands == ("python -m pip uninstall -y cupy-cuda12x cupy-cuda13x",)


def test_cd425_one_cupy_is_not_applicable(h200):
    assert run_check("CD425", only(h200, package("cupy-cuda12x", "13.6.0"))).status is Status.NOT_APPLICABLE


def test_explain_cd422():
    text = explain("CD422", "text")
    assert text.startswith("CD422 companions-built-for-torch")
    assert "How to fix:" in text


def test_cd422_prints_no_companion_that_breaks_another_pin(h200):
    # vLLM 0.6.4 pins torchvision 0.20.1 (and torch 2.5.1); torch moved to 2.6.0: torchvision 0.21.0 would break
    # vLLM's pin, so the finding says to put back the torch the pins were made for, and prints no command
    facts = only(
        h200,
        torch("2.6.0+cu124", "12.4", False),
        companion("torchvision", "0.20.1+cu124", "torch==2.5.1"),
        package("vllm", "0.6.4", requires=("torch==2.5.1", "torchvision==0.20.1")),
    )
    finding = run_check("CD422", facts)
    assert finding.status is Status.FAIL
    assert finding.remediation is not None and finding.remediation.commands == ()
    assert "vllm 0.6.4 requires torchvision==0.20.1" in finding.remediation.text
