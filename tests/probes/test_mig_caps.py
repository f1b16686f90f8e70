"""The MIG capability files read for CD130/CD131 when NVML does not answer: under --root, or a container whose
NVML fails (issue #28, 5). Layouts: MIG user guide, "Device Nodes and Capabilities"
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/device-nodes-and-capabilities.html)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import Facts, VisibleDevices
from cudadoctor.probes.gpus import probe_gpus
from cudadoctor.probes.mig_caps import parse_mig_minors
from cudadoctor.report.summary import categories
from cudadoctor.testing import run_check
from tests.conftest import fixture_text, make_ctx

ROOT = "/img"
BDF = "0000:17:00.0"
INFORMATION = (
    "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 41\nBus Type: \t PCIe\nBus Location: \t 0000:17:00.0\n"
    "Device Minor: \t 0\nGPU Excluded:\t No\n"
)
#: The minors table as the driver writes it for a GPU with minor 0 (excerpt; one line per possible capability).
MIG_MINORS = (
    "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
)
# Read at collection time, before any fake file system is switched on.
SNAPSHOT = fixture_text("h200-device", "snapshot.json")


def _machine(fs, *, instances: dict[int, tuple[int, ...]] | None = None, nodes: tuple[int, ...] = ()) -> None:
    """An A100 under ROOT: /proc/driver/nvidia/gpus, and the capability files of ``instances`` (GI -> CIs), or
    (``instances`` None) no /proc/driver/nvidia/capabilities with ``nodes`` /dev/nvidia-caps/nvidia-cap<N>."""
    fs.create_file(f"{ROOT}/proc/driver/nvidia/gpus/{BDF}/information", contents=INFORMATION)
    fs.create_file(f"{ROOT}/proc/driver/nvidia-caps/mig-minors", contents=MIG_MINORS)
    if instances is not None:
        fs.create_dir(f"{ROOT}/proc/driver/nvidia/capabilities/gpu0/mig")
        for gi, cis in instances.items():
            fs.create_file(f"{ROOT}/proc/driver/nvidia/capabilities/gpu0/mig/gi{gi}/access", contents="")
            for ci in cis:
                fs.create_file(f"{ROOT}/proc/driver/nvidia/capabilities/gpu0/mig/gi{gi}/ci{ci}/access", contents="")
    for minor in nodes:
        fs.create_file(f"{ROOT}/dev/nvidia-caps/nvidia-cap{minor}", contents="")


def _facts(fs) -> Facts:
    gpus = probe_gpus(make_ctx(root=ROOT))
    return replace(facts_from_json(SNAPSHOT), gpus=gpus, visible=VisibleDevices(), mode=f"root:{ROOT}")


def test_parse_mig_minors_maps_minor_to_capability():
    assert parse_mig_minors(MIG_MINORS + "garbage\n") == {
        1: "config", 2: "monitor", 3: "gpu0/gi0/access", 4: "gpu0/gi0/ci0/access", 12: "gpu0/gi1/access",
        13: "gpu0/gi1/ci0/access",
    }  # fmt: skip


def test_two_compute_instances_under_root_are_two_mig_devices_for_cd130(fs):
    _machine(fs, instances={1: (0,), 2: (0,)})
    facts = _facts(fs)
    (gpu,) = facts.gpus
    assert (gpu.mig_mode, gpu.mig_devices) == ("Enabled", 2)
    assert gpu.mig_source is not None and "capabilities/gpu0/mig" in gpu.mig_source.where
    finding = run_check("CD130", facts)
    assert finding.status is Status.FAIL
    assert "capabilities/gpu0/mig" in finding.evidence["GPUs in MIG mode"]
    assert run_check("CD131", facts).status is Status.OK
    (line,) = [x.text for c in categories(facts) if c.key == "gpus" for x in c.lines if x.text.startswith("GPU 0")]
    assert "MIG Enabled, 2 MIG device(s) (/proc/driver/nvidia/capabilities/gpu0/mig/gi*/ci*/access)" in line


def test_a_gpu_instance_without_a_compute_instance_fails_cd131(fs):
    _machine(fs, instances={1: ()})
    facts = _facts(fs)
    assert (facts.gpus[0].mig_mode, facts.gpus[0].mig_devices) == ("Enabled", 0)
    assert run_check("CD131", facts).status is Status.FAIL
    assert run_check("CD130", facts).status is Status.OK


def test_no_gpu_instance_does_not_tell_the_mig_mode(fs):
    _machine(fs, instances={})
    facts = _facts(fs)
    assert (facts.gpus[0].mig_mode, facts.gpus[0].mig_devices) == (None, None)
    assert run_check("CD130", facts).status is Status.NOT_APPLICABLE


@pytest.mark.parametrize(("nodes", "devices"), [((13,), 1), ((4, 13), 2), ((1, 2), None)])
def test_a_container_counts_the_mig_device_nodes_it_was_given(fs, nodes, devices):
    """/proc/driver/nvidia hidden (the toolkit's tmpfs): the injected nvidia-cap<N> named by mig-minors."""
    _machine(fs, nodes=nodes)
    facts = _facts(fs)
    assert facts.gpus[0].mig_devices == devices
    status = {1: Status.OK, 2: Status.FAIL, None: Status.NOT_APPLICABLE}[devices]
    assert run_check("CD130", facts).status is status
