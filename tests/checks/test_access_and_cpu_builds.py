"""CD120 (a container started without its GPUs) and CD402 (CPU builds on an NVIDIA machine), on the real
H200 capture changed one fact at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.assume import apply_assumptions
from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import ContainerInfo, Facts, InstalledPackage, Source, SourceKind
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env


def _without_gpus(facts: Facts) -> Facts:
    """`docker run` without --gpus: the host's /proc stays, the device nodes and the injected libcuda go."""
    assert facts.driver is not None
    driver = replace(facts.driver, libcuda_files=(), loaded_libcuda=None, readings=())
    visible = replace(facts.visible, device_nodes=())
    return replace(facts, driver=driver, visible=visible, gpus=())


def _package(name: str, version: str, **kw: object) -> InstalledPackage:
    return InstalledPackage(name, Version(version), "/site", Source(SourceKind.METADATA, f"/site/{name}"), **kw)  # type: ignore[arg-type]


# --- CD120 ------------------------------------------------------------------------------------------


def test_cd120_real_container_with_its_gpu_is_fine(h200):
    assert h200.host.container is not None and h200.host.container.in_container
    assert run_check("CD120", h200).status is Status.OK


def test_cd120_docker_run_without_gpus_fails_with_the_launch_fix(h200):
    finding = run_check("CD120", _without_gpus(h200))
    assert finding.status is Status.FAIL
    assert "started without its GPUs" in finding.message
    assert finding.remediation is not None and "--gpus all" in finding.remediation.commands[0]
    assert finding.evidence["GPU device nodes"].startswith("none")


def test_cd120_pod_without_gpu_limit_names_the_resource_limit(h200):
    facts = _without_gpus(h200)
    pod = ContainerInfo(True, "kubernetes", ("KUBERNETES_SERVICE_HOST",))
    facts = replace(facts, host=replace(facts.host, container=pod))
    finding = run_check("CD120", facts)
    assert finding.status is Status.FAIL
    assert "nvidia.com/gpu" in finding.remediation.text  # type: ignore[union-attr]


def test_cd120_devices_without_libcuda_names_the_driver_capabilities(h200):
    driver = replace(h200.driver, libcuda_files=(), loaded_libcuda=None)
    finding = run_check("CD120", with_env(replace(h200, driver=driver), NVIDIA_DRIVER_CAPABILITIES="utility"))
    assert finding.status is Status.FAIL
    assert "compute" in finding.message and finding.evidence["NVIDIA_DRIVER_CAPABILITIES"] == "utility"


def test_cd120_a_build_stage_marked_by_the_variable_is_not_judged(h200):
    finding = run_check("CD120", with_env(_without_gpus(h200), CUDADOCTOR_BUILD_STAGE="1"))
    assert finding.status is Status.NOT_APPLICABLE


def test_cd120_a_buildkit_stage_without_container_markers_is_not_judged(h200):
    facts = _without_gpus(h200)
    facts = replace(facts, host=replace(facts.host, container=ContainerInfo(False, None, ())))
    assert run_check("CD120", facts).status is Status.NOT_APPLICABLE


def test_cd120_an_image_root_is_not_judged(h200):
    assert run_check("CD120", replace(_without_gpus(h200), mode="root:/img")).status is Status.NOT_APPLICABLE


def test_cd120_a_container_with_nothing_that_uses_the_gpu_is_not_judged(h200):
    facts = replace(_without_gpus(h200), packages={}, toolkits=())
    assert run_check("CD120", facts).status is Status.NOT_APPLICABLE


def test_cd120_without_the_kernel_module_in_proc_is_not_judged(h200):
    facts = _without_gpus(h200)
    facts = replace(facts, driver=replace(facts.driver, kernel_module=None))
    assert run_check("CD120", facts).status is Status.NOT_APPLICABLE


# --- CD120 under --root (issue #28, 5) -------------------------------------------------------------------


def _running_root(facts: Facts, *, live_dev: bool | None = True, assume: bool = True) -> Facts:
    """The facts of a running container's root seen from the host (``--root /proc/<pid>/root``), with the host's
    driver given by --assume-driver (its /proc not showing the kernel module) unless ``assume`` is False."""
    markers = ("image root", "/.dockerenv")
    host = replace(facts.host, container=ContainerInfo(True, "docker", markers))
    facts = replace(facts, mode="root:/proc/4242/root", host=host, visible=replace(facts.visible, live_dev=live_dev))
    if not assume:
        return facts
    assert facts.driver is not None
    driver = replace(facts.driver, kernel_module=None, readings=())
    return apply_assumptions(replace(facts, driver=driver), driver="580.95.05")


def test_cd120_a_running_containers_root_with_an_assumed_host_driver_is_judged(h200):
    finding = run_check("CD120", _running_root(_without_gpus(h200)))
    assert finding.status is Status.FAIL and "started without its GPUs" in finding.message
    assert finding.evidence["host driver (assumed)"] == "580.95.05 (--assume-driver)"
    assert finding.evidence["container"] == "/.dockerenv"
    assert run_check("CD120", _running_root(h200)).status is Status.OK


def test_cd120_a_running_containers_root_showing_the_kernel_module_is_judged(h200):
    finding = run_check("CD120", _running_root(_without_gpus(h200), assume=False))
    assert finding.status is Status.FAIL and "kernel module" in finding.evidence


