"""CD201 (nvcc's CUDA major vs torch's) and CD202 (nvcc newer than the driver), on the real H200's facts.

The H200 has CUDA_HOME=/usr/local/cuda (13.0, nvcc 13.0.88 on PATH), torch 2.11.0+cu130 and driver 580.159.04.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import DriverVersion, Facts, NvccInfo, Source, SourceKind, ToolkitInstall
from cudadoctor.rules.toolchain import build_toolkit
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env


def _toolkit(root: str, version: str, *ways: str) -> ToolkitInstall:
    return ToolkitInstall(root, Version(version), Source(SourceKind.FILE, f"{root}/version.json"), ways, None, root)


def _nvcc(root: str, release: str | None) -> NvccInfo:
    where = Source(SourceKind.COMMAND, f"{root}/bin/nvcc --version")
    return NvccInfo(f"{root}/bin/nvcc", Version(release) if release else None, None, where)


def _machine(h200: Facts, *toolkits: ToolkitInstall, nvcc: NvccInfo | None) -> Facts:
    return replace(with_env(h200, CUDA_HOME=None), toolkits=toolkits, nvcc=nvcc)


def test_cd201_cuda_home_decides_over_path(h200):
    # torch's _find_cuda_home takes CUDA_HOME before the nvcc on PATH (vllm#129: CUDA_HOME=/usr/local/cuda)
    facts = _machine(
        h200,
        _toolkit("/usr/local/cuda-12.8", "12.8.1", "CUDA_HOME"),
        _toolkit("/usr/local/cuda-13.0", "13.0.2", "nvcc on PATH"),
        nvcc=_nvcc("/usr/local/cuda-13.0", "13.0"),
    )
    finding = run_check("CD201", facts)
    assert finding.status is Status.FAIL
    assert "nvcc CUDA 12.8 from /usr/local/cuda-12.8 (chosen by CUDA_HOME)" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        # torch and the companions installed beside it, of the same release and build
        "python -m pip install torch==2.11.0+cu128 torchvision==0.26.0+cu128 torchaudio==2.11.0+cu128 "
        "--index-url https://download.pytorch.org/whl/cu128",
    )


def _with_torch(h200: Facts, version: str, cuda: str) -> Facts:
    """torch alone (no companions) on Python 3.10, which has wheels of torch 1.11 to 2.8."""
    torch = h200.packages["torch"]
    build = replace(torch.torch_build, version=Version(version), cuda=cuda) if torch.torch_build else None
    variant = "cu" + cuda.replace(".", "")
    pkg = replace(torch, version=Version(version), cuda_variant=variant, cuda_build=cuda, torch_build=build)
    assert h200.python is not None
    return replace(h200, packages={"torch": pkg}, python=replace(h200.python, version=Version("3.10.12")))


def test_cd201_fix_takes_a_build_the_release_has(h200):
    # torch 2.1.0 was never built for cu117 (compat/torch.toml: cu118, cu121): the CUDA 11 build it has is cu118;
    # the command printed before named https://download.pytorch.org/whl/cu117, which has no torch 2.1.0
    toolkit = _toolkit("/usr/local/cuda-11.7", "11.7.1", "nvcc on PATH")
    facts = _machine(_with_torch(h200, "2.1.0+cu121", "12.1"), toolkit, nvcc=_nvcc("/usr/local/cuda-11.7", "11.7"))
    finding = run_check("CD201", facts)
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torch==2.1.0+cu118 --index-url https://download.pytorch.org/whl/cu118",
    )


def test_cd201_a_release_without_that_major_gets_the_nearest_that_has_it(h200):
    # torch 1.12.1 has no CUDA 12 build at all (https://download.pytorch.org/whl/cu122 never existed; the command
    # printed before named it): the nearest release with one is 2.1.0 (cu121), and the text says so
    toolkit = _toolkit("/usr/local/cuda-12.2", "12.2.2", "nvcc on PATH")
    facts = _machine(_with_torch(h200, "1.12.1+cu113", "11.3"), toolkit, nvcc=_nvcc("/usr/local/cuda-12.2", "12.2"))
    finding = run_check("CD201", facts)
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torch==2.1.0+cu121 --index-url https://download.pytorch.org/whl/cu121",
    )
    text = finding.remediation.text
    assert "torch 1.12.1 has no CUDA 12 build for Python 3.10; 2.1.0 is the nearest release that has one" in text


def test_cd201_the_build_must_have_wheels_for_the_python(h200):
    # the H200's Python 3.12 has no torch 2.1.0 wheel: its cu118 build is no fix there, 2.2.0's is
    toolkit = _toolkit("/usr/local/cuda-11.7", "11.7.1", "nvcc on PATH")
    facts = _with_torch(h200, "2.1.0+cu121", "12.1")
    facts = replace(facts, python=h200.python)
    finding = run_check("CD201", _machine(facts, toolkit, nvcc=_nvcc("/usr/local/cuda-11.7", "11.7")))
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install torch==2.2.0+cu118 --index-url https://download.pytorch.org/whl/cu118",
    )
    assert "torch 2.1.0 has no CUDA 11 build for Python 3.12; 2.2.0 is the nearest" in finding.remediation.text


def test_cd201_nvcc_on_path_is_an_error(h200):
    toolkit = _toolkit("/usr/local/cuda-12.4", "12.4.1", "glob")
    facts = _machine(h200, toolkit, nvcc=_nvcc("/usr/local/cuda-12.4", "12.4"))
    assert run_check("CD201", facts).status is Status.FAIL


def test_cd201_only_the_default_link_is_a_warning(h200):
    # a toolkit no one put on PATH or in CUDA_HOME: torch falls back to /usr/local/cuda only if asked to build
    facts = _machine(h200, _toolkit("/usr/local/cuda", "12.4.1", "/usr/local/cuda link"), nvcc=None)
    assert run_check("CD201", facts).status is Status.WARN


def test_cd201_a_jit_builder_makes_the_default_link_an_error(h200):
    facts = _machine(h200, _toolkit("/usr/local/cuda", "12.4.1", "/usr/local/cuda link"), nvcc=None)
    deepspeed = replace(h200.packages["torch"], name="deepspeed", version=Version("0.16.4"), torch_build=None)
    facts = replace(facts, packages={**facts.packages, "deepspeed": deepspeed})
    finding = run_check("CD201", facts)
    assert finding.status is Status.FAIL
    assert finding.evidence["builds CUDA extensions at run time"] == "deepspeed"


def test_cd201_image_root_reads_the_release_from_the_toolkit(h200):
    # under --root nvcc is never run: its release is the toolkit's major.minor (version.json)
    toolkit = _toolkit("/usr/local/cuda-12.1", "12.1.105", "nvcc on PATH")
    facts = _machine(h200, toolkit, nvcc=_nvcc("/usr/local/cuda-12.1", None))
    finding = run_check("CD201", facts)
    assert finding.status is Status.FAIL and "nvcc CUDA 12.1" in finding.message


def test_cd201_same_major_is_ok_and_cpu_torch_not_applicable(h200):
    facts = _machine(h200, _toolkit("/usr/local/cuda-13.1", "13.1.0", "CUDA_HOME"), nvcc=None)
    assert run_check("CD201", facts).status is Status.OK
    cpu = replace(h200.packages["torch"], cuda_variant="cpu", cuda_build=None, torch_build=None)
    assert run_check("CD201", replace(facts, packages={**facts.packages, "torch": cpu})).status is Status.NOT_APPLICABLE


def test_cd201_cannot_judge_an_unreadable_torch_cuda(h200):
    torch = h200.packages["torch"]
    odd = replace(torch, torch_build=replace(torch.torch_build, cuda="unknown"))
    facts = replace(h200, packages={**h200.packages, "torch": odd})
    assert run_check("CD201", facts).status is Status.UNKNOWN


def test_cd201_no_toolkit_is_not_applicable(h200):
    assert run_check("CD201", _machine(h200, nvcc=None)).status is Status.NOT_APPLICABLE
    assert build_toolkit((), None) is None


def _driver(h200: Facts, version: str, cuda: str | None) -> Facts:
    assert h200.driver is not None
    driver = replace(h200.driver, version=DriverVersion(version), cuda_api=Version(cuda) if cuda else None,
                     readings=(), libcuda_files=())  # fmt: skip
    return replace(h200, driver=driver)


def test_cd202_nvcc_of_a_newer_major_than_the_driver(h200):
    finding = run_check("CD202", _driver(h200, "550.54.15", "12.4"))
    assert finding.status is Status.WARN
    assert "what it builds will not run on this driver" in finding.message
    assert "580" in finding.remediation.text  # CUDA 13.0's minimum driver (compat/cuda.toml)


def test_cd202_newer_minor_warns_about_ptx(h200):
    facts = _machine(h200, _toolkit("/usr/local/cuda-12.8", "12.8.1", "CUDA_HOME"), nvcc=None)
    finding = run_check("CD202", _driver(facts, "550.54.15", "12.4"))
    assert finding.status is Status.WARN and "PTX" in finding.message


def test_cd202_healthy_and_could_not_judge(h200):
    assert run_check("CD202", h200).status is Status.OK
    unknown = replace(h200.driver, version=None, cuda_api=None, readings=(), libcuda_files=())
    assert run_check("CD202", replace(h200, driver=unknown)).status is Status.UNKNOWN
