"""CD4xx and CD7xx, and the requirement language they evaluate."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import DriverVersion, GpuInfo, Source, SourceKind, VisibleDevices
from cudadoctor.nvreq import RequirementError, evaluate, parse_requirement
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env

# The real image's variable (capture.txt), shortened to two branches.
REAL = "cuda>=13.0 brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=550,driver<551"


def test_cd701_real_h200_requirement_is_met(h200):
    assert any(v.name == "NVIDIA_REQUIRE_CUDA" for v in h200.host.env)
    assert run_check("CD701", h200).status is Status.OK


def test_cd701_unmet_on_an_older_driver(h200):
    driver = replace(h200.driver, version=DriverVersion("550.54.15"), cuda_api=Version("12.4"))
    gpus = (replace(h200.gpus[0], brand="GeForce"),)
    finding = run_check("CD701", replace(h200, driver=driver, gpus=gpus))
    assert finding.status is Status.FAIL
    assert "unsatisfied condition: cuda>=13.0" in finding.message


def test_cd701_forward_compat_branch_on_a_datacenter_gpu_is_met(h200):
    # brand=nvidia,driver>=550,driver<551: the image ships cuda-compat for this branch.
    driver = replace(h200.driver, version=DriverVersion("550.54.15"), cuda_api=Version("12.4"))
    facts = with_env(replace(h200, driver=driver), NVIDIA_REQUIRE_CUDA=REAL)
    assert run_check("CD701", facts).status is Status.OK


def test_cd701_unknown_cuda_of_an_assumed_driver_is_could_not_judge(h200):
    # Not a failure, and not "ok" either (issue #14: an unknown counted as met let cuda>=99.0 pass the gate).
    # a driver no table knows, whose CUDA version nothing read: `cuda>=13.0` can be neither met nor refused
    driver = replace(h200.driver, version=DriverVersion("999.1.1"), cuda_api=None, readings=())
    gpus = (GpuInfo(0, "H100", "9.0", Source(SourceKind.ASSUMED, "--assume-gpu H100")),)
    finding = run_check("CD701", replace(h200, driver=driver, gpus=gpus))
    assert finding.status is Status.UNKNOWN
    assert "NVIDIA_REQUIRE_CUDA depends on the driver's CUDA version" in (finding.reason or "")


#: nvidia/cuda:11.0-base's variable (nvidia-docker#1442), and the 12.8 images' (dashdot#1226), shortened.
CUDA_11_0 = "cuda>=11.0 brand=tesla,driver>=418,driver<419 brand=tesla,driver>=440,driver<441"
CUDA_12_8 = (
    "cuda>=12.8 brand=unknown,driver>=535,driver<536 brand=tesla,driver>=535,driver<536 "
    "brand=nvidia,driver>=535,driver<536 brand=quadro,driver>=535,driver<536 brand=nvidiartx,driver>=535,driver<536"
)


def _no_nvml_brand(h200, name: str, driver: str, cuda: str, requirement: str):
    drv = replace(h200.driver, version=DriverVersion(driver), cuda_api=Version(cuda))
    gpus = (replace(h200.gpus[0], name=name, brand=None),)
    return with_env(replace(h200, driver=drv, gpus=gpus), NVIDIA_REQUIRE_CUDA=requirement)


def test_cd701_geforce_brand_from_the_name_fails_and_names_the_branch(h200):
    # nvidia-docker#1442: a GeForce on driver 440 cannot start a CUDA 11.0 image; no NVML brand was read
    finding = run_check("CD701", _no_nvml_brand(h200, "GeForce RTX 2080 Ti", "440.100", "10.2", CUDA_11_0))
    assert finding.status is Status.FAIL
    assert finding.evidence["GPU 0"] == "GeForce RTX 2080 Ti (brand geforce)"
    assert finding.remediation.text.startswith("Upgrade the host driver to the R450 branch (450.51.05 or newer)")
    assert "branches the image accepts" not in finding.remediation.text


def test_cd701_datacenter_brand_from_the_segment_is_met_on_its_branch(h200):
    # an H100 (compat/gpus.toml: datacenter -> tesla or nvidia) on R535: both brands' clauses accept 535
    facts = _no_nvml_brand(h200, "NVIDIA H100 80GB HBM3", "535.104.05", "12.2", CUDA_12_8)
    assert run_check("CD701", facts).status is Status.OK


def test_cd701_datacenter_on_another_branch_names_the_accepted_branches(h200):
    finding = run_check("CD701", _no_nvml_brand(h200, "NVIDIA H100 80GB HBM3", "545.23.08", "12.3", CUDA_12_8))
    assert finding.status is Status.FAIL
    assert "R570 branch" in finding.remediation.text and "R535" in finding.remediation.text


def test_cd701_brand_unknown_for_a_model_not_in_the_data(h200):
    # a model compat/gpus.toml lacks: its brand is unknown, so the brand clauses can be neither ruled out nor
    # counted as met: could not judge (issue #14: an unknown counted as met let a gate pass)
    facts = _no_nvml_brand(h200, "NVIDIA Mystery Accelerator", "535.104.05", "12.2", CUDA_12_8)
    assert run_check("CD701", facts).status is Status.UNKNOWN


def test_requirement_language_brand_candidates():
    alternatives = parse_requirement(CUDA_12_8)
    facts = {"cuda": "12.2", "driver": "535.104.05", "arch": "9.0"}
    assert evaluate(alternatives, {**facts, "brand": "tesla|nvidia"}) is True
    assert evaluate(alternatives, {**facts, "brand": "geforce|titan"}) is False
    old = {"cuda": "10.2", "driver": "440.100", "arch": "7.0"}
    assert evaluate(parse_requirement(CUDA_11_0), {**old, "brand": "tesla|nvidia"}) is None  # a Tesla passes
    assert evaluate(parse_requirement(CUDA_11_0), {**old, "brand": "geforce"}) is False


def test_cd701_disabled_and_absent(h200):
    assert run_check("CD701", with_env(h200, NVIDIA_DISABLE_REQUIRE="true")).status is Status.NOT_APPLICABLE
    assert run_check("CD701", with_env(h200, NVIDIA_REQUIRE_CUDA=None)).status is Status.NOT_APPLICABLE


def test_cd701_invalid_requirement(h200):
    finding = run_check("CD701", with_env(h200, NVIDIA_REQUIRE_CUDA="cuda>>13"))
    assert finding.status is Status.FAIL and "not a valid requirement" in finding.message


def test_cd702_misspelt_disable(h200):
    finding = run_check("CD702", with_env(h200, NVIDIA_DISABLE_REQUIRES="true"))
    assert finding.status is Status.WARN
    assert finding.remediation.commands == ("export NVIDIA_DISABLE_REQUIRE=true",)
    assert run_check("CD702", h200).status is Status.OK


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({"cuda": "13.0", "driver": "580.159.04", "arch": "9.0", "brand": "nvidia"}, True),
        ({"cuda": "12.4", "driver": "550.54.15", "arch": "9.0", "brand": "nvidia"}, True),
        ({"cuda": "12.4", "driver": "550.54.15", "arch": "8.9", "brand": "geforce"}, False),
        ({"cuda": "12.4", "driver": "551.0", "arch": "9.0", "brand": "tesla"}, False),
        ({"cuda": None, "driver": "550.54.15", "arch": "8.9", "brand": "geforce"}, None),
        ({"cuda": "12.4", "driver": "550.54.15", "_no_gpu": "1"}, True),
        ({"cuda": "13.0.0", "driver": "580.1", "arch": "9.0", "brand": None}, True),
    ],
    ids=["new-driver", "compat-branch", "geforce-old", "branch-too-new", "unknown-cuda", "no-gpu", "trailing-zero"],
)
def test_requirement_language(facts, expected):
    assert evaluate(parse_requirement(REAL), facts) is expected


@pytest.mark.parametrize("text", ["cuda>>13", "brand>tesla", "driver>=abc", "gpu=1"])
def test_requirement_language_rejects(text):
    with pytest.raises(RequirementError):
        parse_requirement(text)


def test_cd401_pins_met_on_the_real_h200(h200):
    assert run_check("CD401", h200).status is Status.OK


def test_cd401_torchvision_built_for_another_torch(h200):
    torchvision = h200.packages["torchvision"]
    assert "torch==2.11.0" in [r.replace(" ", "").replace("(", "").replace(")", "") for r in torchvision.requires]
    torch = replace(h200.packages["torch"], version=Version("2.10.0"))
    facts = replace(h200, packages={**h200.packages, "torch": torch})
    # the companion's pin is CD422's, whose fix moves torchvision to the release for the installed torch
    assert run_check("CD401", facts).status is Status.OK
    finding = run_check("CD422", facts)
    assert finding.status is Status.FAIL
    assert "torchvision 0.26.0" in finding.message and "torch 2.11.0" in finding.evidence["torchvision"]
    # the H200's torchaudio 2.11.0 was made for torch 2.11 too: both move
    assert finding.remediation.commands == (
        "python -m pip install torchvision==0.25.0+cu130 torchaudio==2.10.0+cu130 "
        "--index-url https://download.pytorch.org/whl/cu130",
    )


def test_cd401_torch_pinned_cudnn_wheel_replaced(h200):
    cudnn = replace(h200.packages["nvidia-cudnn-cu13"], version=Version("9.14.0.64"))
    finding = run_check("CD401", replace(h200, packages={**h200.packages, "nvidia-cudnn-cu13": cudnn}))
    assert finding.status is Status.FAIL
    assert "torch 2.11.0 requires nvidia-cudnn-cu13==9.19.0.56" in finding.message


@pytest.mark.parametrize(("variant", "status"), [("cu130", Status.OK), ("cpu", Status.FAIL), ("rocm6.2", Status.FAIL)])
def test_cd402_torch_build_kind(h200, variant, status):
    torch = replace(h200.packages["torch"], cuda_variant=variant)
    assert run_check("CD402", replace(h200, packages={**h200.packages, "torch": torch})).status is status


def test_cd402_cpu_torch_without_gpu_or_driver_is_fine(h200):
    torch = replace(h200.packages["torch"], cuda_variant="cpu")
    # no device node either: /dev/nvidia0 alone is evidence of a GPU (tests/checks/test_gpu_evidence.py)
    facts = replace(h200, gpus=(), driver=None, visible=VisibleDevices(), packages={**h200.packages, "torch": torch})
    assert run_check("CD402", facts).status is Status.NOT_APPLICABLE


def test_cd402_cpu_torch_with_a_driver_but_no_gpu_listed_fails(h200):
    torch = replace(h200.packages["torch"], cuda_variant="cpu")
    finding = run_check("CD402", replace(h200, gpus=(), packages={**h200.packages, "torch": torch}))
    assert finding.status is Status.FAIL
    assert "NVIDIA driver" in finding.evidence