@pytest.mark.parametrize("live_dev", [False, None], ids=["image-or-copy", "older-snapshot"])
def test_cd120_a_root_whose_dev_holds_no_device_is_not_judged(h200, live_dev):
    finding = run_check("CD120", _running_root(_without_gpus(h200), live_dev=live_dev))
    assert finding.status is Status.NOT_APPLICABLE and "/dev" in (finding.reason or "")


def test_cd120_a_root_without_a_host_driver_names_the_flag(h200):
    facts = _running_root(_without_gpus(h200), assume=False)
    facts = replace(facts, driver=replace(facts.driver, kernel_module=None))
    finding = run_check("CD120", facts)
    assert finding.status is Status.NOT_APPLICABLE and "--assume-driver" in (finding.reason or "")


def test_cd120_a_root_with_no_container_marker_is_not_judged(h200):
    facts = _running_root(_without_gpus(h200))
    host = replace(facts.host, container=ContainerInfo(True, None, ("image root",)))
    assert run_check("CD120", replace(facts, host=host)).status is Status.NOT_APPLICABLE


def test_cd120_live_an_assumed_driver_is_no_host_driver(h200):
    """--assume-driver in a classic builder's RUN step (/.dockerenv, no GPU by design) describes the target host."""
    facts = _without_gpus(h200)
    facts = apply_assumptions(replace(facts, driver=replace(facts.driver, kernel_module=None)), driver="580.95.05")
    assert run_check("CD120", facts).status is Status.NOT_APPLICABLE


# --- CD402 ------------------------------------------------------------------------------------------


def test_cd402_cpu_torch_gets_a_command_that_replaces_it(h200):
    torch = replace(h200.packages["torch"], cuda_variant="cpu", cuda_build=None)
    finding = run_check("CD402", replace(h200, packages={**h200.packages, "torch": torch}))
    assert finding.status is Status.FAIL
    command = finding.remediation.commands[0]  # type: ignore[union-attr]
    # the installed release (2.11.0 from data fits the H200 and driver 580) and a reinstall that replaces it
    assert command == "python -m pip install --force-reinstall torch==2.11.0 torchvision==0.26.0 torchaudio==2.11.0"
    assert command.split().count("--force-reinstall") == 1  # the plan's own flag, not a second one


def test_cd402_command_is_not_kept_as_satisfied_by_the_cpu_build(h200):
    # torch 2.11.0+cpu satisfies `torch==2.11.0` (a public pin admits any local version): without a forced
    # reinstall or a +variant pin, pip keeps the CPU build (the verifier models pip's answer)
    from packaging.version import Version

    from cudadoctor.data import CompatMatrix
    from cudadoctor.fixes.parse import parse
    from cudadoctor.fixes.verify import verify

    torch = replace(h200.packages["torch"], version=Version("2.11.0+cpu"), cuda_variant="cpu", cuda_build=None)
    finding = run_check("CD402", replace(h200, packages={**h200.packages, "torch": torch}))
    command = parse(finding.remediation.commands[0])  # type: ignore[union-attr]
    assert command is not None
    found = verify(command, CompatMatrix(), {"torch": torch.version}, python=Version("3.12"))
    assert found.problems == ()


def test_cd402_cuda_extension_beside_cpu_torch_is_evidence(h200):
    torch = replace(h200.packages["torch"], cuda_variant="cpu", cuda_build=None)
    xformers = _package("xformers", "0.0.33", cuda_variant="cu130", cuda_build="13.0")
    finding = run_check("CD402", replace(h200, packages={**h200.packages, "torch": torch, "xformers": xformers}))
    assert finding.evidence["xformers 0.0.33"] == "built for CUDA 13.0"


def test_cd402_jaxlib_without_a_cuda_plugin_fails(h200):
    packages = {k: v for k, v in h200.packages.items() if not k.startswith("jax")}
    packages["jax"] = _package("jax", "0.5.3")
    packages["jaxlib"] = _package("jaxlib", "0.5.3")
    finding = run_check("CD402", replace(h200, packages=packages))
    assert finding.status is Status.FAIL
    assert "jaxlib 0.5.3 has no CUDA plugin" in finding.message
    assert "jax[cuda" in finding.remediation.commands[0]  # type: ignore[union-attr]


def test_cd402_jaxlib_with_its_cuda_plugin_is_fine(h200):
    packages = {k: v for k, v in h200.packages.items() if not k.startswith("jax")}
    packages["jaxlib"] = _package("jaxlib", "0.5.3")
    packages["jax-cuda12-plugin"] = _package("jax-cuda12-plugin", "0.5.3", cuda_variant="cuda12", cuda_build="12")
    assert run_check("CD402", replace(h200, packages=packages)).status is Status.OK


def test_cd402_old_jaxlib_with_a_cuda_local_tag_is_fine(h200):
    packages = {k: v for k, v in h200.packages.items() if not k.startswith("jax")}
    packages["jaxlib"] = _package("jaxlib", "0.4.20+cuda12.cudnn89", cuda_variant="cuda12", cuda_build="12")
    assert run_check("CD402", replace(h200, packages=packages)).status is Status.OK


def test_cd402_torch_of_unknown_build_cannot_be_called_cpu(h200):
    torch = replace(h200.packages["torch"], cuda_variant=None, cuda_build=None)
    packages = {k: v for k, v in h200.packages.items() if not k.startswith("jax")}
    finding = run_check("CD402", replace(h200, packages={**packages, "torch": torch}))
    assert finding.status is Status.NOT_APPLICABLE
