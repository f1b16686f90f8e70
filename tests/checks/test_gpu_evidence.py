"""One notion of "is there a GPU" (cudadoctor.facts.derive.gpu_evidence): the probed GPUs, the device nodes
/dev/nvidia0..N, the PCI bus; every check that asks uses it and names the evidence it used (issue #28, 5)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.facts.derive import gpu_evidence
from cudadoctor.facts.health import HealthInfo, HostHealth
from cudadoctor.facts.model import Facts, VisibleDevices
from cudadoctor.testing import run_check


def _nvml_silent(facts: Facts, *, driver: bool = True) -> Facts:
    """NVML does not answer (a container or --root where it fails): no probed GPU, no driver version; the
    device nodes /dev/nvidia0 … are still there."""
    assert facts.driver is not None
    kept = replace(facts.driver, version=None, cuda_api=None, kernel_module=None, readings=()) if driver else None
    return replace(facts, gpus=(), driver=kept)


def _cpu_torch(facts: Facts) -> Facts:
    torch = replace(facts.packages["torch"], cuda_variant="cpu", cuda_build=None)
    return replace(facts, packages={**facts.packages, "torch": torch})


@pytest.mark.parametrize("driver", [True, False], ids=["driver-version-unknown", "no-driver-found"])
def test_cd402_device_nodes_are_evidence_of_a_gpu_when_nvml_does_not_answer(h200, driver):
    facts = _cpu_torch(_nvml_silent(h200, driver=driver))
    finding = run_check("CD402", facts)
    assert finding.status is Status.FAIL
    assert finding.evidence["GPU device nodes"] == "/dev/nvidia0"  # the evidence it used, named
    assert "on a machine with an NVIDIA GPU" in finding.message
    # the fix installs a CUDA build: the planner too counts the device node as a GPU, not a CPU-only machine
    assert finding.remediation is not None and "whl/cpu" not in finding.remediation.commands[0]


def test_cd402_without_any_gpu_evidence_or_driver_does_not_apply(h200):
    facts = replace(_cpu_torch(_nvml_silent(h200, driver=False)), visible=VisibleDevices())
    assert run_check("CD402", facts).status is Status.NOT_APPLICABLE


def test_cd402_a_gpu_only_on_the_pci_bus_without_a_driver_gets_no_cuda_reinstall(h200):
    health = HealthInfo(host=HostHealth(pci_functions=("0000:17:00.0",)))
    facts = replace(_cpu_torch(_nvml_silent(h200, driver=False)), visible=VisibleDevices(), health=health)
    finding = run_check("CD402", facts)
    assert finding.status is Status.NOT_APPLICABLE and "PCI bus" in (finding.reason or "")


def test_cd402_names_the_probed_gpus_first(h200):
    finding = run_check("CD402", _cpu_torch(h200))
    assert finding.status is Status.FAIL
    assert finding.evidence["GPU"] == "1× NVIDIA H200 (nvml)" and "GPU device nodes" not in finding.evidence


@pytest.mark.parametrize("code", ["CD112", "CD113", "CD114"])
def test_checks_needing_the_gpu_model_cannot_judge_when_only_device_nodes_show_a_gpu(h200, code):
    finding = run_check(code, _nvml_silent(h200) if code != "CD114" else replace(h200, gpus=()))
    assert finding.status is Status.UNKNOWN, finding
    assert "/dev/nvidia0" in (finding.reason or "") and "--assume-gpu" in (finding.reason or "")


@pytest.mark.parametrize("code", ["CD112", "CD113", "CD114"])
def test_checks_needing_the_gpu_model_do_not_apply_without_any_gpu(h200, code):
    facts = replace(h200, gpus=(), visible=VisibleDevices())
    assert run_check(code, facts).status is Status.NOT_APPLICABLE


def test_cd104_counts_device_nodes_and_names_them(h200):
    facts = replace(h200, gpus=(), visible=replace(h200.visible, cuda_visible_devices="1"))
    finding = run_check("CD104", facts)
    assert finding.status is Status.FAIL
    assert finding.evidence["GPUs present"] == "1"
    assert finding.evidence["GPUs shown by"] == "GPU device nodes: /dev/nvidia0"


def test_cd104_a_gpu_only_on_the_pci_bus_is_not_one_the_process_reaches(h200):
    health = HealthInfo(host=HostHealth(pci_functions=("0000:17:00.0", "0000:18:00.0")))
    facts = replace(h200, gpus=(), visible=VisibleDevices(cuda_visible_devices="1"), health=health)
    finding = run_check("CD104", facts)
    assert finding.status is Status.NOT_APPLICABLE and "PCI bus" in (finding.reason or "")


def test_gpu_evidence_orders_and_counts_its_sources(h200):
    health = HealthInfo(host=HostHealth(pci_functions=("0000:17:00.0", "0000:18:00.0")))
    evidence = gpu_evidence(h200.gpus, h200.visible, health)
    assert evidence is not None and evidence.models_known and evidence.count == 1
    assert [what for what, _shown in evidence.shown_by] == ["GPU", "GPU device nodes", "NVIDIA GPUs on the PCI bus"]
    nodes = VisibleDevices(device_nodes=("/dev/nvidiactl", "/dev/nvidia1", "/dev/nvidia0", "/dev/nvidia-uvm"))
    only_nodes = gpu_evidence((), nodes, None)
    assert only_nodes is not None and only_nodes.count == 2 and not only_nodes.models_known
    assert only_nodes.strongest() == "GPU device nodes: /dev/nvidia0, /dev/nvidia1"
    assert gpu_evidence((), VisibleDevices(device_nodes=("/dev/nvidiactl", "/dev/dxg")), None) is None


def test_the_report_says_a_gpu_is_present_when_only_device_nodes_show_it(h200):
    from cudadoctor.report.summary import Mark, categories

    gpus = next(c for c in categories(_nvml_silent(h200)) if c.key == "gpus")
    assert gpus.headline == "present, model unknown (GPU device nodes: /dev/nvidia0)" and gpus.mark is Mark.UNKNOWN
    none = next(c for c in categories(replace(h200, gpus=(), visible=VisibleDevices())) if c.key == "gpus")
    assert none.headline == "none found" and none.mark is Mark.ABSENT
