"""On a managed platform (Colab, Kaggle, SageMaker …) the driver is the platform's: a finding whose usual fix
changes the driver gets the build (or image, or GPU type) that fits it instead (issue #28, item 4).

Machines are laid out by the corpus builder (tests/corpus/builder.py), which writes the platforms' variables.
"""

from __future__ import annotations

from typing import Any

import pytest

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.checks.hostfix import SUGGEST_TARGETS
from cudadoctor.data import CompatMatrix
from cudadoctor.planning import PLANNERS
from tests.corpus.replay import replay

MATRIX = CompatMatrix()

#: ``[env]`` additions that put a machine on each platform: the builder's containers, and the variables/files of
#: the others (cudadoctor/probes/origin.py).
PLATFORMS: dict[str, dict[str, Any]] = {
    "Google Colab": {"container": "colab"},
    "Kaggle": {"container": "kaggle"},
    "Amazon SageMaker": {"container": "docker", "env": {"SM_TRAINING_ENV": "{}"}},
    "Databricks": {"container": "none", "env": {"DATABRICKS_RUNTIME_VERSION": "15.4"}},
}


def _findings(
    platform: str | None, driver: str, gpu: str, torch: str | None = None, package: str = "torch"
) -> dict[str, Finding]:
    env: dict[str, Any] = {"os": "Ubuntu 22.04", "container": "none", "driver": {"version": driver},
                           "gpus": [{"name": gpu}]}  # fmt: skip
    if torch:
        env["python"] = {"version": "3.11.13", "prefix": "/usr", "kind": "system"}
        env["packages"] = [{"name": package, "version": torch, "installer": "pip"}]
    if platform is not None:
        env |= PLATFORMS[platform]
    findings = replay({"case": {"id": "fixture"}, "env": env}, MATRIX).findings
    return {f.code: f for f in findings}


def _words(finding: Finding) -> str:
    assert finding.remediation is not None
    return " ".join((finding.remediation.text, *finding.remediation.commands)).lower()


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_driver_too_old_for_the_build_gets_the_build_that_fits(platform):
    """torch built for CUDA 12.6 on driver 470 (CUDA 11.4): elsewhere "upgrade the driver"; here the cu11x build."""
    finding = _findings(platform, "470.82.01", "Tesla T4", "2.6.0+cu126")["CD111"]
    assert finding.status is Status.FAIL
    assert "upgrade" not in _words(finding)
    assert f"here is {platform}'s" in finding.remediation.text
    assert "CUDA 11.x" in finding.remediation.text
    (command,) = finding.remediation.commands  # the installed release's build for the driver's CUDA
    assert command.startswith("python -m pip install torch==2.6.0+cu118 ")


def test_off_a_platform_the_driver_upgrade_stays():
    finding = _findings(None, "470.82.01", "Tesla T4", "2.6.0+cu126")["CD111"]
    assert "Upgrade the NVIDIA driver to" in finding.remediation.text


@pytest.mark.parametrize("platform", ["Google Colab", "Kaggle"])
def test_driver_too_old_for_the_gpu_names_another_gpu_type(platform):
    finding = _findings(platform, "550.54.15", "NVIDIA B200")["CD114"]
    assert finding.status is Status.FAIL
    assert "upgrade" not in _words(finding)
    assert "choose a gpu type there" in _words(finding)


def test_an_end_of_life_branch_is_the_platforms_business():
    """R470 is end of life: a warning with "install R580" elsewhere, not applicable where nobody can install it."""
    assert _findings(None, "470.82.01", "Tesla T4")["CD115"].status is Status.WARN
    finding = _findings("Kaggle", "470.82.01", "Tesla T4")["CD115"]
    assert finding.status is Status.NOT_APPLICABLE
    assert "Kaggle's (env: KAGGLE_KERNEL_RUN_TYPE)" in finding.reason


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_no_finding_on_a_platform_installs_or_upgrades_a_driver(platform):
    """Every check over broken machines on the platform: no fix tells the user to change the driver."""
    for driver, gpu, torch in (("470.82.01", "Tesla T4", "2.6.0+cu126"), ("550.54.15", "NVIDIA B200", None)):
        for finding in _findings(platform, driver, gpu, torch).values():
            if finding.remediation is None:
                continue
            words = _words(finding)
            assert "upgrade the nvidia driver" not in words and "upgrade the driver" not in words, finding.code
            assert "nvidia-driver-" not in " ".join(finding.remediation.commands), finding.code


def test_the_suggest_targets_are_the_planners():
    assert tuple(PLANNERS) == SUGGEST_TARGETS


@pytest.mark.parametrize("platform", [None, "Google Colab"])
def test_before_cuda_11_the_fitting_builds_are_named_by_their_minor(platform):
    """torch 1.3.0 (CUDA 10.1) on driver 410 (CUDA 10.0): a "CUDA 10.x" build could be 10.1 again, which this
    driver cannot run (no minor-version compatibility before CUDA 11)."""
    finding = _findings(platform, "410.48", "GeForce GTX 1080 Ti", "1.3.0")["CD111"]
    assert "for CUDA 10.0 or older" in finding.remediation.text
    assert "10.x" not in finding.remediation.text


def test_the_host_line_names_the_platform_and_the_root():
    from pyfakefs.fake_filesystem_unittest import Patcher

    from cudadoctor.probes.collect import collect_facts
    from cudadoctor.report.summary import categories
    from tests.conftest import make_ctx
    from tests.corpus.builder import build

    machine = build(
        {"env": {"container": "kaggle", "driver": {"version": "550.54.15"}, "gpus": [{"name": "Tesla T4"}]}}
    )
    with Patcher() as patcher:
        assert patcher.fs is not None
        machine.write("/")
        facts = collect_facts(make_ctx(env=machine.env, runner=machine.runner, native=machine.native))
    host = next(c for c in categories(facts, ()) if c.key == "host")
    assert "on Kaggle" in host.headline
    texts = {line.text: line.source for line in host.lines}
    assert texts["Kaggle: the NVIDIA driver is the platform's"] == "env: KAGGLE_KERNEL_RUN_TYPE"
    assert texts[next(t for t in texts if t.startswith("root: a container image"))] == "file: /.dockerenv"


def test_another_framework_on_a_platform_gets_the_command_that_plans_its_build():
    finding = _findings("Kaggle", "470.82.01", "Tesla T4", "13.3.0", package="cupy-cuda12x")["CD111"]
    assert finding.status is Status.FAIL
    # the CuPy package for the driver's CUDA 11.4 (compat/ecosystem.toml: cupy-cuda11x is for 11.2 to 11.8)
    assert finding.remediation.commands == (
        "python -m pip uninstall -y cupy-cuda12x && python -m pip install cupy-cuda11x",
    )
