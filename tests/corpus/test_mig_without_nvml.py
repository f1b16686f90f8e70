"""The real MIG cases replayed with NVML not answering (a container whose NVML fails, or ``--root``): the GPUs come
from /proc/driver/nvidia/gpus and their MIG devices from the driver's MIG capability files, so CD130 is still
diagnosed where the thread's MIG devices exist; a GPU in MIG mode with none created shows no capability, so CD131
cannot be told from files and stays not applicable, never a false ok (issue #28, 5)."""

from __future__ import annotations

import os

import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.probes.collect import collect_facts
from cudadoctor.probes.native import NvmlResult
from tests.conftest import FakeNative, make_ctx
from tests.corpus.builder import CORPUS, build, load_case
from tests.corpus.replay import replay  # noqa: F401 - imports every probe module outside the fake file system

MATRIX = CompatMatrix()

#: Each MIG case of the corpus: the code it expects, and what replaying it without NVML must give.
CASES = {
    "pytorch-102715-a100-mig-device-count-1": ("CD130", Status.FAIL),  # a host: the capability files
    "pytorch-130181-2xa100-mig-assert": ("CD130", Status.FAIL),
    "pytorch-131650-mig-no-visible-devices-set": ("CD130", Status.FAIL),
    "mlcommons-training-442-mig-set-device": ("CD130", Status.FAIL),  # a container: the injected cap nodes
    "megalodon-275-a100-mig-no-device": ("CD131", Status.NOT_APPLICABLE),  # no instance: nothing in the files
}


@pytest.mark.parametrize("case_id", list(CASES))
def test_mig_case_without_nvml(case_id):
    code, status = CASES[case_id]
    case = load_case(os.path.join(CORPUS, "cases", case_id, "case.toml"))
    assert any(e["code"] == code for e in case["expect"])
    machine = build(case)
    native = FakeNative(NvmlResult(error="NVML did not answer"), machine.native.libcuda_result)
    MATRIX.gpu_models  # noqa: B018 - the GPU table is read before the fake file system hides compat/
    with Patcher() as patcher:
        assert patcher.fs is not None
        machine.write("/")
        ctx = make_ctx(env=machine.env, runner=machine.runner, native=native, python=machine.python)
        facts = collect_facts(ctx)
    assert facts.gpus and all(g.source.where.startswith("/proc/driver/nvidia/gpus/") for g in facts.gpus)
    (finding,) = [f for f in run_checks(facts, MATRIX) if f.code == code]
    assert finding.status is status, finding
    if status is Status.FAIL:
        assert finding.remediation is not None and finding.remediation.commands
        assert (
            "nvidia-cap" in finding.evidence["GPUs in MIG mode"]
            or "capabilities" in finding.evidence["GPUs in MIG mode"]
        )
